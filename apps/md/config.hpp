// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-md configuration: LAMMPS's bench/in.lj as flags and INI keys, and the
// check that runs before anything is computed or written.
//
//   lattice fcc 0.8442; region box block 0 20 0 20 0 20    --cells 20 --density 0.8442
//   velocity all create 1.44 87287                          --temperature 1.44 --seed 87287
//   pair_style lj/cut 2.5                                   --cutoff 2.5
//   neighbor 0.3 bin; neigh_modify every 20 check no        --skin 0.3 --neigh-every 20 --neigh-check no
//   fix nve; timestep 0.005; run 100                        --dt 0.005 --steps 100
//   timer sync                                              --timer-sync

#include <domex/comm/comm.hpp>

#include <cstdint>
#include <string>

namespace domex::md {

struct Config {
  // -- the system (LAMMPS in.lj) ---------------------------------------------
  long cells = 20;            ///< fcc unit cells per axis of the periodic cube (20: 32,000 atoms)
  double density = 0.8442;    ///< reduced number density of the fcc lattice
  double temperature = 1.44;  ///< initial temperature (uniform velocities, no net momentum)
  std::uint64_t seed = 87287; ///< of the initial velocities (a hash of seed and atom id: the same at any np)
  double cutoff = 2.5;        ///< LJ cutoff (epsilon = sigma = mass = 1)
  double skin = 0.3;          ///< Verlet skin of the ghosts and neighbour lists
  double dt = 0.005;          ///< time step (LJ units)
  long steps = 100;           ///< the run ends at step N, counted from step 0, also after --restart
  long neigh_every = 20;      ///< neighbour lists rebuilt every N steps (neigh_modify every)
  std::string neigh_check = "no";  ///< "yes": rebuild only when a particle moved > skin / 2 (one allreduce)
  long sort_every = 1000;     ///< spatial sort of the owned atoms every N steps at a rebuild (0: never; atom_modify sort)
  // -- how ------------------------------------------------------------------
  std::string overlap = "off";  ///< "on": owned pairs while the ghosts' positions and forces travel
  std::string boundary_last = "no";  ///< "yes": the atoms within the ghost cutoff of the box's faces kept last
  bool timer_sync = false;     ///< a barrier before each timed phase (LAMMPS's timer sync: waits go to Sync)
  bool bound = false;          ///< also time the memcpy + MPI bound of update and reverse inside the loop
  // -- output ----------------------------------------------------------------
  long thermo = 0;             ///< thermo line every N steps (0: the first and the last, as LAMMPS)
  std::string output = "results/md";  ///< output folder (md.json, checkpoints; empty: write nothing)
  long checkpoint_every = 0;   ///< checkpoint every N steps and at the end (0: none)
  std::string restart;         ///< checkpoint to go on from
  std::string write_data;      ///< write the initial state as a LAMMPS data file (read_data) here
};

/// Checks `config` for a run on `comm`; throws domex::Error naming the first
/// bad value ("domex-md: --cells 1: ..."). Writes nothing. Collective.
void validate(const Config& config, const Comm& comm);

}  // namespace domex::md

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-mps configuration: every command-line / config-file value, and the
// check that runs before anything is computed or written.

#include <domex/comm/comm.hpp>
#include <string>

namespace domex::mps {

/// The 2-D dam break of Martin & Moyce (1952) as Koshizuka & Oka (1996)
/// simulated it: a water column of width a and height 2a against the back
/// wall of a tank 4a long, released at t = 0. SI units.
struct Config {
  // -- run -------------------------------------------------------------------
  double width = 0.2;     ///< column width a (m); height 2a
  long resolution = 20;   ///< particles across a: l0 = a / resolution
  double end_time = 3.0;  ///< run until T = t sqrt(2 g / a) reaches this
  long steps = 0;         ///< if > 0: stop after this many steps instead (tests, timing)
  int dimension = 2;      ///< 2: particles in the z = 0 plane; 3: a slab of `layers` planes, periodic in z
  long layers = 10;       ///< 3-D: lattice planes in z (the periodic depth is layers l0)
  std::string decomposition = "bucket";     ///< "bucket" (domex::BucketDecomposition) or "multisection"
  std::string count_exchange = "alltoall";  ///< "alltoall" | "put" | "automatic"
  std::string output = "results/mps";       ///< output folder; empty: write nothing
  long image_every = 0;                     ///< PNG of the particles every N steps (0: only at the end)
  long snapshot_every = 0;                  ///< particle snapshot every N steps and at the end; 0: none
  std::string snapshot_format = "vtk";      ///< "vtk" (legacy VTK) | "hdf5" (parallel HDF5 + XDMF)
  long checkpoint_every = 0;                ///< checkpoint every N steps and at the end; 0: none
  std::string restart;                      ///< checkpoint to restart from ("": start at step 0)
  // -- physics ---------------------------------------------------------------
  double gravity = 9.81;    ///< m/s^2, along -y
  double density = 1000;    ///< kg/m^3
  double viscosity = 1e-6;  ///< kinematic, m^2/s
  // -- MPS numerics (Koshizuka & Oka 1996; defaults of Koshizuka's sample code) --
  double cfl = 0.125;                ///< dt = cfl l0 / sqrt(2 g 2a) (the free-fall speed from the column's top)
  double re_density = 2.1;           ///< r_e of number density and gradient, in l0
  double re_laplacian = 3.1;         ///< r_e of the Laplacian (viscosity, Poisson equation), in l0
  double beta = 0.97;                ///< free surface: n* < beta n0
  double relaxation = 0.2;           ///< source term gamma / dt^2 (n* - n0) / n0
  double compressibility = 0.45e-9;  ///< 1/Pa: the diagonal term of the Poisson equation
  double collision_distance = 0.5;   ///< in l0
  double restitution = 0.2;          ///< of the collision model
  double skin = 1.0;                 ///< Verlet skin of the ghost and neighbour lists, in l0
  double cg_tolerance = 1e-9;        ///< ||r|| <= tol ||b||
  std::string cg_preconditioner = "mic";  ///< "mic" (modified incomplete Cholesky per rank) | "jacobi"
  long cg_max_iterations = 20000;
};

/// Checks `config` for a run on `comm`; throws domex::Error naming the first
/// bad value ("domex-mps: --resolution 0: must be >= 4"). Writes nothing.
/// Collective (every rank reaches the same verdict).
void validate(const Config& config, const Comm& comm);

}  // namespace domex::mps

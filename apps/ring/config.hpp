// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-ring configuration: every command-line / INI value, the legacy
// switches, and the check that runs before anything is computed or written.

#include <domex/comm/comm.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace domex::ring {

/// The four slow paths of the seed study (FDPS on Fugaku before its fixes);
/// each one can be switched back on to measure what its fix is worth.
struct Legacy {
  bool alltoall_exchange = false;  ///< migration by MPI_Alltoall(v) over every rank, not the neighbours
  bool alltoallv_let = false;      ///< LET by MPI_Alltoall + MPI_Alltoallv, not point to point
  bool merge_sort = false;         ///< the parallel merge sort in the tree build, not the radix sort
  bool bcast_decompose = false;    ///< cuts computed on rank 0 and broadcast, not on every rank
  [[nodiscard]] bool any() const noexcept { return alltoall_exchange || alltoallv_let || merge_sort || bcast_decompose; }
  friend bool operator==(const Legacy&, const Legacy&) = default;
};

/// Parses "alltoall-exchange,alltoallv-let,merge-sort,bcast-decompose" (any
/// subset, "all", "none" or ""); throws domex::Error naming a bad item.
[[nodiscard]] Legacy parse_legacy(const std::string& list);
/// The comma-separated names of the switches that are on ("none" if none).
[[nodiscard]] std::string to_string(const Legacy& legacy);

/// Units: G = 1, central mass 1, ring radius 1 by default, so an orbit at
/// r = 1 takes 2 pi time units.
struct Config {
  // -- run ---------------------------------------------------------------------
  std::uint64_t particles = 100000;
  long steps = 64;
  std::uint64_t seed = 1;
  std::string output = "results/ring";  ///< folder; empty: write nothing
  long snapshot_every = 0;              ///< snapshot every N steps and at the end; 0: none
  std::string snapshot_format = "vtk";  ///< "vtk" (legacy VTK, no dependency) or "hdf5" (+ XDMF sidecar)
  long image_every = 64;                ///< top-down density image every N steps and at the end; 0: none
  long checkpoint_every = 0;            ///< checkpoint every N steps (a multiple of rebalance-every); 0: none
  std::string restart;                  ///< checkpoint folder to continue from; empty: a new run
  long energy_every = 0;                ///< energy check every N steps; 0: with the progress lines; -1: start and end only
  std::string legacy = "none";          ///< slow paths to switch on (see Legacy)
  bool compare_legacy = false;          ///< run all-legacy, each fix alone and all fixes; print the seed's table
  // -- ring --------------------------------------------------------------------
  double ring_radius = 1.0;
  double ring_width = 0.1;
  double ring_mass = 1e-5;   ///< total mass of the ring particles (equal masses)
  double optical_depth = 0.1;  ///< sets the particle radius: N pi r^2 = tau x ring area
  double dispersion = 2e-3;  ///< random velocity dispersion (each component, relative to Keplerian 1)
  double thickness = 0.0;    ///< initial z dispersion; 0: 4 particle radii
  // -- physics -----------------------------------------------------------------
  double dt = 1.0 / 1024;
  double restitution = 0.5;     ///< coefficient of restitution e of the spring-dashpot contacts
  double contact_steps = 32;    ///< contact time T = contact_steps x dt
  double softening = -1;        ///< Plummer softening of self-gravity; < 0: the particle radius
  bool self_gravity = true;
  bool collisions = true;
  // -- tree and decomposition ----------------------------------------------------
  double theta = 0.5;
  int leaf_limit = 16;  // TreeOptions' defaults
  int group_limit = 128;
  bool quadrupole = false;
  int reuse = 1;                ///< interaction lists built every `reuse` steps
  std::string let = "p2p_fast";  ///< alltoallv | p2p_exact | p2p_fast | sparse
  int threads = 0;               ///< OpenMP threads per rank; 0: cores / ranks on the node
  long rebalance_every = 4;
  std::array<int, 3> divisions{0, 0, 1};  ///< sections in r, phi, z; 0: chosen (phi first)
};

/// Derived quantities of a Config (the same on every rank).
struct Derived {
  double particle_radius = 0, particle_mass = 0, softening = 0, thickness = 0;
  double eta = 0, kappa = 0;            ///< contact damping and stiffness (per reduced mass)
  double search_radius = 0;             ///< contact distance + what particles may close in between list builds
  double domain_radius = 0, domain_half_height = 0;
  std::array<int, 3> divisions{1, 1, 1};
  Legacy legacy;
};

/// Checks `config` for a run on `comm` and derives the rest; throws
/// domex::Error naming the first bad value ("--dt -1: must be positive").
/// Writes nothing. Every rank reaches the same verdict (same arguments).
[[nodiscard]] Derived validate(const Config& config, const Comm& comm);

}  // namespace domex::ring

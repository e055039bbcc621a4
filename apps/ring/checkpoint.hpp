// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-ring checkpoint/restart on any number of ranks.
//
// A checkpoint is a folder: meta.txt (step, ranks, particles, divisions, the
// state's checksum and the physics as `--flag value` lines, doubles in hex
// so they compare bitwise), cuts.bin (the decomposition's cuts) and one
// rank_RRRRRR.bin per writing rank (count, positions, velocities,
// accelerations, ids, the dissipated energy; native byte order). Written
// under `folder`.part and renamed when complete (Ring::write_checkpoint).
//
// Restart on P ranks from a checkpoint of W ranks: rank r reads the files
// [r W / P, (r + 1) W / P), then the decomposition places the particles.
// With P = W and the same divisions each rank reads its own file and the
// saved cuts are restored: the run goes on bitwise as if it had never
// stopped. Otherwise the domains are rebalanced over the particles read: the
// same physics, forces to the tree's accuracy (as a run on another np).

#include <array>
#include <cstdint>
#include <domex/comm/comm.hpp>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"
#include "ring.hpp"

namespace domex::ring {

/// What meta.txt says.
struct CheckpointInfo {
  long step = -1;
  int ranks = 0;
  std::uint64_t particles = 0;
  std::array<int, 3> divisions{0, 0, 0};
  std::uint64_t checksum = 0;
  std::vector<std::pair<std::string, double>> physics;  ///< as physics_of()
};

/// A checkpoint as read by this rank: its share of the particles.
struct Checkpoint {
  CheckpointInfo info;
  Particles particles;
  double dissipated = 0;     ///< this rank's share of the dissipated energy
  std::vector<double> cuts;  ///< the saved cuts if they apply (same np and
                             ///< divisions); empty: rebalance
};

/// The values a restart must share with the run that wrote the checkpoint
/// (they change the solution), each named as its flag.
[[nodiscard]] std::vector<std::pair<std::string, double>> physics_of(const Config &config);

/// Collective: meta.txt of the checkpoint folder `config.restart` (rank 0
/// reads it, every rank gets it), checked against `config`: the physics
/// must be equal, and its particle count is taken into config.particles (if
/// `particles_given`, --particles must equal it). Throws domex::Error on
/// every rank naming the file and the value ("domex-ring: --restart
/// F/meta.txt: written with --dt 0.001, this run has --dt 0.002").
[[nodiscard]] CheckpointInfo read_checkpoint_info(const Comm &comm, Config &config, bool particles_given);

/// Collective: this rank's share of the particles of the checkpoint `info`
/// describes (see above). Checks that its step is at most --steps (which
/// counts from step 0), every file's size, the ids, the total count and the
/// checksum; throws domex::Error on every rank naming the
/// file ("domex-ring: --restart F/rank_000001.bin: truncated ...").
[[nodiscard]] Checkpoint read_checkpoint(const Comm &comm, const Config &config, const Derived &derived,
                                         CheckpointInfo info);

}  // namespace domex::ring

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex::TreeForce: long-range (gravity) forces of particles distributed over
// ranks by a Barnes-Hut tree with a Local Essential Tree (LET) exchange, the
// way FDPS does it: local tree -> LET per rank -> exchange -> global tree ->
// group walk with interaction lists -> vectorised kernel.
//
//   domex::TreeForce tree(comm, {.theta = 0.5, .softening = 1.0 / 32});
//   tree.compute(positions, masses, accelerations, profile);   // collective

#include <domex/comm/comm.hpp>
#include <domex/comm/profile.hpp>
#include <domex/exchange/algorithm.hpp>
#include <domex/tree/kernel.hpp>
#include <domex/tree/octree.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

namespace domex {

/// How the LET travels. Every mode gives bitwise-identical accelerations
/// (same LET content, same order); they differ only in who talks to whom.
enum class LetMode {
  alltoallv,  ///< a LET for every other rank, MPI_Alltoall of counts + MPI_Alltoallv (FDPS's default): O(P)
  p2p_exact,  ///< allgathered root moments and boxes; a LET goes only where the root moment fails the
              ///< opening test against the receiver's enclosing Morton cell; point-to-point messages
  p2p_fast,   ///< the same, tested against the receiver's particle bounding box (fewer messages)
  sparse,     ///< p2p_fast's messages sent with domex::exchange (sparse algorithm of TreeOptions)
};

/// "alltoallv", "p2p_exact", "p2p_fast", "sparse".
std::string_view to_string(LetMode mode) noexcept;
/// Inverse of to_string(); throws domex::Error naming the valid names.
LetMode let_mode_from_string(std::string_view name);

struct TreeOptions {
  double theta = 0.5;     ///< opening angle: a cell of size l at distance d from a group is used whole if d > l / theta
  int leaf_limit = 8;     ///< a cell with more items is split (FDPS default 8)
  int group_limit = 64;   ///< targets sharing one interaction list (FDPS default 64)
  bool quadrupole = false;  ///< quadrupole moments of cells, else monopoles
  LetMode let = LetMode::p2p_fast;
  Algorithm sparse_algorithm = Algorithm::automatic;  ///< for LetMode::sparse
  /// Interaction lists are built every `reuse` calls (with the opening test of
  /// that call); the calls between re-use them with updated positions and
  /// masses: the same particles, in the same order, on the same ranks (only
  /// the count is checked; another order gives wrong forces). Each re-use
  /// call still refreshes the moments and re-sends the LET items' values.
  int reuse = 1;
  double softening = 0;  ///< Plummer softening length epsilon
  /// fp32 partial sums over blocks of 64 sources, added in fp64; else fp32 throughout.
  bool fp64_accumulation = false;
  /// OpenMP threads per rank; 0: the cores this rank may use divided by the
  /// ranks on its node (never oversubscribes).
  int threads = 0;
  /// A barrier before each phase, timed as "imbalance", so that waiting for
  /// the slowest rank is never counted in the phase after it.
  bool barrier_phases = true;
  Box root{{0, 0, 0}, {1, 1, 1}};  ///< every position must lie in [lo, hi)
};

/// A particle in an interaction list (an EPJ in FDPS's words).
struct Epj {
  Point position;
  double mass;
};
/// A cell in an interaction list (an SPJ): its moments.
using Spj = Moments;

/// The targets of one group handed to a user kernel (slices of the
/// Morton-sorted local particles).
struct TargetGroup {
  std::span<const Point> positions;
  std::span<const double> masses;
  std::span<const std::size_t> indices;  ///< positions in the caller's arrays
  std::span<Point> accelerations;        ///< add the group's accelerations here
};

/// A user kernel: called once per group (from several threads at once when
/// threads > 1) with the group's particle list and cell list, each in a fixed
/// order that does not depend on the LET mode.
using UserKernel = std::function<void(const TargetGroup&, std::span<const Epj>, std::span<const Spj>)>;

/// What the last compute() did on this rank.
struct TreeStats {
  std::size_t targets = 0, groups = 0;
  std::size_t epj_interactions = 0;  ///< sum over targets of particle-list lengths
  std::size_t spj_interactions = 0;  ///< sum over targets of cell-list lengths
  std::size_t let_items_sent = 0, let_items_received = 0;
  std::size_t let_messages_sent = 0, let_messages_received = 0;
  bool lists_built = false;  ///< false on a call that re-used the lists
  // Parts of "build tree", seconds.
  double keys_s = 0, sort_s = 0, link_s = 0, moments_s = 0;
  // Wall-clock seconds of the walk and of the kernel inside the parallel loop.
  double traverse_s = 0, kernel_s = 0;
  [[nodiscard]] double interactions_per_particle() const noexcept {
    return targets ? static_cast<double>(epj_interactions + spj_interactions) / static_cast<double>(targets) : 0.0;
  }
};

/// Tree-code forces of particles already distributed over the ranks of
/// `comm` (decompose them with domex::Multisection and domex::migrate).
/// Holds the trees and lists between calls (for reuse) and its buffers.
class TreeForce {
 public:
  /// Keeps a reference to `comm` (it must outlive this object). Collective
  /// over `comm` when options.threads is 0 (it counts the ranks on this
  /// node). Throws domex::Error for invalid options.
  explicit TreeForce(Comm& comm, TreeOptions options = {});
  ~TreeForce();
  TreeForce(TreeForce&&) noexcept;
  TreeForce& operator=(TreeForce&&) noexcept;

  /// Collective. accelerations[i] = gravitational acceleration (G = 1,
  /// Plummer softening) of particle i, from every particle on every rank.
  /// Records the phases "build tree", "build LET", "exchange LET",
  /// "traverse", "kernel", "other" and "imbalance" in `profile`. Input
  /// checks (sizes, positions outside the root box, a reuse call with a
  /// different particle count) are agreed on by all ranks before any data
  /// moves: every rank throws domex::Error, and the object stays usable.
  void compute(std::span<const Point> positions, std::span<const double> masses, std::span<Point> accelerations,
               Profile& profile);
  /// The same with a user kernel in place of the gravity kernel;
  /// accelerations start at zero and hold what the kernel added.
  void compute(std::span<const Point> positions, std::span<const double> masses, std::span<Point> accelerations,
               const UserKernel& kernel, Profile& profile);

  [[nodiscard]] const TreeStats& stats() const noexcept;
  [[nodiscard]] const TreeOptions& options() const noexcept;
  /// The OpenMP threads this rank uses.
  [[nodiscard]] int threads() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace domex

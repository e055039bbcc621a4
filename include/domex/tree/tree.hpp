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
#include <domex/tree/accuracy.hpp>
#include <domex/tree/kernel.hpp>
#include <domex/tree/octree.hpp>
#include <domex/tree/sort.hpp>

#include <cstddef>
#include <cstdint>
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

/// The length l of a cell in the opening test: a cell is used whole if the
/// distance d from the target group's box to the cell's centre of mass
/// exceeds l / theta. Measured with `domex-bench tree` on 1e5 uniform and
/// Plummer particles (np 1, errors of 2000 targets against a direct sum):
///   - monopoles: `cell` gives the smaller errors per interaction (`particles`
///     at ~the same cost: p99 1.3-1.4x larger);
///   - quadrupoles: `particles` does (~15% fewer interactions for the same
///     median error). Errors a tenth of FDPS's monopole figures at theta 0.5
///     take `particles` at theta 0.28, ~1.4x (uniform) and ~1.5x (Plummer)
///     the interactions of `cell` at theta 0.5 (1.8x and 1.9x when `cell`'s
///     length was the edge as is). There quadrupoles give errors only 3-6x
///     below monopoles': the truncation error falls from ~(b/d)^2 to
///     ~(b/d)^3, with b/d up to ~theta.
enum class Opening {
  cell,       ///< l = cell_edge_factor (1.15, octree.hpp) x the Morton cell's edge, or its farthest corner
              ///< from the centre of mass if farther (FDPS's test, a little stricter, with Barnes's b_max guard)
  particles,  ///< l = b_max, the largest distance from the centre of mass to a particle of the cell
              ///< (PKDGRAV's and Bonsai's test; an upper bound above the leaves): a shorter length
};

/// "cell", "particles".
std::string_view to_string(Opening opening) noexcept;
/// Inverse of to_string(); throws domex::Error naming the valid names.
Opening opening_from_string(std::string_view name);

struct TreeOptions {
  double theta = 0.5;     ///< opening angle: a cell of length l at distance d from a group is used whole if d > l / theta
  Opening opening = Opening::cell;  ///< what l is (see Opening)
  /// A cell with more items is split; up to group_limit targets share one
  /// interaction list. FDPS's defaults are 8 and 64; 16 and 128 give the
  /// fp32 kernel longer runs per list and the walk half the groups, at more
  /// interactions and a slightly smaller error per theta. 1e6 particles,
  /// Xeon, one thread per rank, best of 3 (docs/performance.md): uniform np 1
  /// theta 0.5 897 -> 859 ms; Plummer np 2 theta 0.5 787 -> 709 ms, and at
  /// FDPS's median error 649 -> 557 ms; the ring, np 2, 275 -> 266 ms.
  int leaf_limit = 16;
  int group_limit = 128;
  /// Merge consecutive sibling groups while they hold at most group_limit
  /// targets together. Where a cell's children hold few targets each (a
  /// thin disc or ring, where a cell splits into ~4 children; the outskirts
  /// and the sparser levels of a Plummer sphere), group cells average a third
  /// of group_limit: merged, the walks halve. A 1e6-particle ring, np 1:
  /// traverse 344 -> 149 ms, kernel 370 -> 280 ms, 471 -> 561 interactions
  /// per particle. A 1e6-particle Plummer sphere, np 1, theta 0.5, Zen 3:
  /// step 3616-3692 -> 2914 ms (traverse 1871-1908 -> 1014-1019, kernel
  /// 1561-1584 -> 1700-1703 ms), median error 3.1e-4 -> 2.7e-4; uniform:
  /// 1818-1842 -> 1748-1762 ms. Group boxes stay within the parent cell, so
  /// forces are at least as accurate. false: FDPS's groups (each group a cell).
  bool merge_groups = true;
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
  /// Every source particle within this distance of a target (local or on
  /// another rank) is in the target's particle list, never folded into a
  /// cell or a LET pseudo-particle: a cell is used whole only if it also lies
  /// farther than this from the group's box. Short-range forces (contacts)
  /// are then guaranteed to see all their partners. With reuse > 1 the lists
  /// are those of the building call: add the distance particles may close in
  /// `reuse` steps.
  double search_radius = 0;
  /// How the local particles are sorted by key: the parallel radix sort (`sample`, its earlier name), or
  /// (to reproduce FDPS before its fix) a parallel merge sort.
  SortMethod sort = SortMethod::sample;
  /// fp32 partial sums over blocks of 64 sources, added in fp64; else fp32 throughout.
  bool fp64_accumulation = false;
  /// OpenMP threads per rank; 0: the cores this rank may use divided by the
  /// ranks on its node (never oversubscribes).
  int threads = 0;
  /// A barrier before each phase, timed as "imbalance", so that waiting for
  /// the slowest rank is never counted in the phase after it.
  bool barrier_phases = true;
  Box root{{0, 0, 0}, {1, 1, 1}};  ///< every position must lie in [lo, hi)
  /// > 0: accuracy on request. theta, opening and quadrupole are replaced by
  /// choose_accuracy(target_error, error_measure) (accuracy.hpp): the
  /// cheapest configuration whose calibrated median error, times a safety
  /// margin, is at most this, then checked on the input (check_samples).
  /// TreeForce::options() shows the choice.
  /// Calibrated with the defaults of the other options and softening 1/32
  /// (of a unit-mass set of size ~1); see docs/tree_accuracy.md.
  double target_error = 0;
  ErrorMeasure error_measure = ErrorMeasure::per_particle;  ///< what target_error measures
  /// With target_error > 0, the first gravity compute() (the overload without
  /// a kernel) checks the table's choice on the input itself: it measures the
  /// median error at this many sampled targets against an fp64 direct sum
  /// (sampled_force_error, accuracy.hpp) and moves theta to what this input
  /// allows (the calibrated curve shifted through the measurement, aiming at
  /// target / 1.4), computes again and keeps the larger angle only if its
  /// measured error is within target / 1.25; an input harder than the table's
  /// gets smaller angles (up to three tries), kept once within the target.
  /// That call computes the forces one to four times and pays the direct sums
  /// (samples x N interactions each); later calls run at the angle kept
  /// (TreeForce::options().theta). If no angle reaches the target the call
  /// throws domex::Error on every rank; the accelerations and options().theta
  /// are then the smallest angle tried's, and the next call checks again
  /// from it. A call without particles on any rank checks nothing (the next
  /// one does). The choice depends on the rank count (the samples), not on
  /// threads or LET mode. 0: the table's choice as it is.
  std::size_t check_samples = 512;
};

/// A particle in an interaction list (an EPJ in FDPS's words).
struct Epj {
  Point position;
  double mass;
  Point velocity;  ///< zero unless compute() was given velocities
};
/// A cell in an interaction list (an SPJ): its moments.
using Spj = Moments;

/// The targets of one group handed to a user kernel (slices of the
/// Morton-sorted local particles).
struct TargetGroup {
  std::span<const Point> positions;
  std::span<const double> masses;
  std::span<const std::size_t> indices;  ///< positions in the caller's arrays
  std::span<const Point> velocities;     ///< empty unless compute() was given velocities
  std::span<Point> accelerations;        ///< add the group's accelerations here
};

/// A user kernel: called once per group (from several threads at once when
/// threads > 1) with the group's particle list and cell list, each in a fixed
/// order that does not depend on the LET mode.
using UserKernel = std::function<void(const TargetGroup&, std::span<const Epj>, std::span<const Spj>)>;

/// The source particles a near-field kernel reads (structure of arrays over
/// all sources of the global tree, local and received, in Morton order):
/// `ranges` holds begin, end pairs of the group's particle list, in the walk's
/// order (not necessarily ascending). Every source
/// particle within TreeOptions::search_radius of a target is in a range.
struct NearSources {
  std::span<const double> x, y, z, masses;
  std::span<const Point> velocities;  ///< empty unless compute() was given velocities
  std::span<const std::uint32_t> ranges;
};

/// A short-range kernel run after the gravity kernel for each group (from
/// several threads at once): it adds to the group's accelerations, which
/// already hold gravity.
using NearKernel = std::function<void(const TargetGroup&, const NearSources&)>;

/// What the last compute() did on this rank.
struct TreeStats {
  std::size_t targets = 0, groups = 0;
  std::size_t epj_interactions = 0;  ///< sum over targets of particle-list lengths
  std::size_t spj_interactions = 0;  ///< sum over targets of cell-list lengths
  std::size_t let_items_sent = 0, let_items_received = 0;
  std::size_t let_messages_sent = 0, let_messages_received = 0;
  bool lists_built = false;  ///< false on a call that re-used the lists
  /// On a call that checked the accuracy (TreeOptions::check_samples): the
  /// median error measured at the angle kept, in TreeOptions::error_measure
  /// (0 if the forces were exact at the samples); else 0.
  double measured_error = 0;
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

  /// Gravity plus a near-field kernel (contacts) that sees every source
  /// particle within options.search_radius of each target with its velocity
  /// (velocities travel in the LET with the particles). velocities may be
  /// empty (the kernel then sees none).
  void compute(std::span<const Point> positions, std::span<const double> masses, std::span<const Point> velocities,
               std::span<Point> accelerations, const NearKernel& near, Profile& profile);
  /// A user kernel in place of gravity, with velocities in its lists.
  void compute(std::span<const Point> positions, std::span<const double> masses, std::span<const Point> velocities,
               std::span<Point> accelerations, const UserKernel& kernel, Profile& profile);

  /// With TreeOptions::target_error and check_samples > 0: the next gravity
  /// compute() checks the accuracy again, starting from the current angle
  /// (after the particles' distribution has changed, say).
  void recalibrate() noexcept;

  [[nodiscard]] const TreeStats& stats() const noexcept;
  [[nodiscard]] const TreeOptions& options() const noexcept;
  /// The OpenMP threads this rank uses.
  [[nodiscard]] int threads() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace domex

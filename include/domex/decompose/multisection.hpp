// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Multisection domain decomposition (as in FDPS): an nx x ny x nz grid of
// domains. x cuts split the whole domain into nx slabs of equal cost, y cuts
// split each slab into ny columns, z cuts each column into nz domains.
//
// Each level is computed within its own communicator (all ranks for x, the
// slab's ny*nz ranks for y, the column's nz ranks for z) after the particle
// coordinates that lie in another slab / column have been routed there along
// a 1-D line communicator (as FDPS 7's multi-step decomposition), so what a
// rank receives per level grows with that level's part count, not with P.

#include <domex/comm/comm.hpp>
#include <domex/decompose/box.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace domex {

namespace detail {
/// A particle's coordinates on the axes still to cut after x, with its
/// integer cost: what Multisection::rebalance routes to the slab / column
/// that holds it.
struct Rest {
  double y, z;
  std::uint64_t cost;
};
}  // namespace detail

/// How Multisection::rebalance finds the cuts of a level.
enum class CutMethod {
  /// Exact weighted quantiles, no samples: histograms of integer cost
  /// reduced over the level's communicator (MPI_Allreduce, exact, hence the
  /// same on every rank), refined inside each cut's bin for a few rounds.
  /// A level's first round resolves smooth input alone where 4096 counts
  /// suffice (two parts at the default tolerance), else has just enough
  /// bins (at least `bins`) that the second does; later rounds O(parts x
  /// bins), capped at 2048 counts (at least 8 bins per cut); one or two
  /// rounds per level on smooth input. Default: at np 2 with 1e5 particles
  /// per rank it rebalanced in about 1 ms with max/mean cost 1.0000, where
  /// `sampled` took about 0.6 ms with 1.006-1.008 at 64 samples per part
  /// (bench/decompose).
  histogram,
  /// FDPS-style multi-step sampling: each level draws samples_per_rank x
  /// (parts of the level) samples, each rank in proportion to its cost, and
  /// gathers them within the level's communicator (column, then y line, then
  /// x line: O(line) counts per step), then sorts them. O(parts x
  /// samples_per_rank) data per level; balance is statistical.
  sampled,
  /// Reference: every rank gathers samples from all ranks (samples_per_rank
  /// each, scaled by the rank's cost) and sorts them per level; O(P x
  /// samples_per_rank) data per rank. All particles (exact) when the ranks
  /// hold no more than the sample budget.
  global,
  /// Legacy (to reproduce FDPS before its fix): `global`'s samples gathered
  /// to rank 0 only, which computes every cut and broadcasts them (MPI_Bcast):
  /// the other ranks wait for rank 0's sort. Same cuts as `global`.
  root_broadcast,
};

struct MultisectionOptions {
  /// Domains per axis, product = P; 0 entries are chosen (MPI_Dims_create,
  /// largest count on x).
  std::array<int, 3> divisions{0, 0, 0};
  /// Periodic axes. In cylindrical geometry phi (axis 1) is always periodic.
  std::array<bool, 3> periodic{false, false, false};
  Geometry geometry = Geometry::cartesian;
  CutMethod method = CutMethod::histogram;
  /// global: samples a rank of mean cost contributes per rebalance (a rank
  /// with twice the cost sends twice as many); sampled: samples per part of
  /// each level (a part of the last level is one rank's domain). Replaces the
  /// former fixed total `samples` (65536).
  std::size_t samples_per_rank = 64;
  /// global, sampled: if non-zero, the total budget (over all ranks, per
  /// level) instead.
  std::size_t total_samples = 0;
  /// histogram: bins per cut and refinement round.
  int bins = 256;
  /// histogram: a cut is final once the cost of its bin is at most this
  /// fraction of a part's cost (the imbalance it can leave), or the bin is
  /// too narrow to split (1e-13 of the extent), or after 12 rounds.
  double tolerance = 1e-3;
  /// 0: new boundaries as measured; s in (0, 1): each boundary moves only
  /// (1 - s) of the way, damping oscillation between steps.
  double smoothing = 0.0;
  std::uint64_t seed = 12345;  ///< sampling seed (printed by tests)
  /// Neighbours are the domains within this distance of a rank's box (in the
  /// geometry's coordinates; 0: those that touch it). A particle that moves
  /// less than this from inside its box lands in a neighbour's domain, so
  /// migration never needs more than the neighbour list.
  double neighbour_margin = 0.0;
};

/// What the last rebalance() cost this rank (for benchmarks; deterministic).
struct RebalanceStats {
  std::size_t bytes_received = 0;  ///< payload received: reductions, routed coordinates, gathered samples, cuts
  std::size_t samples_sorted = 0;  ///< samples this rank sorted (global, sampled)
  int rounds = 0;                  ///< histogram rounds, all levels
};

/// The decomposition every rank holds identically: boundaries computed by all
/// ranks of a level from the same reduced histograms or gathered samples, and
/// shared between slabs and columns with MPI_Allgather (no broadcast from a
/// root). Every rank holds all cuts: nx + 1 + nx (ny + 1) + nx ny (nz + 1)
/// doubles, about 8 P bytes (0.8 MB at P = 10^5).
///
/// Errors: a collective call (constructor, rebalance) agrees on validity
/// before it communicates, so bad input on one rank (NaN or infinite
/// position, a position outside a non-periodic axis, a negative, NaN or
/// infinite weight, inconsistent options) throws domex::Error on every rank
/// naming the offending rank and value. rebalance gives the strong guarantee:
/// when it throws, the cuts, neighbours and stats are those from before the
/// call on every rank.
class Multisection {
 public:
  /// Collective. Starts with equal-volume domains of `domain` (in the
  /// geometry's coordinates: (r, phi, z) for cylindrical, phi in [0, 2 pi)).
  /// Every rank must pass the same domain and options (checked).
  Multisection(const Comm& comm, Box domain, MultisectionOptions options = {});

  /// Collective: new boundaries from this rank's particles at `positions`
  /// (Cartesian x, y, z always; converted for cylindrical) with optional cost
  /// `weights` per particle (empty, or all zero on every rank: cost 1 each).
  /// Weights must be finite and >= 0; any finite values work (they are scaled
  /// by the global maximum, so sums never overflow). Strong guarantee.
  void rebalance(std::span<const Point> positions, std::span<const double> weights = {});
  /// The same, reading each position from the user's own particles:
  /// `rebalance(particles, &Particle::position)` or any callable returning a
  /// Point. Same results as passing the positions.
  template <class Particle, PositionOf<Particle> Projection>
  void rebalance(std::span<const Particle> particles, const Projection& position,
                 std::span<const double> weights = {}) {
    struct Positions;
    auto& positions = detail::scratch<std::vector<Point>, Positions>();
    gather_positions(particles, position, positions);
    rebalance(std::span<const Point>(positions), weights);
  }

  /// The rank owning a position (Cartesian x, y, z), O(log n) per axis.
  /// Periodic axes wrap; throws domex::Error for NaN, or outside the domain
  /// on a non-periodic axis (naming the position).
  [[nodiscard]] int owner(const Point& position) const;
  /// Same, without the checks: -1 if NaN or outside a non-periodic axis.
  [[nodiscard]] int try_owner(const Point& position) const noexcept;
  /// try_owner of every position into `owners` (same size). Fast path: a
  /// position inside this rank's own box costs one box test; the owner
  /// search runs only for the others.
  void owners(std::span<const Point> positions, std::span<int> owners) const noexcept;

  /// Box of a rank's domain in the geometry's coordinates.
  [[nodiscard]] Box box(int rank) const;
  /// Ranks whose domains touch or overlap `rank`'s (within neighbour_margin,
  /// periodic wrap included), ascending, without `rank` itself.
  [[nodiscard]] const std::vector<int>& neighbours() const noexcept { return neighbours_; }
  /// Same for any rank, from the cut structure: binary searches per slab and
  /// column, O(neighbours x log n), no scan of all P boxes.
  [[nodiscard]] std::vector<int> neighbours_of(int rank) const;
  [[nodiscard]] std::array<int, 3> divisions() const noexcept { return divisions_; }
  [[nodiscard]] const Box& domain() const noexcept { return domain_; }
  [[nodiscard]] Geometry geometry() const noexcept { return options_.geometry; }
  [[nodiscard]] const MultisectionOptions& options() const noexcept { return options_; }
  /// Coordinates that the decomposition cuts for a Cartesian position.
  [[nodiscard]] Point coordinates(const Point& position) const noexcept;
  /// Wraps periodic axes into the domain.
  [[nodiscard]] Point wrap(const Point& coordinates) const noexcept;
  /// All cuts, x then the slabs' y then the columns' z (identical on every rank).
  [[nodiscard]] std::vector<double> cuts() const;
  /// Collective: sets the cuts saved from cuts() (a checkpoint) of a
  /// decomposition with the same domain and divisions. Every rank must pass
  /// the same values, spanning the domain and ascending on each axis
  /// (checked: domex::Error on every rank, the object unchanged).
  void restore(std::span<const double> cuts);
  [[nodiscard]] const RebalanceStats& stats() const noexcept { return stats_; }

 private:
  struct Cuts {
    // x cuts: nx+1; y cuts per x slab: nx * (ny+1); z cuts per column: nx*ny*(nz+1).
    std::vector<double> x, y, z;
  };
  struct Lines;  // the level and line sub-communicators
  [[nodiscard]] int owner_in(const Cuts& cuts, const Point& wrapped) const noexcept;
  [[nodiscard]] std::vector<int> neighbours_in(const Cuts& cuts, int rank) const;
  [[nodiscard]] Box box_in(const Cuts& cuts, int rank) const;
  void cuts_global(std::span<const Point> at, std::span<const std::uint64_t> cost, Cuts& cuts,
                   RebalanceStats& stats) const;
  void broadcast_cuts(Cuts& cuts, RebalanceStats& stats) const;
  void cuts_by_level(std::span<const double> x, std::span<const std::uint64_t> cost, std::vector<detail::Rest> rest,
                     Cuts& cuts, RebalanceStats& stats) const;
  const Comm* comm_;
  std::shared_ptr<const Lines> lines_;
  Box domain_;
  MultisectionOptions options_;
  std::array<int, 3> divisions_{};
  Cuts cuts_;
  Box own_box_;
  /// Cylindrical own-box test without atan2/sqrt: r^2 bounds and the unit
  /// vectors of the wedge's edges, with margins so that it accepts only
  /// positions the full conversion puts inside too.
  struct Wedge {
    double r2_lo = 0, r2_hi = -1, lo_x = 1, lo_y = 0, hi_x = 1, hi_y = 0;
    bool full = false, wide = false;  // ny == 1: every phi; wedge wider than pi
  } wedge_;
  void set_own_box(const Box& own) noexcept;
  std::vector<int> neighbours_;
  RebalanceStats stats_;
};

}  // namespace domex

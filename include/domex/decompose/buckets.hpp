// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Bucket (cell) decomposition for MPS/SPH-style codes: space cut into uniform
// buckets; contiguous runs of buckets along a Morton (Z-order) curve go to
// the ranks, balanced by measured cost.

#include <domex/comm/comm.hpp>
#include <domex/decompose/box.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace domex {

struct BucketOptions {
  std::array<int, 3> buckets{16, 16, 16};  ///< buckets per axis
  std::array<bool, 3> periodic{false, false, false};
};

/// Every rank holds the same assignment of buckets to ranks.
///
/// Errors: the constructor and rebalance agree on validity before they
/// communicate: bad input on one rank (a NaN or infinite position, one
/// outside a non-periodic axis, a negative, NaN or infinite weight) throws
/// domex::Error on every rank naming the offending rank and value.
/// rebalance gives the strong guarantee (the previous assignment stays).
class BucketDecomposition {
 public:
  /// Collective. Starts with equal bucket counts per rank along the curve.
  BucketDecomposition(const Comm& comm, Box domain, BucketOptions options = {});

  /// Collective: one MPI_Allreduce of the per-bucket cost (O(buckets) data,
  /// integers, so identical on every rank), then each rank takes a contiguous
  /// run of the curve holding 1/P of the total cost (cost 1 per particle when
  /// `weights` is empty or zero on every rank). Weights must be finite and
  /// >= 0; any finite values work (scaled by the global maximum). Strong
  /// guarantee.
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

  /// Bucket index (x fastest) of a position, or -1 for NaN / outside a
  /// non-periodic axis.
  [[nodiscard]] int bucket_of(const Point& position) const noexcept;
  /// Owner of a position, -1 for NaN / outside a non-periodic axis.
  [[nodiscard]] int try_owner(const Point& position) const noexcept;
  /// Owner of a position; throws domex::Error naming it when invalid.
  [[nodiscard]] int owner(const Point& position) const;
  [[nodiscard]] int owner_of_bucket(int bucket) const { return owner_[static_cast<std::size_t>(bucket)]; }
  /// Ranks owning a bucket next to one of this rank's (26 directions,
  /// periodic wrap), ascending, self excluded.
  [[nodiscard]] const std::vector<int>& neighbours() const noexcept { return neighbours_; }
  /// The buckets of `rank`, in curve order.
  [[nodiscard]] std::vector<int> buckets_of(int rank) const;
  [[nodiscard]] int bucket_count() const noexcept { return static_cast<int>(owner_.size()); }
  /// Box of a bucket (x fastest): [lo + i h, lo + (i + 1) h) per axis.
  [[nodiscard]] Box bucket_box(int bucket) const noexcept;
  [[nodiscard]] const Box& domain() const noexcept { return domain_; }
  [[nodiscard]] const BucketOptions& options() const noexcept { return options_; }

 private:
  void assign(std::span<const std::uint64_t> cost, std::vector<int>& owner, std::vector<int>& neighbours) const;
  const Comm* comm_;
  Box domain_;
  BucketOptions options_;
  std::vector<int> curve_;  ///< bucket indices in Morton order
  std::vector<int> owner_;  ///< rank per bucket
  std::vector<int> neighbours_;
};

}  // namespace domex

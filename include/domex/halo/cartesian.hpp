// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex::CartesianGrid: a structured grid of cells block-distributed over a
// Cartesian grid of ranks (1-D, 2-D or 3-D), periodic per axis.

#include <domex/comm/comm.hpp>

#include <array>
#include <cstddef>
#include <utility>

namespace domex {

/// Shape of the process grid.
struct CartesianOptions {
  /// Ranks per axis; 0 on an axis lets domex choose it. {P, 1, 1} gives a 1-D
  /// (slab) decomposition, {a, b, 1} a 2-D one. The product must equal P.
  std::array<int, 3> dims{0, 0, 0};
  /// Periodic boundary per axis.
  std::array<bool, 3> periodic{false, false, false};
};

/// The global grid `global_cells` split into one box of cells per rank.
/// Cells are block-distributed: along an axis of n cells over d ranks, the
/// first n % d ranks own n / d + 1 cells, the others n / d.
///
///   domex::CartesianGrid grid(comm, {128, 128, 64}, {.periodic = {true, true, false}});
///   auto [nx, ny, nz] = grid.local_cells();
class CartesianGrid {
 public:
  /// Collective over `comm`. Chooses the free dims to minimise the halo
  /// surface of the largest block. Throws domex::Error (on every rank) if the
  /// dims do not multiply to P or an axis has fewer cells than ranks.
  CartesianGrid(const Comm& comm, std::array<std::size_t, 3> global_cells, CartesianOptions options = {});

  /// The Cartesian communicator (rank numbering identical to `comm`'s).
  [[nodiscard]] const Comm& comm() const noexcept { return comm_; }
  [[nodiscard]] std::array<int, 3> dims() const noexcept { return dims_; }
  [[nodiscard]] std::array<int, 3> coords() const noexcept { return coords_; }
  [[nodiscard]] std::array<bool, 3> periodic() const noexcept { return periodic_; }
  [[nodiscard]] std::array<std::size_t, 3> global_cells() const noexcept { return global_; }
  /// Cells owned by this rank per axis.
  [[nodiscard]] std::array<std::size_t, 3> local_cells() const noexcept { return local_; }
  /// Global index of this rank's first owned cell per axis.
  [[nodiscard]] std::array<std::size_t, 3> offset() const noexcept { return offset_; }
  [[nodiscard]] std::size_t owned_cells() const noexcept { return local_[0] * local_[1] * local_[2]; }

  /// Rank at `coords` (wrapped on periodic axes), or -1 outside a
  /// non-periodic axis.
  [[nodiscard]] int rank_at(std::array<int, 3> coords) const noexcept;
  /// Rank of the neighbour in `direction` (each component -1, 0 or 1), or -1
  /// where a non-periodic boundary has none. May be this rank (periodic axis
  /// with one rank) and the same rank in several directions.
  [[nodiscard]] int neighbour(std::array<int, 3> direction) const noexcept;
  /// Cells [first, first + count) of part `index` of `cells` split in `parts`.
  [[nodiscard]] static std::pair<std::size_t, std::size_t> block(std::size_t cells, int parts, int index) noexcept;

 private:
  Comm comm_;
  std::array<int, 3> dims_{1, 1, 1};
  std::array<int, 3> coords_{0, 0, 0};
  std::array<bool, 3> periodic_{false, false, false};
  std::array<std::size_t, 3> global_{1, 1, 1};
  std::array<std::size_t, 3> local_{1, 1, 1};
  std::array<std::size_t, 3> offset_{0, 0, 0};
};

}  // namespace domex

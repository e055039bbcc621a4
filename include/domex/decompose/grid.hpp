// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// A grid of domains, x slowest and z fastest (a Multisection's ranks, and
// MPI_Cart_create's order), and the equal-volume boxes a Multisection starts
// with, without the Multisection and without communication: for simulators
// of thousands of ranks, where building one costs what it models.

#include <domex/decompose/box.hpp>

#include <array>
#include <cmath>
#include <string_view>

namespace domex {

/// (i, j, k) of `rank` in a grid of `divisions` domains per axis.
[[nodiscard]] constexpr std::array<int, 3> grid_index(int rank, const std::array<int, 3>& divisions) noexcept {
  return {rank / (divisions[1] * divisions[2]), (rank / divisions[2]) % divisions[1], rank % divisions[2]};
}

/// The rank at (i, j, k) in a grid of `divisions` domains per axis.
[[nodiscard]] constexpr int grid_rank(const std::array<int, 3>& index, const std::array<int, 3>& divisions) noexcept {
  return (index[0] * divisions[1] + index[1]) * divisions[2] + index[2];
}

/// The rank at `offset` (i, j, k steps, any sign) from `rank`, wrapped
/// periodically on every axis.
[[nodiscard]] constexpr int grid_offset(int rank, const std::array<int, 3>& offset,
                                        const std::array<int, 3>& divisions) noexcept {
  std::array<int, 3> index = grid_index(rank, divisions);
  for (int a = 0; a < 3; ++a) index[a] = ((index[a] + offset[a]) % divisions[a] + divisions[a]) % divisions[a];
  return grid_rank(index, divisions);
}

/// Cut k of [lo, hi) into n equal pieces: lo at 0, hi at n, else
/// lo + (hi - lo) k / n (the bits a Multisection starts with).
[[nodiscard]] constexpr double equal_cut(double lo, double hi, int k, int n) noexcept {
  return k <= 0 ? lo : k >= n ? hi : lo + (hi - lo) * k / n;
}

/// The divisions a Multisection of `ranks` ranks chooses: MPI_Dims_create,
/// keeping the non-zero entries of `requested`. Local (no communication).
/// Throws domex::Error (naming `call`) for a negative entry, or when they do
/// not multiply to `ranks`.
[[nodiscard]] std::array<int, 3> grid_divisions(int ranks, std::array<int, 3> requested = {0, 0, 0},
                                                std::string_view call = "grid_divisions");

/// Wraps the periodic axes of `c` into [domain.lo, domain.hi) (as a
/// Multisection wraps before it looks up an owner); NaN stays NaN.
[[nodiscard]] inline Point wrap_periodic(const Box& domain, const std::array<bool, 3>& periodic, Point c) noexcept {
  for (int a = 0; a < 3; ++a)
    if (periodic[a] && !(c[a] >= domain.lo[a] && c[a] < domain.hi[a]) && std::isfinite(c[a])) {
      // fmod only for the few outside: it costs tens of ns.
      const double length = domain.extent(a);
      c[a] = domain.lo[a] + std::fmod(c[a] - domain.lo[a], length);
      if (c[a] < domain.lo[a]) c[a] += length;
      if (c[a] >= domain.hi[a]) c[a] = domain.lo[a];
    }
  return c;
}

/// The equal-volume boxes a Multisection of `domain` with these divisions
/// and periodic axes starts with (before any rebalance): box(r) and owner(p)
/// bitwise as Multisection::box and Multisection::try_owner there
/// (tests/decompose/equal_boxes.cpp), in O(1) per call. In the coordinates
/// a decomposition cuts: Cartesian; for a cylindrical one pass
/// Multisection::coordinates() of a position to owner().
class EqualBoxes {
 public:
  /// Divisions >= 1 on every axis (grid_divisions()), a non-empty finite
  /// domain: else domex::Error (local, no communication).
  EqualBoxes(const Box& domain, const std::array<int, 3>& divisions, const std::array<bool, 3>& periodic = {});
  /// The box of `rank` (0 <= rank < the divisions' product).
  [[nodiscard]] Box box(int rank) const noexcept {
    const auto index = grid_index(rank, divisions_);
    Box box;
    for (int a = 0; a < 3; ++a) {
      box.lo[a] = cut(a, index[a]);
      box.hi[a] = cut(a, index[a] + 1);
    }
    return box;
  }
  /// The rank whose box holds `p` (periodic axes wrapped first); -1 for NaN
  /// or outside a non-periodic axis.
  [[nodiscard]] int owner(const Point& p) const noexcept;
  /// Cut k (0 ... divisions[axis]) along `axis`.
  [[nodiscard]] double cut(int axis, int k) const noexcept {
    return equal_cut(domain_.lo[axis], domain_.hi[axis], k, divisions_[axis]);
  }
  /// Domains per axis, and the domain, as given.
  [[nodiscard]] const std::array<int, 3>& divisions() const noexcept { return divisions_; }
  [[nodiscard]] const Box& domain() const noexcept { return domain_; }

 private:
  Box domain_;
  std::array<int, 3> divisions_;
  std::array<bool, 3> periodic_;
};

}  // namespace domex

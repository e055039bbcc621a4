// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Octree over Morton-sorted items: cells are index ranges of the sorted array
// (no pointers), children of a cell are consecutive cells.

#include <domex/decompose/box.hpp>
#include <domex/tree/morton.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace domex {

/// The opening length of a cell in the `cell` test is this many times its
/// edge, or the distance from its centre of mass to its farthest corner if
/// longer. With 1 (FDPS's test) the monopole p99 error of a 1e5 Plummer
/// sphere at theta 0.5 (2000 targets against a direct sum, np 1) ranged over
/// 1.9e-3..2.9e-3 with the seed, around FDPS's 2.5e-3: it is set by the ~20
/// targets nearest the centre, where |a| -> 0. Guards on the centre of
/// mass's offset (Barnes's corner, Bonsai's + |com - centre|) gain less per
/// interaction than a shorter effective theta; 1.15 (theta 0.5 acts as
/// ~0.435 on most cells) brought the p99 to 1.9e-3..2.2e-3 over 4 seeds for
/// +26 % interactions (uniform: +28 %, p99 2.85e-3 -> 2.2e-3).
inline constexpr double cell_edge_factor = 1.15;

/// Squared distance from `p` to the nearest point of `box` (0 inside it):
/// the tree's opening and search-radius tests use it, and so can a near
/// kernel's pre-test of sources against its group's box.
[[nodiscard]] inline double squared_distance(const Box& box, const Point& p) noexcept {
  double d2 = 0;
  for (int a = 0; a < 3; ++a) {
    const double d = std::max({box.lo[a] - p[a], p[a] - box.hi[a], 0.0});
    d2 += d * d;
  }
  return d2;
}

/// Second moment about the centre of mass, S_ab = sum m d_a d_b, stored as
/// xx, yy, zz, xy, xz, yz. Kept with its trace (not as the traceless Q =
/// 3 S - tr(S) I) because the softened expansion needs the trace term:
/// with Plummer softening it is of the same order as the quadrupole.
using Quadrupole = std::array<double, 6>;

/// Multipole moments of a cell, or of a pseudo-particle standing for one.
struct Moments {
  double mass = 0;
  Point centre{0, 0, 0};  ///< centre of mass (the cell's centre when massless)
  Quadrupole quadrupole{0, 0, 0, 0, 0, 0};
};

struct TreeCell {
  std::uint32_t begin = 0;        ///< first item of the sorted array in the cell
  std::uint32_t end = 0;          ///< one past the last item
  std::uint32_t first_child = 0;  ///< children are cells [first_child, first_child + child_count)
  std::uint8_t child_count = 0;   ///< 0: a leaf
  std::uint8_t level = 0;         ///< 0: the root box
  MortonKey key = 0;              ///< first key of the Morton cell
  double size = 0;                ///< longest edge of the Morton cell (the opening test's length)
  Box box;                        ///< the Morton cell
  Moments moments;
  /// Opening length: cell_edge_factor x the cell's edge, or the largest
  /// distance from the centre of mass to a corner of the cell if longer
  /// (Barnes's b_max guard against a centre of mass near the cell's face);
  /// set with the moments.
  double opening = 0;
  /// b_max: the largest distance from the centre of mass to an item of the
  /// cell, plus the item's extent (a LET pseudo-particle stands for a cell
  /// of that b_max). Exact for leaves; above them the largest over children
  /// of |child centre - centre| + child b_max or, if nearer, the farthest
  /// corner of the child's items' box: O(1) per cell, never too small.
  double bmax = 0;
  [[nodiscard]] std::uint32_t count() const noexcept { return end - begin; }
  [[nodiscard]] bool leaf() const noexcept { return child_count == 0; }
};

/// The octree of items sorted by Morton key: a cell is split while it holds
/// more than `leaf_limit` items (and is above level 21). Cells are stored
/// breadth first, so every child comes after its parent and a reverse sweep
/// computes moments bottom up.
class Octree {
 public:
  /// Links the cells over `sorted_keys` (ascending). O(cells log n), a level
  /// at a time on `threads` OpenMP threads; the cells do not depend on them.
  void build(std::span<const MortonKey> sorted_keys, const Box& root, int leaf_limit, int threads = 1);
  /// Moments, opening length and b_max of every cell from the items in key
  /// order: positions, masses and, when not empty, a quadrupole and an
  /// extent (b_max) per item (pseudo-particles of a LET; empty: zero).
  /// Quadrupoles are summed only if `quadrupole` is set. Deterministic: a
  /// cell's moments depend only on its items and their order, never on the
  /// `threads` (OpenMP, a level at a time bottom up).
  void compute_moments(std::span<const Point> positions, std::span<const double> masses,
                       std::span<const Quadrupole> item_quadrupoles, std::span<const double> item_extents,
                       bool quadrupole, int threads = 1);
  /// Cells with at most `group_limit` items whose parent has more (or leaves
  /// with more, when group_limit < leaf_limit), in Morton order; empty cells
  /// are left out.
  [[nodiscard]] std::vector<std::uint32_t> groups(std::size_t group_limit) const;

  [[nodiscard]] const std::vector<TreeCell>& cells() const noexcept { return cells_; }
  [[nodiscard]] const TreeCell& root() const noexcept { return cells_.front(); }
  [[nodiscard]] const Box& root_box() const noexcept { return root_; }

 private:
  Box root_;
  std::vector<TreeCell> cells_;
  std::vector<std::uint32_t> levels_;  // cells of level L: [levels_[L], levels_[L + 1])
  std::vector<std::uint32_t> split_;   // build's scratch: octant ends, child count and first child of a level's cells
  struct Frontier {                    // build's scratch: a level's cells, compact
    std::uint32_t begin, end;
    MortonKey key;
  };
  std::vector<Frontier> frontier_, next_frontier_;
  std::vector<Box> tight_;  // compute_moments' scratch: each cell's items' box, widened by their extents
};

}  // namespace domex

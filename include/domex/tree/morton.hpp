// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Morton (Z-order) keys: 63-bit keys, 21 bits per axis, in a root box.

#include <domex/comm/error.hpp>
#include <domex/decompose/box.hpp>
#include <domex/decompose/morton_bits.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>

namespace domex {

using MortonKey = std::uint64_t;

/// Bits per axis of a key: 3 x 21 = 63 bits, level 21 is the finest cell.
inline constexpr int morton_levels = 21;
inline constexpr std::uint32_t morton_cells_per_axis = 1u << morton_levels;

/// Key of integer cell coordinates (each < 2^21): x in the highest bit of
/// every triple, so octant o at a level is (x << 2 | y << 1 | z).
constexpr MortonKey morton_encode(std::uint32_t ix, std::uint32_t iy, std::uint32_t iz) noexcept {
  return morton_spread(ix) << 2 | morton_spread(iy) << 1 | morton_spread(iz);
}

/// Integer cell coordinates of a key.
constexpr std::array<std::uint32_t, 3> morton_decode(MortonKey key) noexcept {
  return {static_cast<std::uint32_t>(morton_compact(key >> 2)), static_cast<std::uint32_t>(morton_compact(key >> 1)),
          static_cast<std::uint32_t>(morton_compact(key))};
}

/// A scaled coordinate clamped to [0, cells - 1]; NaN gives 0. (Comparisons:
/// GCC calls libm for std::fmin and std::fmax without -ffinite-math-only.)
constexpr double clamped_cell(double scaled) noexcept {
  constexpr double last = static_cast<double>(morton_cells_per_axis - 1);
  return scaled > 0 ? (scaled < last ? scaled : last) : 0.0;
}

/// Key of a position already known to lie in `root` (clamped to the last
/// cell on each axis, so rounding at the upper face cannot overflow).
inline MortonKey morton_key_unchecked(const Point& position, const Box& root) noexcept {
  std::uint32_t cell[3];
  for (int a = 0; a < 3; ++a) {
    const double scaled = (position[a] - root.lo[a]) * (static_cast<double>(morton_cells_per_axis) / root.extent(a));
    cell[a] = static_cast<std::uint32_t>(clamped_cell(scaled));
  }
  return morton_encode(cell[0], cell[1], cell[2]);
}

/// Key of `position` in `root`; throws domex::Error naming the position if it
/// is NaN or outside [lo, hi) on an axis.
inline MortonKey morton_key(const Point& position, const Box& root) {
  if (!root.contains(position))
    fail("morton_key", "position (" + std::to_string(position[0]) + ", " + std::to_string(position[1]) + ", " +
                           std::to_string(position[2]) + ") outside the root box");
  return morton_key_unchecked(position, root);
}

/// The Morton cell of `level` (0: root) that contains `key`: its first key.
constexpr MortonKey morton_cell_of(MortonKey key, int level) noexcept {
  const int shift = 3 * (morton_levels - level);
  return shift >= 64 ? 0 : (key >> shift) << shift;
}

/// The box of the Morton cell at `level` whose first key is `cell`.
inline Box morton_cell_box(MortonKey cell, int level, const Box& root) noexcept {
  const auto index = morton_decode(cell);
  Box box;
  for (int a = 0; a < 3; ++a) {
    const double width = root.extent(a) / static_cast<double>(morton_cells_per_axis);
    const double cell_width = root.extent(a) / static_cast<double>(1u << level);
    box.lo[a] = root.lo[a] + width * index[a];
    box.hi[a] = box.lo[a] + cell_width;
  }
  return box;
}

}  // namespace domex

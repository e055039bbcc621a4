// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The bit interleaving of Morton (Z-order) keys, below the layers that use
// it: the tree's keys (domex/tree/morton.hpp) and the neighbour layer's
// spatial order (domex/neighbor/sort.hpp).

#include <cstdint>

namespace domex {

/// Spreads the low 21 bits of `v` to every third bit (bit i -> bit 3 i).
constexpr std::uint64_t morton_spread(std::uint64_t v) noexcept {
  v &= 0x1fffffull;
  v = (v | v << 32) & 0x1f00000000ffffull;
  v = (v | v << 16) & 0x1f0000ff0000ffull;
  v = (v | v << 8) & 0x100f00f00f00f00full;
  v = (v | v << 4) & 0x10c30c30c30c30c3ull;
  v = (v | v << 2) & 0x1249249249249249ull;
  return v;
}

/// Inverse of morton_spread: every third bit back to the low 21 bits.
constexpr std::uint64_t morton_compact(std::uint64_t v) noexcept {
  v &= 0x1249249249249249ull;
  v = (v ^ (v >> 2)) & 0x10c30c30c30c30c3ull;
  v = (v ^ (v >> 4)) & 0x100f00f00f00f00full;
  v = (v ^ (v >> 8)) & 0x1f0000ff0000ffull;
  v = (v ^ (v >> 16)) & 0x1f00000000ffffull;
  v = (v ^ (v >> 32)) & 0x1fffffull;
  return v;
}

}  // namespace domex

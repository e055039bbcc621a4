// SPDX-License-Identifier: BSD-3-Clause
// The ghost search's first pass (src/ghost/candidates.cpp), for Finder in
// ghost.cpp.
#pragma once

#include <domex/decompose/box.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace domex::ghost_detail {

/// The per-axis tables of a search with at most 64 pieces over the region
/// [lo, hi]: slot of v along axis a = clamp((v - origin[a]) * inverse[a], 0,
/// last[a]), truncated; masks[a] holds one set of pieces per slot.
struct SlotTables {
  double lo[3], hi[3], origin[3], inverse[3], last[3];
  const std::uint64_t* masks[3];
};

/// For each point k (fewer than 2^16): set = masks[0][slot x] &
/// masks[1][slot y] & masks[2][slot z], slots below 4096. Writes the points
/// with a non-empty set, in order, as sets[n] = set and hits[n] = k | x <<
/// 16 | y << 28 | z << 40, and returns how many; both arrays need room for
/// a full vector past the last (16 entries). Clears `inside` when a point
/// lies outside the region or is not finite (its slots are then clamped).
std::size_t candidates(std::span<const Point> points, const SlotTables& tables, std::uint64_t* sets,
                       std::uint64_t* hits, bool& inside);

}  // namespace domex::ghost_detail

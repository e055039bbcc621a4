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

/// The slot of coordinate v: clamp((v - origin) * inverse, 0, last),
/// truncated, without a branch (NaN: slot 0). candidates() computes the same
/// bits in vector lanes.
inline std::size_t slot_of(double v, double origin, double inverse, double last) noexcept {
  double at = (v - origin) * inverse;
  at = at > 0 ? at : 0.0;
  at = at < last ? at : last;
  return static_cast<std::size_t>(static_cast<long>(at));  // (signed: one instruction)
}

/// A hit of candidates(): the point's index in its block (16 bits), then
/// its three slots (12 bits each: slots below 4096).
constexpr int hit_slot_bits = 12;
constexpr int hit_slot_shift(int axis) noexcept { return 16 + hit_slot_bits * axis; }
inline std::size_t hit_point(std::uint64_t hit) noexcept { return static_cast<std::size_t>(hit & 0xffff); }
inline std::size_t hit_slot(std::uint64_t hit, int axis) noexcept {
  return static_cast<std::size_t>((hit >> hit_slot_shift(axis)) & ((std::uint64_t{1} << hit_slot_bits) - 1));
}

/// For each point k (fewer than 2^16): set = masks[0][slot x] &
/// masks[1][slot y] & masks[2][slot z], slots below 4096. Writes the points
/// with a non-empty set, in order, as sets[n] = set and hits[n] (the hit
/// format above), and returns how many; both arrays need room for a full
/// vector past the last (16 entries). Clears `inside` when a point lies
/// outside the region or is not finite (its slots are then clamped).
std::size_t candidates(std::span<const Point> points, const SlotTables& tables, std::uint64_t* sets,
                       std::uint64_t* hits, bool& inside);

}  // namespace domex::ghost_detail

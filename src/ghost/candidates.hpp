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
/// last[a]), truncated; masks[a] holds one set of pieces per slot. Every
/// slot (x, y, z) with interior_lo[a] <= slot <= interior_hi[a] on all
/// three axes has an empty set (the region's inside, farther than the
/// cutoff from every piece; none where interior_lo > interior_hi).
struct SlotTables {
  double lo[3], hi[3], origin[3], inverse[3], last[3];
  const std::uint64_t* masks[3];
  std::int64_t interior_lo[3] = {1, 1, 1}, interior_hi[3] = {0, 0, 0};
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
constexpr std::uint64_t hit_point_mask = 0xffff;
inline std::size_t hit_point(std::uint64_t hit) noexcept { return static_cast<std::size_t>(hit & hit_point_mask); }
inline std::size_t hit_slot(std::uint64_t hit, int axis) noexcept {
  return static_cast<std::size_t>((hit >> hit_slot_shift(axis)) & ((std::uint64_t{1} << hit_slot_bits) - 1));
}

/// Entries the vector code may write past the last of an array: a full
/// vector of 64-bit lanes, up to 1024 bits.
constexpr std::size_t vector_slack = 16;

/// Where candidates() writes the points with a non-empty set: sets[n] =
/// set and hits[n] (the hit format above), with the union of the sets and
/// the sum of their sizes (the (point, piece) pairs to test); x, y, z are
/// exact_tests()'s room for their coordinates. Every array needs room for
/// vector_slack entries past the last.
struct Hits {
  std::uint64_t* sets;
  std::uint64_t* hits;
  double *x, *y, *z;
  std::uint64_t pieces = 0;
  std::size_t pairs = 0;
  std::size_t interior = 0;  ///< points whose vector was skipped as interior (skip_interior only)
};

/// For each point k (fewer than 2^16): set = masks[0][slot x] &
/// masks[1][slot y] & masks[2][slot z], slots below 4096. Writes the points
/// with a non-empty set to `out`, in order, and returns how many. Clears
/// `inside` when a point lies outside the region or is not finite (its
/// slots are then clamped). With skip_interior, a vector of points all in
/// the tables' interior skips the gathers (out.interior counts its points):
/// the same output, faster where points come in cell order, slower (a
/// test per vector that seldom passes) in random order.
std::size_t candidates(std::span<const Point> points, const SlotTables& tables, Hits& out, bool& inside,
                       bool skip_interior);

/// At most 64 boxes, one per (rank, image), as exact_tests() reads them:
/// piece b is the box [lo[.][b], hi[.][b]] seen through the shift
/// shift[.][b]; its copies are coded (index << 5) | code[b], and appended
/// at *copy_end[b] and *position_end[b] (its bucket's ends: pieces of one
/// bucket share them), which exact_tests() moves on by what it keeps. It
/// writes up to vector_slack entries past them.
struct PieceTable {
  alignas(64) double lo[3][64];
  alignas(64) double hi[3][64];
  alignas(64) double shift[3][64];
  std::uint64_t code[64];
  std::uint64_t** copy_end[64];
  Point** position_end[64];
};

/// The exact tests of one block's n hits (candidates()'s output for the
/// points `block`, the particles first, first + 1, ...), piece by piece
/// for every piece b of `pieces_set`, hits in order: hit h is kept for b
/// when its set holds b and its image, its point + shift[b], lies within
/// the cutoff of b's box (squared distance <= cutoff2, summed over
/// x, y, z in that order, as the scalar test); it is appended as the copy
/// ((first + hit_point) << 5) | code[b] and the image (the hits and x, y,
/// z are overwritten: the copies' particle part, the coordinates). Eight,
/// four or two hits per step (AVX-512, AVX2, SSE4), where the scalar loop
/// takes one pair a step: the form for blocks whose hits share their pieces
/// (particles kept in cell order).
void exact_tests(std::span<const Point> block, Hits& in, std::size_t n, std::size_t first,
                 std::uint64_t pieces_set, const PieceTable& pieces, double cutoff2);

}  // namespace domex::ghost_detail

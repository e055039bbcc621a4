// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Sorting particles by Morton key inside a rank.

#include <domex/tree/morton.hpp>

#include <cstdint>
#include <span>

namespace domex {

/// A key and the index of the particle it belongs to. Ordered by key, then
/// index: a total order, so every correct sort gives the same result.
struct KeyIndex {
  MortonKey key;
  std::uint64_t index;
  friend constexpr bool operator<(const KeyIndex& a, const KeyIndex& b) noexcept {
    return a.key < b.key || (a.key == b.key && a.index < b.index);
  }
  friend constexpr bool operator==(const KeyIndex&, const KeyIndex&) = default;
};

/// out[i] = {morton_key_unchecked(positions[i], root), first_index + i} for
/// every i (positions already known to lie in `root`), vectors of positions
/// at a time (Highway, the best instruction set at run time). out is at
/// least as long as positions.
void morton_key_indices(std::span<const Point> positions, const Box& root, std::span<KeyIndex> out,
                        std::uint64_t first_index = 0);

/// Sorts by (key, index): a most-significant-digit radix sort (10 then 8 of
/// the keys' differing bits per level, std::sort below 65 items) whose first
/// level runs over `threads` OpenMP threads: counts and scatter by chunk, then
/// the 1024 buckets sorted by whichever thread is free. (FDPS found a
/// parallel merge sort 20x slower than std::sort.) threads <= 1 or short
/// inputs: the radix sort alone. The result is identical to std::sort's for
/// any thread count. Keys crowded into one top-level bucket (more than
/// 1 / threads of the items) limit the parallel speed-up to that share.
void sort_by_key(std::span<KeyIndex> items, int threads);

/// How TreeForce sorts: `sample` (sort_by_key; named after its earlier
/// sample sort), or `merge`, a parallel
/// top-down merge sort (OpenMP tasks, a std::merge per level) kept to
/// reproduce the slow path FDPS replaced.
enum class SortMethod { sample, merge };

/// The parallel merge sort: the same result as sort_by_key.
void merge_sort_by_key(std::span<KeyIndex> items, int threads);

}  // namespace domex

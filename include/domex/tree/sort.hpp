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

/// Sorts by (key, index) with a parallel sample sort over `threads` OpenMP
/// threads: splitters from an oversampled sorted sample, one counting pass,
/// one scatter into buckets, each bucket radix-sorted by its own thread
/// (most significant digit first, 10 then 8 bits of the differing key bits per
/// level, std::sort below 65 items).
/// (FDPS found a parallel merge sort 20x slower than std::sort; the sample
/// sort beat both.) threads <= 1 or short inputs: the radix sort alone. The result is
/// identical to std::sort's for any thread count.
void sort_by_key(std::span<KeyIndex> items, int threads);

/// How TreeForce sorts: `sample` (sort_by_key), or `merge`, a parallel
/// top-down merge sort (OpenMP tasks, a std::merge per level) kept to
/// reproduce the slow path FDPS replaced.
enum class SortMethod { sample, merge };

/// The parallel merge sort: the same result as sort_by_key.
void merge_sort_by_key(std::span<KeyIndex> items, int threads);

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Internal: the calling thread's part of a range, inside an OpenMP parallel
// region (src/tree/tree.cpp, octree.cpp).

#include <omp.h>

#include <cstddef>

namespace domex::tree_detail {

/// The calling thread's share [first, last) of [begin, end), as
/// schedule(static) splits it: contiguous, in thread order, sizes differing by
/// at most one; `thread` of `threads` is the caller's place in the team.
struct ThreadShare {
  std::size_t thread, threads, first, last;
};

inline ThreadShare thread_share(std::size_t begin, std::size_t end) noexcept {
  const auto thread = static_cast<std::size_t>(omp_get_thread_num());
  const auto threads = static_cast<std::size_t>(omp_get_num_threads());
  const std::size_t n = end - begin;
  return {thread, threads, begin + n * thread / threads, begin + n * (thread + 1) / threads};
}

}  // namespace domex::tree_detail

// SPDX-License-Identifier: BSD-3-Clause
// Spatial order of particles: bins along a Morton curve (bit interleaving
// of the bin coordinates, 21 bits per axis), a stable sort of the keys.
#include <domex/comm/error.hpp>
#include <domex/decompose/morton_bits.hpp>
#include <domex/neighbor/sort.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace domex {

std::vector<std::size_t> spatial_order(std::span<const Point> positions, double bin_size) {
  if (!(bin_size > 0) || !std::isfinite(bin_size))
    fail("spatial_order", fmt::format("bin size {} must be finite and > 0", bin_size));
  Point lo{HUGE_VAL, HUGE_VAL, HUGE_VAL};
  for (std::size_t i = 0; i < positions.size(); ++i)
    for (int a = 0; a < 3; ++a) {
      if (!std::isfinite(positions[i][a]))
        fail("spatial_order", fmt::format("particle {} has a NaN or infinite position ({}, {}, {})", i,
                                          positions[i][0], positions[i][1], positions[i][2]));
      lo[a] = std::min(lo[a], positions[i][a]);
    }
  // Bins beyond 2^21 per axis share the last one (still an order, coarser there).
  constexpr double last = double((1 << 21) - 1);
  std::vector<std::pair<std::uint64_t, std::size_t>> keyed(positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i) {
    std::uint64_t key = 0;
    for (int a = 0; a < 3; ++a)
      key |= morton_spread(static_cast<std::uint64_t>(std::min((positions[i][a] - lo[a]) / bin_size, last))) << a;
    keyed[i] = {key, i};
  }
  std::sort(keyed.begin(), keyed.end());  // (key, index): stable by construction
  std::vector<std::size_t> order(positions.size());
  for (std::size_t k = 0; k < keyed.size(); ++k) order[k] = keyed[k].second;
  return order;
}

namespace detail {

void check_permutation(std::span<const std::size_t> order, std::span<const std::size_t> sizes) {
  for (std::size_t f = 0; f < sizes.size(); ++f)
    if (sizes[f] != order.size())
      fail("permute", fmt::format("field {} has {} entries; the order has {}", f, sizes[f], order.size()));
  std::vector<bool> seen(order.size(), false);
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (order[k] >= order.size() || seen[order[k]])
      fail("permute", fmt::format("order[{}] = {} is out of range or repeated: not a permutation of 0..{}", k,
                                  order[k], order.size() - 1));
    seen[order[k]] = true;
  }
}

void check_partition(std::size_t count, std::span<const std::size_t> sizes) {
  for (std::size_t f = 0; f < sizes.size(); ++f)
    if (sizes[f] != count)
      fail("partition_first", fmt::format("field {} has {} entries; the marks have {}", f, sizes[f], count));
}

}  // namespace detail

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Spatial sort of the owned particles (LAMMPS's `atom_modify sort`): at a
// rebuild, particles close in space become close in memory, so a force loop
// reads its neighbours from few cache lines and a ghost update gathers the
// boundary particles from runs instead of single entries.
//
//   const auto order = domex::spatial_order(x, 0.5 * (cutoff + skin));
//   domex::permute(order, x, v, id);        // every per-particle field alike
//   ghosts.rebuild(domains, x); ...         // then the plan and the lists

#include <domex/decompose/box.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace domex {

/// The order of `positions` by bin: bins of edge `bin_size` (> 0) over their
/// bounding box, visited along a Morton (Z-order) curve, particles of a bin
/// in their present order (stable). Local; O(n log n). Throws domex::Error
/// for a bin size that is not finite and > 0 or a NaN or infinite position.
[[nodiscard]] std::vector<std::size_t> spatial_order(std::span<const Point> positions, double bin_size);

namespace detail {
/// Throws domex::Error (permute) unless `order` is a permutation of 0..n-1
/// and every field has n entries.
void check_permutation(std::span<const std::size_t> order, std::span<const std::size_t> sizes);
/// Throws domex::Error (partition_first) unless every field has `count` entries.
void check_partition(std::size_t count, std::span<const std::size_t> sizes);
}  // namespace detail

/// Reorders every field by `order` (field[k] becomes the old field[order[k]]):
/// the owned particles' arrays after spatial_order(). Local. Throws
/// domex::Error, changing nothing, unless `order` is a permutation of every
/// field's length.
template <class... Fields>
void permute(std::span<const std::size_t> order, std::vector<Fields>&... fields) {
  const std::size_t sizes[] = {fields.size()...};
  detail::check_permutation(order, sizes);
  auto one = [&](auto& field) {
    std::remove_reference_t<decltype(field)> moved(field.size());
    for (std::size_t k = 0; k < order.size(); ++k) moved[k] = field[order[k]];
    field.swap(moved);
  };
  (one(fields), ...);
}

/// Moves the particles marked in `first` (non-zero) before the others, by
/// swapping pairs that are on the wrong side (std::partition's two-pointer
/// sweep): only those move, the others keep their entries, so a partition
/// that is nearly right already costs a pass over `first` and a few swaps.
/// Every field gets the same swaps. Returns the number marked. Local.
/// Throws domex::Error, changing nothing, unless every field has
/// first.size() entries. (domex-md keeps its boundary particles last: what
/// an update gathers and a reverse sum adds into is then one run at the
/// end of the arrays, the last one the force loop and the integration touched.)
template <class... Fields>
std::size_t partition_first(std::span<const std::uint8_t> first, std::vector<Fields>&... fields) {
  const std::size_t sizes[] = {fields.size()...};
  detail::check_partition(first.size(), sizes);
  std::size_t lo = 0, hi = first.size();
  std::vector<std::uint8_t> marks(first.begin(), first.end());
  while (true) {
    while (lo < hi && marks[lo]) ++lo;
    while (lo < hi && !marks[hi - 1]) --hi;
    if (lo + 1 >= hi) break;
    (std::swap(fields[lo], fields[hi - 1]), ...);
    marks[lo] = 1;
    marks[hi - 1] = 0;
  }
  std::size_t count = 0;
  for (const std::uint8_t m : first) count += m != 0;
  return count;
}

}  // namespace domex

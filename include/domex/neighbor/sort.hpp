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

}  // namespace domex

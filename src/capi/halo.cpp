// SPDX-License-Identifier: BSD-3-Clause
// C API: Cartesian halo plans exchanging several fields in one message per
// neighbour, and the reverse sum of ghosts into their owners.
#include "capi.hpp"

#include <array>
#include <span>
#include <type_traits>

using domex::capi::guarded;
using domex::capi::need;

namespace {

/// Runs the exchange of `views`; a bad field on this rank (`problem`) travels
/// to the neighbours through the plan's own empty messages (a view of zero
/// elements), so no extra collective is needed on the valid path.
void exchange_views(domex::HaloPlan& plan, std::span<const domex::HaloPlan::FieldView> views,
                    const std::string& problem) {
  try {
    plan.begin(views);
  } catch (const domex::Error&) {
    if (!problem.empty()) throw domex::capi::ArgumentError(domex::capi::message("domex_halo_exchange", problem));
    throw;
  }
  plan.finish();
}

/// Both exchange entry points: `fields[f]` of element_sizes[f] bytes each, or
/// of sizeof(T) where element_sizes is null (the typed entry point). Invalid
/// arguments on this rank go through the plan's own error path, so that the
/// neighbours learn of them (see exchange_views).
template <class T>
int exchange_fields(const char* call, domex_halo* halo, int field_count, T* const* fields,
                    const size_t* element_sizes) {
  constexpr bool typed = !std::is_void_v<T>;
  return guarded(call, [&] {
    auto& h = need(halo, call, "halo");
    const std::size_t cells = h.plan.cells();
    thread_local std::vector<domex::HaloPlan::FieldView> views;
    views.clear();
    std::string problem;
    if (field_count < 1) problem = "field_count " + std::to_string(field_count) + " is below 1";
    else if (fields == nullptr) problem = "fields is NULL";
    else if (!typed && element_sizes == nullptr) problem = "element_sizes is NULL";
    if (!problem.empty()) {
      views.push_back({nullptr, 1, 0});  // the plan's own error path tells the neighbours
    } else {
      for (int f = 0; f < field_count; ++f) {
        std::size_t size = 0;
        if constexpr (typed) size = sizeof(T);
        else size = element_sizes[f];
        const bool bad = fields[f] == nullptr || size == 0;
        if (bad && problem.empty())
          problem = "field " + std::to_string(f) + (fields[f] == nullptr ? " is NULL" : " has element size 0");
        views.push_back({reinterpret_cast<std::byte*>(fields[f]), bad ? 1 : size, bad ? 0 : cells});
      }
    }
    exchange_views(h.plan, views, problem);
  });
}

/// The reverse sum of `field_count` double fields; invalid arguments on this
/// rank take the plan's own error path, as in exchange_fields.
int reverse_sum_doubles(const char* call, domex_halo* halo, int field_count, double* const* fields) {
  return guarded(call, [&] {
    auto& h = need(halo, call, "halo");
    const std::size_t cells = h.plan.cells();
    thread_local std::vector<domex::HaloPlan::ReverseView> views;
    views.clear();
    std::string problem;
    if (field_count < 1) problem = "field_count " + std::to_string(field_count) + " is below 1";
    else if (fields == nullptr) problem = "fields is NULL";
    if (!problem.empty()) {
      views.push_back(domex::HaloPlan::summing(static_cast<double*>(nullptr), 0));
    } else {
      for (int f = 0; f < field_count; ++f) {
        if (fields[f] == nullptr && problem.empty()) problem = "field " + std::to_string(f) + " is NULL";
        views.push_back(domex::HaloPlan::summing(fields[f], fields[f] == nullptr ? 0 : cells));
      }
    }
    try {
      h.plan.reverse_begin(std::span<const domex::HaloPlan::ReverseView>(views));
    } catch (const domex::Error&) {
      if (!problem.empty()) throw domex::capi::ArgumentError(domex::capi::message(call, problem));
      throw;
    }
    h.plan.reverse_finish();
  });
}

template <class T, class Get>
int copy3(const domex_halo* halo, T out[3], const char* call, Get get) {
  return guarded(call, [&] {
    const auto values = get(need(halo, call, "halo"));
    need(out, call, "out");
    for (int a = 0; a < 3; ++a) out[a] = static_cast<T>(values[a]);
  });
}
}  // namespace

extern "C" {

int domex_halo_create(domex_comm* comm, const size_t global_cells[3], const int dims[3], const int periodic[3],
                      int depth, int neighbours, domex_halo** out) {
  constexpr const char* call = "domex_halo_create";
  return guarded(call, [&] {
    const auto& c = need(comm, call, "comm").comm;
    need(global_cells, call, "global_cells");
    need(out, call, "out");
    domex::CartesianOptions grid_options;
    std::string problem;
    for (int a = 0; a < 3; ++a) {
      grid_options.dims[a] = dims ? dims[a] : 0;
      grid_options.periodic[a] = periodic ? periodic[a] != 0 : false;
      if (grid_options.dims[a] < 0 && problem.empty())
        problem = "dims[" + std::to_string(a) + "] = " + std::to_string(grid_options.dims[a]) + " is negative";
      if (global_cells[a] == 0 && problem.empty()) problem = "global_cells[" + std::to_string(a) + "] is 0";
    }
    if (depth < 1 && problem.empty()) problem = "depth " + std::to_string(depth) + " is below 1";
    if (neighbours != 6 && neighbours != 26 && problem.empty())
      problem = "neighbours " + std::to_string(neighbours) + " is neither 6 nor 26";
    domex::capi::agree_arguments(c, call, problem);
    const domex::HaloOptions halo_options{
        .depth = depth, .stencil = neighbours == 6 ? domex::Stencil::faces : domex::Stencil::full};
    *out = new domex_halo(c, {global_cells[0], global_cells[1], global_cells[2]}, grid_options, halo_options);
  });
}

int domex_halo_free(domex_halo** halo) { return domex::capi::free_handle(halo, "domex_halo_free"); }

int domex_halo_local_cells(const domex_halo* halo, size_t cells[3]) {
  return copy3(halo, cells, "domex_halo_local_cells", [](const domex_halo& h) { return h.grid.local_cells(); });
}
int domex_halo_offset(const domex_halo* halo, size_t offset[3]) {
  return copy3(halo, offset, "domex_halo_offset", [](const domex_halo& h) { return h.grid.offset(); });
}
int domex_halo_extent(const domex_halo* halo, size_t extent[3]) {
  return copy3(halo, extent, "domex_halo_extent", [](const domex_halo& h) { return h.plan.extent(); });
}
int domex_halo_dims(const domex_halo* halo, int dims[3]) {
  return copy3(halo, dims, "domex_halo_dims", [](const domex_halo& h) { return h.grid.dims(); });
}
int domex_halo_coords(const domex_halo* halo, int coords[3]) {
  return copy3(halo, coords, "domex_halo_coords", [](const domex_halo& h) { return h.grid.coords(); });
}

int domex_halo_cells(const domex_halo* halo, size_t* cells) {
  constexpr const char* call = "domex_halo_cells";
  return guarded(call, [&] { need(cells, call, "cells") = need(halo, call, "halo").plan.cells(); });
}

int domex_halo_neighbour(const domex_halo* halo, const int direction[3], int* rank) {
  constexpr const char* call = "domex_halo_neighbour";
  return guarded(call, [&] {
    const auto& h = need(halo, call, "halo");
    need(direction, call, "direction");
    for (int a = 0; a < 3; ++a)
      if (direction[a] < -1 || direction[a] > 1)
        throw domex::capi::ArgumentError(domex::capi::message(
            call, "direction[" + std::to_string(a) + "] = " + std::to_string(direction[a]) + " is not -1, 0 or 1"));
    need(rank, call, "rank") = h.grid.neighbour({direction[0], direction[1], direction[2]});
  });
}

int domex_halo_exchange(domex_halo* halo, int field_count, void* const* fields, const size_t* element_sizes) {
  return exchange_fields("domex_halo_exchange", halo, field_count, fields, element_sizes);
}

int domex_halo_exchange_doubles(domex_halo* halo, int field_count, double* const* fields) {
  return exchange_fields("domex_halo_exchange_doubles", halo, field_count, fields, nullptr);
}

int domex_halo_reverse_sum_doubles(domex_halo* halo, int field_count, double* const* fields) {
  return reverse_sum_doubles("domex_halo_reverse_sum_doubles", halo, field_count, fields);
}

}  // extern "C"

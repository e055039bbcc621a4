// SPDX-License-Identifier: BSD-3-Clause
// C API: bucket decompositions and ghost-particle plans (update of owned
// values into ghosts, periodic shift of positions, reverse sum into owners).
#include "capi.hpp"

#include <domex/decompose/buckets.hpp>
#include <domex/ghost/ghost.hpp>

#include <string>
#include <type_traits>
#include <vector>

struct domex_buckets {
  domex::BucketDecomposition buckets;
  const domex::Comm* comm;  ///< the one it was created on (must outlive it)
};
struct domex_ghost {
  domex::GhostPlan plan;
  const domex::Comm* comm;  ///< the plan's (must outlive it)
  /// The decomposition it was created from (one of the two; must outlive it):
  /// domex_ghost_rebuild uses its current domains.
  const domex_multisection* multisection = nullptr;
  const domex_buckets* buckets = nullptr;
  std::vector<domex::Point> positions;  ///< scratch of domex_ghost_update_positions
};

using domex::capi::guarded;
using domex::capi::need;

namespace {

using View = domex::detail::GhostFieldView;

/// Runs `operation(views)` after one agreement on the arguments: a bad
/// field on one rank (`problem`) is DOMEX_ERR_ARGUMENT on every rank, as
/// domex.h promises, naming that rank. The plan's own checks are local (no
/// second collective): they never fire after this agreement.
template <class Operation>
void run_views(const domex::Comm& comm, const char* call, std::span<const View> views, const std::string& problem,
               Operation&& operation) {
  domex::capi::agree_arguments(comm, call, problem);
  operation(views);
}

/// A view that the plan's check rejects on every rank (never size() entries).
View rejected(const domex::GhostPlan& plan) { return {nullptr, 1, plan.size() + 1}; }

/// The fields of an update or reverse sum as views; `element_sizes` null:
/// doubles. `position_offsets` (may be null): per field, the byte offset of
/// its shifted x, y, z, or -1.
std::string field_views(const domex::GhostPlan& plan, int field_count, void* const* fields,
                        const size_t* element_sizes, const ptrdiff_t* position_offsets, std::vector<View>& views) {
  views.clear();
  std::string problem;
  if (field_count < 1) problem = "field_count " + std::to_string(field_count) + " is below 1";
  else if (fields == nullptr) problem = "fields is NULL";
  if (!problem.empty()) {
    views.push_back(rejected(plan));
    return problem;
  }
  const std::size_t entries = plan.size();
  for (int f = 0; f < field_count; ++f) {
    const std::size_t size = element_sizes ? element_sizes[f] : sizeof(double);
    const std::ptrdiff_t shift_at = position_offsets ? position_offsets[f] : -1;
    std::string bad;
    // The Fortran module passes NULL or element size 0 for an array of another length.
    if (fields[f] == nullptr && entries > 0)
      bad = " is NULL with " + std::to_string(entries) + " entries (from Fortran: an array of another size)";
    else if (size == 0)
      bad = " has element size 0 (from Fortran: an array without " + std::to_string(entries) + " entries)";
    else if (shift_at < -1 || (shift_at >= 0 && static_cast<std::size_t>(shift_at) + 3 * sizeof(double) > size))
      bad = ": position offset " + std::to_string(shift_at) + " does not leave 3 doubles inside its " +
            std::to_string(size) + "-byte element";
    if (!bad.empty()) {
      if (problem.empty()) problem = "field " + std::to_string(f) + bad;
      views.push_back(rejected(plan));
    } else {
      views.push_back({static_cast<std::byte*>(fields[f]), size, entries, shift_at});
    }
  }
  return problem;
}

/// The decomposition behind a plan, for a rebuild.
template <class Build>
void with_decomposition(const domex_ghost& ghost, Build&& build) {
  if (ghost.multisection) build(ghost.multisection->multisection);
  else build(ghost.buckets->buckets);
}

template <class Handle>
int create_plan(const char* call, domex_comm* comm, const Handle* decomposition, size_t count, const double* x,
                const double* y, const double* z, size_t stride, double cutoff, domex_ghost** out) {
  return guarded(call, [&] {
    auto& c = need(comm, call, "comm").comm;
    const auto& d = need(decomposition, call, "decomposition");
    need(out, call, "out");
    thread_local std::vector<domex::Point> positions;
    const std::string problem = domex::capi::gather_positions(count, x, y, z, stride, positions);
    domex::capi::agree_arguments(c, call, problem);
    const domex::GhostOptions options{.cutoff = cutoff};
    if constexpr (std::is_same_v<Handle, domex_multisection>) {
      *out = new domex_ghost{domex::GhostPlan(c, d.multisection, std::span<const domex::Point>(positions), options),
                             &c, &d, nullptr, {}};
    } else {
      *out = new domex_ghost{domex::GhostPlan(c, d.buckets, std::span<const domex::Point>(positions), options),
                             &c, nullptr, &d, {}};
    }
  });
}

}  // namespace

extern "C" {

// ---- bucket decomposition ---------------------------------------------------

int domex_buckets_create(domex_comm* comm, const double lo[3], const double hi[3], const int buckets[3],
                         const int periodic[3], domex_buckets** out) {
  constexpr const char* call = "domex_buckets_create";
  return guarded(call, [&] {
    const auto& c = need(comm, call, "comm").comm;
    need(lo, call, "lo");
    need(hi, call, "hi");
    need(buckets, call, "buckets");
    need(out, call, "out");
    domex::BucketOptions options;
    std::string problem;
    for (int a = 0; a < 3; ++a) {
      options.buckets[a] = buckets[a];
      options.periodic[a] = periodic ? periodic[a] != 0 : false;
      if (buckets[a] < 1 && problem.empty())
        problem = "buckets[" + std::to_string(a) + "] = " + std::to_string(buckets[a]) + " is below 1";
      if (!(lo[a] < hi[a]) && problem.empty())
        problem = "the box is empty or not finite on axis " + std::to_string(a);
    }
    domex::capi::agree_arguments(c, call, problem);
    const domex::Box box{{lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}};
    *out = new domex_buckets{domex::BucketDecomposition(c, box, options), &c};
  });
}

int domex_buckets_free(domex_buckets** buckets) { return domex::capi::free_handle(buckets, "domex_buckets_free"); }

int domex_buckets_rebalance(domex_buckets* buckets, size_t count, const double* x, const double* y, const double* z,
                            size_t stride, const double* weights) {
  constexpr const char* call = "domex_buckets_rebalance";
  return guarded(call, [&] {
    auto& handle = need(buckets, call, "buckets");
    thread_local std::vector<domex::Point> positions;
    const std::string problem = domex::capi::gather_positions(count, x, y, z, stride, positions);
    domex::capi::agree_arguments(*handle.comm, call, problem);
    handle.buckets.rebalance(positions, weights ? std::span<const double>(weights, count) : std::span<const double>{});
  });
}

int domex_buckets_owner(const domex_buckets* buckets, const double position[3], int* rank) {
  constexpr const char* call = "domex_buckets_owner";
  return guarded(call, [&] {
    const auto& b = need(buckets, call, "buckets").buckets;
    need(position, call, "position");
    need(rank, call, "rank") = b.owner({position[0], position[1], position[2]});
  });
}

// ---- ghost particles --------------------------------------------------------

int domex_ghost_create_multisection(domex_comm* comm, const domex_multisection* decomposition, size_t count,
                                    const double* x, const double* y, const double* z, size_t stride, double cutoff,
                                    domex_ghost** out) {
  return create_plan("domex_ghost_create_multisection", comm, decomposition, count, x, y, z, stride, cutoff, out);
}

int domex_ghost_create_buckets(domex_comm* comm, const domex_buckets* decomposition, size_t count, const double* x,
                               const double* y, const double* z, size_t stride, double cutoff, domex_ghost** out) {
  return create_plan("domex_ghost_create_buckets", comm, decomposition, count, x, y, z, stride, cutoff, out);
}

int domex_ghost_free(domex_ghost** ghost) { return domex::capi::free_handle(ghost, "domex_ghost_free"); }

int domex_ghost_rebuild(domex_ghost* ghost, size_t count, const double* x, const double* y, const double* z,
                        size_t stride) {
  constexpr const char* call = "domex_ghost_rebuild";
  return guarded(call, [&] {
    auto& g = need(ghost, call, "ghost");
    thread_local std::vector<domex::Point> positions;
    const std::string problem = domex::capi::gather_positions(count, x, y, z, stride, positions);
    domex::capi::agree_arguments(*g.comm, call, problem);
    with_decomposition(g, [&](const auto& decomposition) {
      g.plan.rebuild(decomposition, std::span<const domex::Point>(positions));
    });
  });
}

int domex_ghost_local_count(const domex_ghost* ghost, size_t* count) {
  constexpr const char* call = "domex_ghost_local_count";
  return guarded(call, [&] { need(count, call, "count") = need(ghost, call, "ghost").plan.local_count(); });
}

int domex_ghost_count(const domex_ghost* ghost, size_t* count) {
  constexpr const char* call = "domex_ghost_count";
  return guarded(call, [&] { need(count, call, "count") = need(ghost, call, "ghost").plan.ghost_count(); });
}

int domex_ghost_size(const domex_ghost* ghost, size_t* entries) {
  constexpr const char* call = "domex_ghost_size";
  return guarded(call, [&] { need(entries, call, "entries") = need(ghost, call, "ghost").plan.size(); });
}

int domex_ghost_positions(const domex_ghost* ghost, const double** positions) {
  constexpr const char* call = "domex_ghost_positions";
  return guarded(call, [&] {
    const auto points = need(ghost, call, "ghost").plan.ghost_positions();
    static_assert(sizeof(domex::Point) == 3 * sizeof(double));
    need(positions, call, "positions") = points.empty() ? nullptr : points.data()->data();
  });
}

int domex_ghost_sources(const domex_ghost* ghost, size_t* count, const int** sources, const size_t** offsets) {
  constexpr const char* call = "domex_ghost_sources";
  return guarded(call, [&] {
    const auto& plan = need(ghost, call, "ghost").plan;
    need(count, call, "count");
    need(sources, call, "sources");
    need(offsets, call, "offsets");
    *count = plan.sources().size();
    *sources = plan.sources().data();
    *offsets = plan.source_offsets().data();
  });
}

int domex_ghost_update(domex_ghost* ghost, int field_count, void* const* fields, const size_t* element_sizes,
                       const ptrdiff_t* position_offsets) {
  constexpr const char* call = "domex_ghost_update";
  return guarded(call, [&] {
    auto& handle = need(ghost, call, "ghost");
    auto& plan = handle.plan;
    thread_local std::vector<View> views;
    std::string problem;
    if (element_sizes == nullptr && field_count >= 1 && fields != nullptr) {
      problem = "element_sizes is NULL";
      views.assign(1, rejected(plan));
    } else {
      problem = field_views(plan, field_count, fields, element_sizes, position_offsets, views);
    }
    run_views(*handle.comm, call, views, problem, [&](std::span<const View> v) {
      plan.begin(v);
      plan.finish();
    });
  });
}

int domex_ghost_update_doubles(domex_ghost* ghost, int field_count, double* const* fields) {
  constexpr const char* call = "domex_ghost_update_doubles";
  return guarded(call, [&] {
    auto& handle = need(ghost, call, "ghost");
    auto& plan = handle.plan;
    thread_local std::vector<View> views;
    const std::string problem =
        field_views(plan, field_count, reinterpret_cast<void* const*>(fields), nullptr, nullptr, views);
    run_views(*handle.comm, call, views, problem, [&](std::span<const View> v) {
      plan.begin(v);
      plan.finish();
    });
  });
}

int domex_ghost_update_positions(domex_ghost* ghost, double* x, double* y, double* z, size_t stride) {
  constexpr const char* call = "domex_ghost_update_positions";
  return guarded(call, [&] {
    auto& g = need(ghost, call, "ghost");
    auto& plan = g.plan;
    const std::size_t entries = plan.size();
    std::string problem;
    if (entries > 0 && (x == nullptr || y == nullptr || z == nullptr))
      problem = "x, y or z is NULL with " + std::to_string(entries) + " entries";
    else if (entries > 0 && (stride == 0 || stride % alignof(double) != 0))
      problem = "stride " + std::to_string(stride) + " is not a positive multiple of " +
                std::to_string(alignof(double)) + " bytes";
    // Owned positions into one array of Points (the shifted field), ghosts back out.
    const auto at = [stride](double* first, std::size_t i) -> double& {
      return *reinterpret_cast<double*>(reinterpret_cast<char*>(first) + i * stride);
    };
    g.positions.resize(entries);
    if (problem.empty())
      for (std::size_t i = 0; i < plan.local_count(); ++i) g.positions[i] = {at(x, i), at(y, i), at(z, i)};
    const View view = problem.empty()
                          ? View{reinterpret_cast<std::byte*>(g.positions.data()), sizeof(domex::Point), entries, 0}
                          : rejected(plan);
    run_views(*g.comm, call, std::span<const View>(&view, 1), problem, [&](std::span<const View> v) {
      plan.begin(v);
      plan.finish();
    });
    for (std::size_t i = plan.local_count(); i < entries; ++i) {
      at(x, i) = g.positions[i][0];
      at(y, i) = g.positions[i][1];
      at(z, i) = g.positions[i][2];
    }
  });
}

int domex_ghost_reverse_sum_doubles(domex_ghost* ghost, int field_count, double* const* fields) {
  constexpr const char* call = "domex_ghost_reverse_sum_doubles";
  return guarded(call, [&] {
    auto& handle = need(ghost, call, "ghost");
    auto& plan = handle.plan;
    thread_local std::vector<View> views;
    const std::string problem =
        field_views(plan, field_count, reinterpret_cast<void* const*>(fields), nullptr, nullptr, views);
    run_views(*handle.comm, call, views, problem, [&](std::span<const View> v) { plan.reverse_sum_doubles(v); });
  });
}

}  // extern "C"

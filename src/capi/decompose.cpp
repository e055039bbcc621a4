// SPDX-License-Identifier: BSD-3-Clause
// C API: multisection decomposition and particle migration of records.
#include "capi.hpp"

#include <cmath>

using domex::capi::guarded;
using domex::capi::need;

extern "C" {

int domex_multisection_create(domex_comm* comm, const double lo[3], const double hi[3], const int divisions[3],
                              const int periodic[3], double neighbour_margin, domex_multisection** out) {
  constexpr const char* call = "domex_multisection_create";
  return guarded(call, [&] {
    const auto& c = need(comm, call, "comm").comm;
    need(lo, call, "lo");
    need(hi, call, "hi");
    need(out, call, "out");
    domex::MultisectionOptions options;
    std::string problem;
    for (int a = 0; a < 3; ++a) {
      options.divisions[a] = divisions ? divisions[a] : 0;
      options.periodic[a] = periodic ? periodic[a] != 0 : false;
      if (options.divisions[a] < 0 && problem.empty())
        problem = "divisions[" + std::to_string(a) + "] = " + std::to_string(options.divisions[a]) + " is negative";
      if (!(lo[a] < hi[a]) && problem.empty())
        problem = "the box is empty or not finite on axis " + std::to_string(a);
    }
    if (!(neighbour_margin >= 0) && problem.empty()) problem = "neighbour_margin is negative or NaN";
    options.neighbour_margin = neighbour_margin;
    domex::capi::agree_arguments(c, call, problem);
    const domex::Box box{{lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}};
    *out = new domex_multisection{domex::Multisection(c, box, options), &c};
  });
}

int domex_multisection_free(domex_multisection** multisection) {
  return domex::capi::free_handle(multisection, "domex_multisection_free");
}

int domex_multisection_rebalance(domex_multisection* multisection, size_t count, const double* x, const double* y,
                                 const double* z, size_t stride, const double* weights) {
  constexpr const char* call = "domex_multisection_rebalance";
  return guarded(call, [&] {
    auto& handle = need(multisection, call, "multisection");
    auto& m = handle.multisection;
    thread_local std::vector<domex::Point> positions;
    std::string problem = domex::capi::gather_positions(count, x, y, z, stride, positions);
    domex::capi::agree_arguments(*handle.comm, call, problem);
    m.rebalance(positions, weights ? std::span<const double>(weights, count) : std::span<const double>{});
  });
}

int domex_multisection_owner(const domex_multisection* multisection, const double position[3], int* rank) {
  constexpr const char* call = "domex_multisection_owner";
  return guarded(call, [&] {
    const auto& m = need(multisection, call, "multisection").multisection;
    need(position, call, "position");
    need(rank, call, "rank") = m.owner({position[0], position[1], position[2]});
  });
}

int domex_multisection_box(const domex_multisection* multisection, int rank, double lo[3], double hi[3]) {
  constexpr const char* call = "domex_multisection_box";
  return guarded(call, [&] {
    const auto& m = need(multisection, call, "multisection").multisection;
    need(lo, call, "lo");
    need(hi, call, "hi");
    const auto d = m.divisions();
    if (rank < 0 || rank >= d[0] * d[1] * d[2])
      throw domex::capi::ArgumentError(domex::capi::message(call, "rank " + std::to_string(rank) + " out of range"));
    const domex::Box box = m.box(rank);
    for (int a = 0; a < 3; ++a) {
      lo[a] = box.lo[a];
      hi[a] = box.hi[a];
    }
  });
}

int domex_multisection_divisions(const domex_multisection* multisection, int divisions[3]) {
  constexpr const char* call = "domex_multisection_divisions";
  return guarded(call, [&] {
    const auto d = need(multisection, call, "multisection").multisection.divisions();
    need(divisions, call, "divisions");
    for (int a = 0; a < 3; ++a) divisions[a] = d[a];
  });
}

int domex_migration_create(domex_comm* comm, const domex_multisection* multisection, size_t count, const double* x,
                           const double* y, const double* z, size_t stride, const char* algorithm,
                           domex_migration** out) {
  constexpr const char* call = "domex_migration_create";
  return guarded(call, [&] {
    auto& c = need(comm, call, "comm").comm;
    const auto& m = need(multisection, call, "multisection").multisection;
    need(out, call, "out");
    thread_local std::vector<domex::Point> positions;
    std::string problem = domex::capi::gather_positions(count, x, y, z, stride, positions);
    const domex::Algorithm chosen = domex::capi::parse_algorithm(algorithm, problem);
    domex::capi::agree_arguments(c, call, problem);
    *out = new domex_migration{domex::MigrationPlan(c, m, std::span<const domex::Point>(positions),
                                                    {.algorithm = chosen})};
  });
}

int domex_migration_free(domex_migration** migration) {
  return domex::capi::free_handle(migration, "domex_migration_free");
}

int domex_migration_leaving(const domex_migration* migration, size_t* count) {
  constexpr const char* call = "domex_migration_leaving";
  return guarded(call, [&] { need(count, call, "count") = need(migration, call, "migration").plan.leaving(); });
}

int domex_migrate(domex_migration* migration, size_t count, size_t element_size, const void* records,
                  domex_buffer* out) {
  constexpr const char* call = "domex_migrate";
  return guarded(call, [&] {
    auto& plan = need(migration, call, "migration").plan;
    auto& into = need(out, call, "out");
    into.bytes.clear();
    std::string problem;
    if (element_size == 0)
      problem = "element_size is 0";
    else if (count != plan.destinations().size())
      problem = "count " + std::to_string(count) + " differs from the " + std::to_string(plan.destinations().size()) +
                " particles of the plan";
    else if (count > 0 && records == nullptr)
      problem = "records is NULL with " + std::to_string(count) + " particles";
    domex::capi::agree_arguments(plan.comm(), call, problem);
    into.bytes = plan.move_records(std::span<const std::byte>(static_cast<const std::byte*>(records), count * element_size),
                                   element_size);
  });
}

int domex_buffer_create(domex_buffer** out) {
  return guarded("domex_buffer_create", [&] { need(out, "domex_buffer_create", "out") = new domex_buffer{}; });
}

int domex_buffer_free(domex_buffer** buffer) { return domex::capi::free_handle(buffer, "domex_buffer_free"); }

int domex_buffer_data(const domex_buffer* buffer, const void** data, size_t* bytes) {
  constexpr const char* call = "domex_buffer_data";
  return guarded(call, [&] {
    const auto& b = need(buffer, call, "buffer");
    need(data, call, "data") = b.bytes.data();
    need(bytes, call, "bytes") = b.bytes.size();
  });
}

}  // extern "C"

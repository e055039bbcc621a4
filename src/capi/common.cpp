// SPDX-License-Identifier: BSD-3-Clause
// The C API's error reporting and argument checks, and the communicator.
#include "capi.hpp"

#include <string>

namespace domex::capi {
namespace {
/// Per thread: a failing call on one thread never overwrites another's message.
thread_local std::string last_error;
}  // namespace

std::string message(std::string_view call, std::string_view what) {
  return "domex: rank " + std::to_string(world_rank()) + ": " + std::string(call) + ": " + std::string(what);
}

void set_last_error(std::string text) noexcept {
  try {
    last_error = std::move(text);
  } catch (...) {
    last_error.clear();
  }
}

void agree_arguments(const Comm& comm, std::string_view call, const std::string& problem) {
  try {
    agree(comm, call, problem);
  } catch (const Error& error) {
    throw ArgumentError(error.what());
  }
}

Algorithm parse_algorithm(const char* name, std::string& problem) {
  if (name == nullptr || *name == '\0') return Algorithm::automatic;
  if (std::string_view(name) == "automatic") return Algorithm::automatic;
  for (Algorithm algorithm : concrete_algorithms)
    if (to_string(algorithm) == name) return algorithm;
  std::string valid = "automatic";
  for (Algorithm algorithm : concrete_algorithms) valid += ", " + std::string(to_string(algorithm));
  problem = "unknown algorithm '" + std::string(name) + "' (valid: " + valid + ")";
  return Algorithm::automatic;
}

std::string gather_positions(std::size_t count, const double* x, const double* y, const double* z,
                             std::size_t stride, std::vector<Point>& out) {
  out.clear();
  if (count == 0) return "";
  if (x == nullptr || y == nullptr || z == nullptr)
    return "x, y or z is NULL with " + std::to_string(count) + " particles";
  if (stride == 0 || stride % alignof(double) != 0)
    return "stride " + std::to_string(stride) + " is not a positive multiple of " + std::to_string(alignof(double)) +
           " bytes";
  out.resize(count);
  const auto at = [stride](const double* first, std::size_t i) {
    return *reinterpret_cast<const double*>(reinterpret_cast<const char*>(first) + i * stride);
  };
  for (std::size_t i = 0; i < count; ++i) out[i] = {at(x, i), at(y, i), at(z, i)};
  return "";
}

}  // namespace domex::capi

using domex::capi::guarded;
using domex::capi::need;

extern "C" {

const char* domex_last_error(void) { return domex::capi::last_error.c_str(); }

int domex_comm_create(MPI_Comm comm, domex_comm** out) {
  return guarded("domex_comm_create", [&] {
    need(out, "domex_comm_create", "out");
    if (comm == MPI_COMM_NULL) throw domex::capi::ArgumentError(domex::capi::message("domex_comm_create", "comm is MPI_COMM_NULL"));
    *out = new domex_comm{domex::Comm(comm)};
  });
}

int domex_comm_create_f(MPI_Fint comm, domex_comm** out) {
  return guarded("domex_comm_create_f", [&] {
    need(out, "domex_comm_create_f", "out");
    const MPI_Comm c = MPI_Comm_f2c(comm);
    if (c == MPI_COMM_NULL)
      throw domex::capi::ArgumentError(domex::capi::message("domex_comm_create_f", "comm is MPI_COMM_NULL"));
    *out = new domex_comm{domex::Comm(c)};
  });
}

int domex_comm_free(domex_comm** comm) { return domex::capi::free_handle(comm, "domex_comm_free"); }

int domex_comm_rank(const domex_comm* comm, int* rank) {
  return guarded("domex_comm_rank", [&] {
    need(rank, "domex_comm_rank", "rank") = need(comm, "domex_comm_rank", "comm").comm.rank();
  });
}

int domex_comm_size(const domex_comm* comm, int* size) {
  return guarded("domex_comm_size", [&] {
    need(size, "domex_comm_size", "size") = need(comm, "domex_comm_size", "comm").comm.size();
  });
}

}  // extern "C"

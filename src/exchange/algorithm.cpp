// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/error.hpp>
#include <domex/exchange/algorithm.hpp>

#include <string>

namespace domex {

std::string_view to_string(Algorithm algorithm) noexcept {
  switch (algorithm) {
    case Algorithm::automatic: return "automatic";
    case Algorithm::alltoall: return "alltoall";
    case Algorithm::sendrecv_reduce: return "sendrecv_reduce";
    case Algorithm::nbx: return "nbx";
    case Algorithm::reduce_scatter: return "reduce_scatter";
    case Algorithm::rma_fence: return "rma_fence";
    case Algorithm::rma_passive: return "rma_passive";
    case Algorithm::grid: return "grid";
  }
  return "unknown";
}

Algorithm algorithm_from_string(std::string_view name) {
  if (name == "automatic") return Algorithm::automatic;
  for (Algorithm algorithm : concrete_algorithms)
    if (to_string(algorithm) == name) return algorithm;
  std::string valid = "automatic";
  for (Algorithm algorithm : concrete_algorithms) valid += ", " + std::string(to_string(algorithm));
  fail("algorithm_from_string", "unknown algorithm '" + std::string(name) + "' (valid: " + valid + ")");
}

}  // namespace domex

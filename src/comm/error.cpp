// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/error.hpp>

#include <fmt/format.h>

namespace domex {

int world_rank() noexcept {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return -1;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void fail(std::string_view call, std::string_view what) {
  throw Error(fmt::format("domex: rank {}: {}: {}", world_rank(), call, what));
}

}  // namespace domex

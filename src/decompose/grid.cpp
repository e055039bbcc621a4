// SPDX-License-Identifier: BSD-3-Clause
// Grid indices, equal cuts and the equal-volume boxes of a Multisection's
// start (include/domex/decompose/grid.hpp).
#include <domex/comm/error.hpp>
#include <domex/decompose/grid.hpp>

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>

namespace domex {

std::array<int, 3> grid_divisions(int ranks, std::array<int, 3> requested, std::string_view call) {
  for (int d : requested)
    if (d < 0) fail(call, fmt::format("negative division {}", d));
  if (ranks < 1) fail(call, fmt::format("{} ranks (need at least 1)", ranks));
  // The given entries must divide the ranks, and equal them where none is
  // free: MPI_Dims_create would abort the job otherwise, through
  // MPI_COMM_WORLD's error handler. (The product stops once past the ranks:
  // no overflow.)
  long long given = 1;
  bool free = false;
  for (int d : requested) {
    free = free || d == 0;
    given *= d > 0 ? d : 1;
    if (given > ranks) break;
  }
  if (given > ranks || ranks % given != 0 || (!free && given != ranks))
    fail(call, fmt::format("divisions {}x{}x{} (0: free) do not multiply to {} ranks", requested[0], requested[1],
                           requested[2], ranks));
  check_mpi(MPI_Dims_create(ranks, 3, requested.data()), "MPI_Dims_create");
  return requested;
}

EqualBoxes::EqualBoxes(const Box& domain, const std::array<int, 3>& divisions, const std::array<bool, 3>& periodic)
    : domain_(domain), divisions_(divisions), periodic_(periodic) {
  for (int a = 0; a < 3; ++a) {
    if (divisions[a] < 1) fail("EqualBoxes", fmt::format("divisions[{}] = {} (need at least 1)", a, divisions[a]));
    if (!(domain.hi[a] > domain.lo[a]) || !std::isfinite(domain.hi[a] - domain.lo[a]))
      fail("EqualBoxes", fmt::format("empty or infinite domain on axis {}: [{}, {})", a, domain.lo[a], domain.hi[a]));
  }
}

int EqualBoxes::owner(const Point& p) const noexcept {
  const Point c = wrap_periodic(domain_, periodic_, p);
  std::array<int, 3> index{};
  for (int a = 0; a < 3; ++a) {
    if (!(c[a] >= domain_.lo[a] && c[a] < domain_.hi[a])) return -1;  // NaN fails too
    const int n = divisions_[a];
    // The guess from the fraction, then the cuts' own rounding decides (as
    // a Multisection's binary search over the same cuts).
    int i = std::clamp(static_cast<int>((c[a] - domain_.lo[a]) / domain_.extent(a) * n), 0, n - 1);
    while (i > 0 && c[a] < cut(a, i)) --i;
    while (i + 1 < n && c[a] >= cut(a, i + 1)) ++i;
    index[a] = i;
  }
  return grid_rank(index, divisions_);
}

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/collective.hpp>
#include <domex/comm/reduce.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <climits>
#include <string>
#include <utility>
#include <vector>

namespace domex {
namespace {

int checked_count(std::span<std::complex<double>> values, const char* call) {
  if (values.size() > static_cast<std::size_t>(INT_MAX))
    fail(call, std::to_string(values.size()) + " values: more than INT_MAX");
  return static_cast<int>(values.size());
}

/// The line sub-communicators of each process grid used on a Comm: for
/// every axis longer than 1, the ranks that differ only in that coordinate;
/// and what ReduceMethod::automatic has timed and chosen.
struct ReduceGrids {
  explicit ReduceGrids(Comm&) {}
  static constexpr int timed_calls = 16;  // 8 of each method, alternating
  int calls = 0;
  std::array<std::vector<double>, 2> seconds;  // mpi, by_dimension
  ReduceMethod chosen = ReduceMethod::automatic;
  ReduceGrids(const ReduceGrids&) = delete;
  ReduceGrids& operator=(const ReduceGrids&) = delete;
  ~ReduceGrids() {
    for (auto& grid : grids)
      for (MPI_Comm& line : grid.lines) MPI_Comm_free(&line);
  }
  struct Grid {
    std::vector<int> dims;
    std::vector<MPI_Comm> lines;
  };
  std::vector<Grid> grids;
};

const std::vector<MPI_Comm>& lines_of(const Comm& comm, std::vector<int> dims) {
  auto& cache = comm.cached<ReduceGrids>();
  if (dims.empty()) {
    dims.assign(3, 0);
    check_mpi(MPI_Dims_create(comm.size(), 3, dims.data()), "MPI_Dims_create");
  }
  for (const auto& grid : cache.grids)
    if (grid.dims == dims) return grid.lines;
  collectively(comm, [&] {
    long product = 1;
    for (int d : dims) {
      if (d < 1) fail("allreduce", fmt::format("ReduceOptions::grid {}: an axis < 1", fmt::join(dims, " x ")));
      product *= d;
      if (product > comm.size()) break;
    }
    if (product != comm.size())
      fail("allreduce", fmt::format("ReduceOptions::grid {}: not {} ranks", fmt::join(dims, " x "), comm.size()));
  });
  ReduceGrids::Grid grid{dims, {}};
  // Coordinates of this rank, row-major (the last axis fastest).
  std::vector<int> at(dims.size());
  for (std::size_t a = dims.size(), rest = static_cast<std::size_t>(comm.rank()); a-- > 0;) {
    at[a] = static_cast<int>(rest % static_cast<std::size_t>(dims[a]));
    rest /= static_cast<std::size_t>(dims[a]);
  }
  for (std::size_t a = 0; a < dims.size(); ++a) {
    if (dims[a] == 1) continue;
    int color = 0;  // the other coordinates, row-major
    for (std::size_t b = 0; b < dims.size(); ++b) color = b == a ? color : color * dims[b] + at[b];
    MPI_Comm line = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm.get(), color, at[a], &line), "MPI_Comm_split");
    grid.lines.push_back(line);
  }
  cache.grids.push_back(std::move(grid));
  return cache.grids.back().lines;
}

}  // namespace

void allreduce(const Comm& comm, std::span<std::complex<double>> values) {
  const int count = checked_count(values, "allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), count, MPI_C_DOUBLE_COMPLEX, MPI_SUM, comm.get()),
            "MPI_Allreduce");
}

ReduceMethod automatic_reduce_choice(const Comm& comm) { return comm.cached<ReduceGrids>().chosen; }

void allreduce(const Comm& comm, std::span<std::complex<double>> values, const ReduceOptions& options) {
  if (options.method == ReduceMethod::mpi) return allreduce(comm, values);
  const int count = checked_count(values, "allreduce");
  const auto by_dimension = [&] {
    for (MPI_Comm line : lines_of(comm, options.grid))
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), count, MPI_C_DOUBLE_COMPLEX, MPI_SUM, line),
                "MPI_Allreduce (by dimension)");
  };
  if (options.method == ReduceMethod::by_dimension) return by_dimension();
  auto& state = comm.cached<ReduceGrids>();
  if (state.chosen == ReduceMethod::mpi) return allreduce(comm, values);
  if (state.chosen == ReduceMethod::by_dimension) return by_dimension();
  // Learning: alternate, time this rank's calls, decide on the slowest rank's medians.
  const int which = state.calls++ % 2;
  const double start = MPI_Wtime();
  if (which == 0) allreduce(comm, values);
  else by_dimension();
  state.seconds[static_cast<std::size_t>(which)].push_back(MPI_Wtime() - start);
  if (state.calls < ReduceGrids::timed_calls) return;
  std::array<double, 2> medians{};
  for (std::size_t m = 0; m < 2; ++m) {
    auto& times = state.seconds[m];
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
    medians[m] = times[times.size() / 2];
  }
  comm.allreduce_in_place(std::span<double>(medians), MPI_MAX);
  state.chosen = medians[1] < medians[0] ? ReduceMethod::by_dimension : ReduceMethod::mpi;
}

AllreduceRequest iallreduce(const Comm& comm, std::span<std::complex<double>> values) {
  const int count = checked_count(values, "iallreduce");
  AllreduceRequest pending;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, values.data(), count, MPI_C_DOUBLE_COMPLEX, MPI_SUM, comm.get(),
                           &pending.request_),
            "MPI_Iallreduce");
  return pending;
}

AllreduceRequest::AllreduceRequest(AllreduceRequest&& other) noexcept
    : request_(std::exchange(other.request_, MPI_REQUEST_NULL)) {}

AllreduceRequest& AllreduceRequest::operator=(AllreduceRequest&& other) noexcept {
  if (this != &other) {
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
    request_ = std::exchange(other.request_, MPI_REQUEST_NULL);
  }
  return *this;
}

AllreduceRequest::~AllreduceRequest() {
  if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
}

void AllreduceRequest::wait() {
  if (request_ == MPI_REQUEST_NULL) return;
  check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait (iallreduce)");
}

bool AllreduceRequest::ready() {
  if (request_ == MPI_REQUEST_NULL) return true;
  int done = 0;
  check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test (iallreduce)");
  return done != 0;
}

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
// domex-bench reduce: the small complex sum of a Krylov solver (a CG's dot
// products), by one MPI_Allreduce against an MPI_Allreduce along each axis
// of the process grid in turn (domex::ReduceMethod::by_dimension). Every
// result is checked against the serial sum (small integers: exact).
//
//   mpirun -n 8 domex-bench reduce
//   sim/run torus3d 512 reduce --grid 8 8 8        (SimGrid: a 3-D torus of 512 nodes)

#include "command.hpp"
#include "timing.hpp"

#include <domex/comm/reduce.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <complex>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

// Named per file: the files are compiled as one (UNITY_BUILD, CMakeLists.txt).
namespace domex::bench::reduce_command {
namespace {

struct ReduceBenchOptions {
  std::vector<int> counts{1, 2, 12};  ///< complex numbers per sum (one row each)
  std::vector<int> grid;              ///< by_dimension's process grid; empty: MPI_Dims_create(P, 3)
  int calls = 200;                    ///< back-to-back calls per timed batch
  int repeats = 3;                    ///< batches (best of)
};

/// Seconds per call: the best of `repeats` batches of `calls` back-to-back
/// sums, each the slowest rank's time from a barrier.
double seconds_per_call(const Comm& comm, const ReduceBenchOptions& options, int count, const ReduceOptions& method,
                        long& wrong) {
  std::vector<std::complex<double>> values(static_cast<std::size_t>(count)), expected(values.size());
  const auto value = [](int rank, int k) { return std::complex<double>(rank % 97 + k, -(rank % 89) - 2 * k); };
  for (int k = 0; k < count; ++k)
    for (int r = 0; r < comm.size(); ++r) expected[static_cast<std::size_t>(k)] += value(r, k);
  const auto reset = [&] {
    for (int k = 0; k < count; ++k) values[static_cast<std::size_t>(k)] = value(comm.rank(), k);
  };
  reset();
  allreduce(comm, std::span(values), method);  // warm-up: sub-communicators, connections
  wrong += values != expected;
  double best = 1e300;
  for (int r = 0; r < options.repeats; ++r) {
    const double batch = time_collective(comm, [&] {
      for (int c = 0; c < options.calls; ++c) {
        reset();
        allreduce(comm, std::span(values), method);
      }
    });
    wrong += values != expected;
    best = std::min(best, batch / options.calls);
  }
  return best;
}

void run_reduce(const ReduceBenchOptions& options) {
  Comm comm(MPI_COMM_WORLD);
  std::vector<int> grid = options.grid;
  long product = 1;
  for (int d : grid) product *= d;
  if (!grid.empty() && product != comm.size())
    bad_argument("reduce", fmt::format("--grid {}: {} ranks, not {}", fmt::join(grid, " "), product, comm.size()));
  if (grid.empty()) {
    grid.assign(3, 0);
    check_mpi(MPI_Dims_create(comm.size(), 3, grid.data()), "MPI_Dims_create");
  }
  long wrong = 0;
  if (comm.rank() == 0)
    std::printf("complex allreduce, %d ranks, grid %s, %d calls x best of %d (slowest rank)\n%8s %16s %16s %10s\n",
                comm.size(), fmt::format("{}", fmt::join(grid, " x ")).c_str(), options.calls, options.repeats,
                "complex", "MPI_Allreduce[us]", "by dimension[us]", "ratio");
  // automatic: its first 16 calls time both; what it chose, and its speed afterwards.
  {
    std::vector<std::complex<double>> warm(1);
    for (int c = 0; c < 16; ++c) allreduce(comm, std::span(warm), {.method = ReduceMethod::automatic, .grid = grid});
  }
  for (int count : options.counts) {
    const double mpi = seconds_per_call(comm, options, count, {.method = ReduceMethod::mpi}, wrong);
    const double lines =
        seconds_per_call(comm, options, count, {.method = ReduceMethod::by_dimension, .grid = grid}, wrong);
    if (comm.rank() == 0) std::printf("%8d %16.2f %16.2f %10.2f\n", count, 1e6 * mpi, 1e6 * lines, lines / mpi);
  }
  wrong = comm.allreduce(wrong, MPI_SUM);
  if (comm.rank() == 0) {
    std::printf("ReduceMethod::automatic chose %s (8 timed calls of each, slowest rank's median)\n",
                automatic_reduce_choice(comm) == ReduceMethod::by_dimension ? "by_dimension" : "mpi");
    std::printf("sums: %s\n", wrong == 0 ? "all correct" : "WRONG");
  }
  if (wrong != 0) fail("domex-bench reduce", fmt::format("{} wrong sums", wrong));
}

const Registration registration{[](CLI::App& app) {
  auto options = std::make_shared<ReduceBenchOptions>();
  auto* command =
      app.add_subcommand("reduce", "small complex allreduce: MPI_Allreduce vs by dimension of the process grid");
  command->add_option("--counts", options->counts, "complex numbers per sum (one row each)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  command->add_option("--grid", options->grid, "process grid of by_dimension, first axis slowest (default: "
                                               "MPI_Dims_create(P, 3))")
      ->check(CLI::Range(1, 1 << 20));
  command->add_option("--calls", options->calls, "calls per timed batch")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  command->add_option("--repeats", options->repeats, "batches (best of)")->check(CLI::Range(1, 1000))->capture_default_str();
  command->callback([options] { run_reduce(*options); });
}};

}  // namespace
}  // namespace domex::bench::reduce_command

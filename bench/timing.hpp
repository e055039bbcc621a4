#pragma once
// Timing helpers shared by the benchmarks.

#include <domex/comm/comm.hpp>

#include <algorithm>
#include <vector>

namespace domex::bench {

/// Seconds one collective operation took: the slowest rank's time, measured
/// from a barrier, the same value on every rank (so every rank takes the
/// same decisions from it).
template <class Operation>
double time_collective(const Comm& comm, Operation&& operation) {
  comm.barrier();
  const double start = MPI_Wtime();
  operation();
  return comm.allreduce(MPI_Wtime() - start, MPI_MAX);
}

struct Summary {
  double median = 0, min = 0, max = 0;
};

inline Summary summarize(std::vector<double> samples) {
  if (samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  const double median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  return {median, samples.front(), samples.back()};
}

}  // namespace domex::bench

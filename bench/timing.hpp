// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Timing helpers shared by the benchmarks.

#include <domex/comm/comm.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
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

/// Writes `text` to `path` through a temporary file renamed at the end, so a
/// reader never sees half a file; prints "wrote <path>".
inline void write_file(const std::string& path, const std::string& text, const char* command) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    out << text;
    if (!out.flush()) fail(command, "cannot write " + temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) fail(command, "cannot rename " + temporary + " to " + path);
  std::printf("wrote %s\n", path.c_str());
}

}  // namespace domex::bench

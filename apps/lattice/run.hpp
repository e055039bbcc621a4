// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// One domex-lattice run after validation: gauge field, CG solve, the halo
// throughput histogram, the report and lattice.json.

#include <domex/comm/comm.hpp>

#include <cstddef>
#include <filesystem>
#include <string_view>
#include <vector>

#include "config.hpp"

namespace domex::lattice {

/// Counts of `samples` in `bins` equal bins over [low, high] (the last bin closed).
struct Histogram {
  double low = 0, high = 0;
  std::vector<std::size_t> counts;
};
[[nodiscard]] Histogram histogram(const std::vector<double>& samples, int bins);

/// Collective over `comm`; throws domex::Error on every rank.
void simulate(const Comm& comm, const Config& config);

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// reader never sees a half-written file.
void write_file(const std::filesystem::path& path, std::string_view bytes);

}  // namespace domex::lattice

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
#include "files.hpp"

namespace domex::lattice {

/// Counts of `samples` in `bins` equal bins over [low, high] (the last bin closed).
struct Histogram {
  double low = 0, high = 0;
  std::vector<std::size_t> counts;
};
[[nodiscard]] Histogram histogram(const std::vector<double>& samples, int bins);

/// Collective over `comm`; throws domex::Error on every rank.
void simulate(const Comm& comm, const Config& config);

using domex::apps::write_file;  // all-or-nothing (files.hpp)

}  // namespace domex::lattice

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Communication patterns of the benchmarks: each rank's destinations on a
// periodic 3-D process grid, as in particle migration.

#include <domex/comm/comm.hpp>
#include <domex/decompose/grid.hpp>

#include <array>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace domex::bench {

/// Destinations of this rank: its 6 face or 26 face/edge/corner neighbours
/// on a periodic MPI_Dims_create grid (self and repeats removed), plus, with
/// probability far_fraction per neighbour, random far ranks (particles that
/// jumped). Deterministic in (seed, rank).
inline std::vector<int> grid_destinations(const Comm& comm, int neighbours, double far_fraction, std::uint64_t seed) {
  const std::array<int, 3> dims = grid_divisions(comm.size());
  const int rank = comm.rank();
  std::set<int> destinations;
  for (int dx = -1; dx <= 1; ++dx)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dz = -1; dz <= 1; ++dz) {
        const int nonzero = (dx != 0) + (dy != 0) + (dz != 0);
        if (nonzero == 0 || (neighbours == 6 && nonzero != 1)) continue;
        const int destination = grid_offset(rank, {dx, dy, dz}, dims);
        if (destination != rank) destinations.insert(destination);
      }
  std::mt19937_64 random(seed * 1000003 + static_cast<std::uint64_t>(rank));
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const std::size_t near = destinations.size();
  for (std::size_t i = 0; i < near; ++i)
    if (uniform(random) < far_fraction) {
      const int destination = static_cast<int>(random() % static_cast<std::uint64_t>(comm.size()));
      if (destination != rank) destinations.insert(destination);
    }
  return {destinations.begin(), destinations.end()};
}

}  // namespace domex::bench

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-bench sparse's `migration:<N>` pattern: one step of particle
// migration in a real multisection decomposition of N particles, uniformly
// distributed in the periodic unit cube, over the communicator's ranks.
//
// Every particle moves by a random step, each coordinate uniform in
// [-s, s] with s = step x the mean interparticle spacing N^(-1/3), and goes
// to the owner of its new position. Only particles within s of their
// domain's surface can leave it, so each rank generates only those: the
// shell of its box (six slabs, no overlap), round(N x shell volume)
// particles, uniform in it — the density of N particles in the unit cube,
// without holding N / P particles (N = 682^3 at P = 1024 would be 310 000 per
// rank, 7.6 GB of positions for a simulator that holds every rank).

#include <domex/comm/comm.hpp>
#include <domex/decompose/grid.hpp>
#include <domex/decompose/multisection.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace domex::bench {

/// What the migration pattern sends from this rank.
struct MigrationPattern {
  std::map<int, std::size_t> particles_to;  ///< destination rank -> particles it gets from this rank
  std::size_t shell_particles = 0;          ///< particles generated (within one step of the surface)
  std::size_t owned_particles = 0;          ///< N x the volume of this rank's domain
};

/// Parses N of `migration:<N>`, N an integer or `n^3` (e.g. migration:682^3).
inline std::uint64_t migration_particles(const std::string& pattern) {
  const std::string value = pattern.substr(pattern.find(':') + 1);
  const auto caret = value.find('^');
  const double base = std::stod(value.substr(0, caret));
  const double exponent = caret == std::string::npos ? 1.0 : std::stod(value.substr(caret + 1));
  return static_cast<std::uint64_t>(std::llround(std::pow(base, exponent)));
}

/// Collective unless samples == 0. The decomposition is domex's Multisection
/// (histogram cuts, periodic unit cube, MPI_Dims_create divisions)
/// rebalanced once on min(N / P, samples) uniform positions per rank drawn
/// in its starting equal-volume box (the cuts of N uniform particles up to
/// sampling noise). samples == 0: the equal-volume boxes themselves
/// (EqualBoxes; no Multisection, no communication: a simulator's cost of a
/// rebalance grows as P^2 at 16384 ranks). Deterministic in (N, P, step,
/// seed).
inline MigrationPattern migration_pattern(const Comm& comm, std::uint64_t particles, double step, std::size_t samples,
                                          std::uint64_t seed) {
  const int rank = comm.rank();
  std::mt19937_64 random(seed * 1000003 + 7919 * particles + static_cast<std::uint64_t>(rank));
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::optional<Multisection> decomposition;
  const EqualBoxes equal(Box{{0, 0, 0}, {1, 1, 1}}, grid_divisions(comm.size()), {true, true, true});
  if (samples > 0) {
    decomposition.emplace(comm, Box{{0, 0, 0}, {1, 1, 1}}, MultisectionOptions{.periodic = {true, true, true}});
    const Box start = decomposition->box(rank);
    std::vector<Point> positions(std::min<std::uint64_t>(samples, particles / static_cast<std::uint64_t>(comm.size())));
    for (auto& p : positions)
      for (int a = 0; a < 3; ++a) p[a] = start.lo[a] + uniform(random) * start.extent(a);
    decomposition->rebalance(positions);
  }
  const Box box = decomposition ? decomposition->box(rank) : equal.box(rank);
  const double s = step / std::cbrt(static_cast<double>(particles));
  const std::array<double, 3> extent{box.extent(0), box.extent(1), box.extent(2)};
  // The shell as six slabs: x's two faces of full y, z extent; y's within
  // the inner x; z's within the inner x and y. A slab is 2s thick at most
  // (a domain thinner than 2s is all shell).
  std::array<double, 3> inner{}, face{};
  for (int a = 0; a < 3; ++a) {
    face[a] = std::min(s, extent[a] / 2);
    inner[a] = extent[a] - 2 * face[a];
  }
  struct Slab {
    Box region;
    double volume;
  };
  std::vector<Slab> slabs;
  for (int a = 0; a < 3; ++a)
    for (int side = 0; side < 2; ++side) {
      Box region = box;
      for (int b = 0; b < a; ++b) {  // earlier axes: their inner part only
        region.lo[b] = box.lo[b] + face[b];
        region.hi[b] = box.hi[b] - face[b];
      }
      region.lo[a] = side == 0 ? box.lo[a] : box.hi[a] - face[a];
      region.hi[a] = side == 0 ? box.lo[a] + face[a] : box.hi[a];
      double volume = 1;
      for (int b = 0; b < 3; ++b) volume *= std::max(0.0, region.extent(b));
      if (volume > 0) slabs.push_back({region, volume});
    }
  double shell_volume = 0;
  for (const auto& slab : slabs) shell_volume += slab.volume;
  MigrationPattern pattern;
  const double n = static_cast<double>(particles);
  pattern.owned_particles = static_cast<std::size_t>(std::llround(n * extent[0] * extent[1] * extent[2]));
  pattern.shell_particles = static_cast<std::size_t>(std::llround(n * shell_volume));
  std::vector<double> weights;
  for (const auto& slab : slabs) weights.push_back(slab.volume);
  std::discrete_distribution<std::size_t> pick(weights.begin(), weights.end());
  std::uniform_real_distribution<double> move(-s, s);
  for (std::size_t i = 0; i < pattern.shell_particles; ++i) {
    const Box& region = slabs[pick(random)].region;
    Point p;
    for (int a = 0; a < 3; ++a) p[a] = region.lo[a] + uniform(random) * region.extent(a) + move(random);
    const int owner = decomposition ? decomposition->try_owner(p) : equal.owner(p);  // periodic: wraps
    if (owner != rank && owner >= 0) ++pattern.particles_to[owner];
  }
  return pattern;
}

}  // namespace domex::bench

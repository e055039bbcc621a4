// SPDX-License-Identifier: BSD-3-Clause
#include <domex/decompose/multisection.hpp>

#include "bad_input.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>

namespace {

using domex::Point;

/// Two dense Plummer-like clumps plus a thin uniform background in [0,1)^3.
std::vector<Point> clustered(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<Point> points;
  const Point centres[2] = {{0.3, 0.35, 0.4}, {0.72, 0.6, 0.55}};
  while (points.size() < count) {
    const double u = uniform(random);
    if (u < 0.1) {
      points.push_back({uniform(random), uniform(random), uniform(random)});
      continue;
    }
    // Plummer radius: r = a / sqrt(X^(-2/3) - 1), cut at 0.25.
    const double a = u < 0.55 ? 0.03 : 0.06;
    const double x = std::max(uniform(random), 1e-12);
    const double r = a / std::sqrt(std::pow(x, -2.0 / 3.0) - 1.0);
    if (r > 0.25) continue;
    const double cos_theta = 2 * uniform(random) - 1, phi = 2 * std::numbers::pi * uniform(random);
    const double s = std::sqrt(1 - cos_theta * cos_theta);
    const Point& c = centres[u < 0.55 ? 0 : 1];
    points.push_back({c[0] + r * s * std::cos(phi), c[1] + r * s * std::sin(phi), c[2] + r * cos_theta});
  }
  return points;
}

TEST(Multisection, OwnerAgreesWithBoxesAndCoversTheDomain) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 2, 3}});
  const auto d = decomposition.divisions();
  EXPECT_EQ(d[0] * d[1] * d[2], comm.size());
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int n = 0; n < 2000; ++n) {
    const Point p{u(random), 2 * u(random), 3 * u(random)};
    const int owner = decomposition.owner(p);
    ASSERT_GE(owner, 0);
    ASSERT_LT(owner, comm.size());
    EXPECT_TRUE(decomposition.box(owner).contains(p));
  }
}

TEST(Multisection, ClusteredParticlesAreBalancedByCount) {
  domex::Comm comm{MPI_COMM_WORLD};
  const std::uint64_t seed = 2024 + static_cast<std::uint64_t>(comm.rank());
  if (comm.rank() == 0) std::printf("clustered seed 2024 + rank\n");
  // All particles start on rank 0: the empty ranks take part with no samples.
  const auto particles = comm.rank() == 0 ? clustered(4000 * static_cast<std::size_t>(comm.size()), seed)
                                          : std::vector<Point>{};
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}});
  decomposition.rebalance(particles);
  std::vector<long> counts(static_cast<std::size_t>(comm.size()), 0);
  for (const auto& p : particles) ++counts[static_cast<std::size_t>(decomposition.owner(p))];
  comm.allreduce_in_place(std::span<long>(counts), MPI_SUM);
  const double mean = 4000.0;
  const double max = static_cast<double>(*std::max_element(counts.begin(), counts.end()));
  EXPECT_LE(max / mean, 1.05) << "max/mean count " << max / mean;
}

TEST(Multisection, CostWeightsBalanceCostNotCount) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto particles = clustered(3000, 99 + static_cast<std::uint64_t>(comm.rank()));
  // Cost grows with x: the domains at large x must hold fewer particles.
  std::vector<double> cost(particles.size());
  for (std::size_t i = 0; i < particles.size(); ++i) cost[i] = 1.0 + 4.0 * particles[i][0];
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}});
  decomposition.rebalance(particles, cost);
  std::vector<double> per_rank(static_cast<std::size_t>(comm.size()), 0);
  for (std::size_t i = 0; i < particles.size(); ++i)
    per_rank[static_cast<std::size_t>(decomposition.owner(particles[i]))] += cost[i];
  comm.allreduce_in_place(std::span<double>(per_rank), MPI_SUM);
  double total = 0;
  for (double c : per_rank) total += c;
  const double max = *std::max_element(per_rank.begin(), per_rank.end());
  EXPECT_LE(max / (total / comm.size()), 1.05);
}

TEST(Multisection, SampledCutsStayCloseToBalanced) {
  // More particles than the sample budget: cuts come from samples drawn in
  // proportion to each rank's cost (seed 12345), and balance is statistical.
  domex::Comm comm{MPI_COMM_WORLD};
  const auto particles = clustered(20000, 5 + static_cast<std::uint64_t>(comm.rank()));
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}}, {.method = domex::CutMethod::global, .total_samples = 8192});
  decomposition.rebalance(particles);
  std::vector<long> counts(static_cast<std::size_t>(comm.size()), 0);
  for (const auto& p : particles) ++counts[static_cast<std::size_t>(decomposition.owner(p))];
  comm.allreduce_in_place(std::span<long>(counts), MPI_SUM);
  const double max = static_cast<double>(*std::max_element(counts.begin(), counts.end()));
  EXPECT_LE(max / 20000.0, 1.25);
}

// The legacy root-broadcast path computes the cuts on rank 0 alone from the
// same samples: the same cuts as the global method, bitwise, on every rank.
TEST(Multisection, RootBroadcastGivesTheGlobalCuts) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto particles = clustered(20000, 7 + static_cast<std::uint64_t>(comm.rank()));
  for (auto geometry : {domex::Geometry::cartesian, domex::Geometry::cylindrical}) {
    const domex::Box domain = geometry == domex::Geometry::cartesian ? domex::Box{{0, 0, 0}, {1, 1, 1}}
                                                                     : domex::Box{{0, 0, -1}, {2, 2 * std::numbers::pi, 1}};
    domex::Multisection global(comm, domain, {.geometry = geometry, .method = domex::CutMethod::global, .total_samples = 8192});
    domex::Multisection root(comm, domain,
                             {.geometry = geometry, .method = domex::CutMethod::root_broadcast, .total_samples = 8192});
    global.rebalance(particles);
    root.rebalance(particles);
    EXPECT_EQ(global.cuts(), root.cuts());
    EXPECT_EQ(global.neighbours(), root.neighbours());
  }
}

TEST(Multisection, PeriodicAxesWrapAndNeighboursAreSymmetric) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}}, {.periodic = {true, true, false}});
  EXPECT_EQ(decomposition.owner({1.25, -0.5, 0.5}), decomposition.owner({0.25, 0.5, 0.5}));
  EXPECT_THROW((void)decomposition.owner({0.5, 0.5, 1.5}), domex::Error);  // z is not periodic
  EXPECT_THROW((void)decomposition.owner({NAN, 0.5, 0.5}), domex::Error);
  for (int r = 0; r < comm.size(); ++r)
    for (int n : decomposition.neighbours_of(r)) {
      const auto back = decomposition.neighbours_of(n);
      EXPECT_TRUE(std::binary_search(back.begin(), back.end(), r)) << r << " -> " << n;
    }
}

TEST(Multisection, CylindricalSectionsWrapInPhi) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::Multisection ring(comm, {{1.0, 0, -0.1}, {2.0, 0, 0.1}}, {.geometry = domex::Geometry::cylindrical});
  // A ring of particles: r in [1, 2), all phi.
  std::vector<Point> particles;
  std::mt19937_64 random(11 + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int n = 0; n < 2000; ++n) {
    const double r = 1 + u(random), phi = 2 * std::numbers::pi * u(random);
    particles.push_back({r * std::cos(phi), r * std::sin(phi), 0.2 * u(random) - 0.1});
  }
  ring.rebalance(particles);
  std::vector<long> counts(static_cast<std::size_t>(comm.size()), 0);
  for (const auto& p : particles) {
    const int owner = ring.owner(p);
    ++counts[static_cast<std::size_t>(owner)];
    EXPECT_TRUE(ring.box(owner).contains(ring.coordinates(p)));
  }
  comm.allreduce_in_place(std::span<long>(counts), MPI_SUM);
  EXPECT_LE(static_cast<double>(*std::max_element(counts.begin(), counts.end())) / 2000.0, 1.05);
  // Just below phi = 0 is phi = 2 pi - epsilon: the last section in phi.
  const Point below{1.5, -1e-9, 0};
  EXPECT_GT(ring.coordinates(below)[1], 6.28);
  EXPECT_TRUE(ring.box(ring.owner(below)).contains(ring.coordinates(below)));
}

TEST(Multisection, BadInputNamesTheProblem) {
  domex::Comm comm{MPI_COMM_WORLD};
  EXPECT_THROW(domex::Multisection(comm, {{0, 0, 0}, {0, 1, 1}}), domex::Error);
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}});
  try {
    (void)decomposition.owner({0.5, 2.0, 0.5});
    FAIL();
  } catch (const domex::Error& error) {
    EXPECT_NE(std::string(error.what()).find("outside the domain"), std::string::npos) << error.what();
  }
  // Divisions that cannot divide the ranks: an error naming them on every
  // rank (MPI_Dims_create alone would abort the job).
  try {
    domex::Multisection bad(comm, {{0, 0, 0}, {1, 1, 1}}, {.divisions = {comm.size() + 1, 0, 0}});
    FAIL();
  } catch (const domex::Error& error) {
    EXPECT_NE(std::string(error.what()).find("do not multiply to"), std::string::npos) << error.what();
  }
}

/// Uniform points in the unit cube, seeded per rank.
std::vector<Point> uniform(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Point> points(count);
  for (auto& p : points) p = {u(random), u(random), u(random)};
  return points;
}

/// max / mean over ranks of the cost each rank owns.
double imbalance(const domex::Comm& comm, const domex::Multisection& decomposition, const std::vector<Point>& points,
                 const std::vector<double>& cost = {}) {
  std::vector<double> per_rank(static_cast<std::size_t>(comm.size()), 0);
  for (std::size_t i = 0; i < points.size(); ++i)
    per_rank[static_cast<std::size_t>(decomposition.owner(points[i]))] += cost.empty() ? 1.0 : cost[i];
  comm.allreduce_in_place(std::span<double>(per_rank), MPI_SUM);
  double total = 0;
  for (double c : per_rank) total += c;
  return *std::max_element(per_rank.begin(), per_rank.end()) / (total / comm.size());
}

std::string fmt_layout(const std::array<int, 3>& d) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

// global first: the scalable methods are compared with it.
const domex::CutMethod methods[] = {domex::CutMethod::global, domex::CutMethod::histogram, domex::CutMethod::sampled};
const char* name(domex::CutMethod method) {
  return method == domex::CutMethod::histogram ? "histogram" : method == domex::CutMethod::global ? "global" : "sampled";
}

TEST(Multisection, OneRanksBadInputIsAnErrorOnEveryRankAndTheCutsStay) {
  domex::Comm comm{MPI_COMM_WORLD};
  if (comm.rank() == 0) std::printf("uniform seed 40 + rank\n");
  for (auto method : methods) {
    domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}}, {.method = method, .samples_per_rank = 1024});
    auto good = uniform(500, 40 + static_cast<std::uint64_t>(comm.rank()));
    std::vector<double> good_weights(good.size(), 1.0);
    decomposition.rebalance(good, good_weights);
    for (int bad : domex::testing::bad_ranks(comm.size()))
      for (const auto& input : domex::testing::bad_inputs()) {
        SCOPED_TRACE(std::string(name(method)) + ", " + input.kind + " on rank " + std::to_string(bad));
        auto positions = good;
        auto weights = good_weights;
        if (comm.rank() == bad) {
          if (input.in_weight) weights[7] = input.weight;
          else positions[7] = input.position;
        }
        const auto before = decomposition.cuts();
        const auto neighbours = decomposition.neighbours();
        try {
          decomposition.rebalance(positions, weights);
          ADD_FAILURE() << "no error";
        } catch (const domex::Error& error) {
          const std::string what = error.what();
          EXPECT_NE(what.find("rank " + std::to_string(bad) + ": Multisection::rebalance: particle 7"),
                    std::string::npos)
              << what;
          EXPECT_NE(what.find(input.value), std::string::npos) << what;
        }
        // Strong guarantee: nothing changed, and the object still works.
        EXPECT_EQ(decomposition.cuts(), before);
        EXPECT_EQ(decomposition.neighbours(), neighbours);
        auto moved = good;
        for (auto& p : moved) p[0] = p[0] * p[0];  // a different distribution: the cuts must move
        decomposition.rebalance(moved);
        EXPECT_LE(imbalance(comm, decomposition, moved), method == domex::CutMethod::histogram ? 1.05 : 1.3);
        decomposition.rebalance(good, good_weights);
      }
  }
}

TEST(Multisection, MismatchedSizesAndBadOptionsFailEverywhere) {
  domex::Comm comm{MPI_COMM_WORLD};
  const int bad = comm.size() - 1;
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}});
  const auto points = uniform(10, 3);
  std::vector<double> weights(comm.rank() == bad ? 9 : 10, 1.0);
  EXPECT_THROW(decomposition.rebalance(points, weights), domex::Error);
  // One rank passes an empty domain; another time, a different one.
  const domex::Box empty{{0, 0, 0}, {1, 0, 1}}, other{{0, 0, 0}, {2, 1, 1}}, unit{{0, 0, 0}, {1, 1, 1}};
  EXPECT_THROW(domex::Multisection(comm, comm.rank() == bad ? empty : unit), domex::Error);
  if (comm.size() > 1) {
    EXPECT_THROW(domex::Multisection(comm, comm.rank() == bad ? other : unit), domex::Error);
  }
  EXPECT_THROW(domex::Multisection(comm, unit, {.bins = comm.rank() == bad ? 1 : 256}), domex::Error);
  decomposition.rebalance(points);  // still usable
}

TEST(Multisection, ExtremeWeightsNeverOverflow) {
  domex::Comm comm{MPI_COMM_WORLD};
  for (auto method : methods) {
    SCOPED_TRACE(name(method));
    const auto points = uniform(2000, 60 + static_cast<std::uint64_t>(comm.rank()));
    const domex::MultisectionOptions options{.method = method, .samples_per_rank = 1024};
    domex::Multisection counted(comm, {{0, 0, 0}, {1, 1, 1}}, options);
    counted.rebalance(points);
    // All 1e308 (their sum overflows a double), all tiny, all zero: the cuts by count.
    for (double w : {1e308, std::numeric_limits<double>::max(), 1e-300, 4.9e-324, 0.0}) {
      domex::Multisection weighted(comm, {{0, 0, 0}, {1, 1, 1}}, options);
      weighted.rebalance(points, std::vector<double>(points.size(), w));
      if (method == domex::CutMethod::histogram) {  // exact: the same cuts
        const auto a = weighted.cuts(), b = counted.cuts();
        ASSERT_EQ(a.size(), b.size());
        for (std::size_t c = 0; c < a.size(); ++c) EXPECT_NEAR(a[c], b[c], 1e-9) << "weight " << w << " cut " << c;
      } else {  // sampled: as balanced
        EXPECT_LE(imbalance(comm, weighted, points), 1.3) << "weight " << w;
      }
    }
    // Huge and zero mixed: only the huge ones count.
    std::vector<double> cost(points.size());
    for (std::size_t i = 0; i < points.size(); ++i) cost[i] = points[i][0] < 0.5 ? 1e308 : 0.0;
    domex::Multisection mixed(comm, {{0, 0, 0}, {1, 1, 1}}, options);
    mixed.rebalance(points, cost);
    std::vector<double> units(cost.size());
    for (std::size_t i = 0; i < cost.size(); ++i) units[i] = cost[i] > 0 ? 1.0 : 0.0;
    EXPECT_LE(imbalance(comm, mixed, points, units), method == domex::CutMethod::histogram ? 1.05 : 1.3);
  }
}

/// Ring particles (Cartesian), r in [1, 2), denser in one quarter of phi.
std::vector<Point> ring_points(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Point> points(count);
  for (auto& p : points) {
    const double r = 1 + u(random);
    double phi = 2 * std::numbers::pi * u(random);
    if (u(random) < 0.4) phi *= 0.25;
    p = {r * std::cos(phi), r * std::sin(phi), 0.2 * u(random) - 0.1};
  }
  return points;
}

/// True if every rank holds exactly the same cuts (compared bit for bit).
bool same_cuts_everywhere(const domex::Comm& comm, const domex::Multisection& decomposition) {
  const auto cuts = decomposition.cuts();
  const auto all = comm.allgatherv<double>(cuts);
  for (int r = 0; r < comm.size(); ++r)
    if (!std::equal(cuts.begin(), cuts.end(), all.begin() + static_cast<std::ptrdiff_t>(r * cuts.size()),
                    [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }))
      return false;
  return true;
}

/// Every division of P over the axes worth trying: chosen, and all on one axis.
std::vector<std::array<int, 3>> layouts(int size) {
  return {{0, 0, 0}, {size, 1, 1}, {1, size, 1}, {1, 1, size}};
}

TEST(Multisection, EveryMethodBalancesClusteredAndRingInputOnEveryLayout) {
  domex::Comm comm{MPI_COMM_WORLD};
  if (comm.rank() == 0) std::printf("clustered seed 300 + rank, ring seed 400 + rank\n");
  const auto clumps = clustered(3000, 300 + static_cast<std::uint64_t>(comm.rank()));
  const auto ring = ring_points(3000, 400 + static_cast<std::uint64_t>(comm.rank()));
  for (const auto& divisions : layouts(comm.size())) {
    double global_imbalance[2] = {0, 0};
    for (auto method : methods) {
      // The same budget for both: the global method with every particle (exact).
      const domex::MultisectionOptions options{.divisions = divisions, .method = method, .total_samples = 1u << 20};
      domex::Multisection box(comm, {{0, 0, 0}, {1, 1, 1}}, options);
      auto cylinder_options = options;
      cylinder_options.geometry = domex::Geometry::cylindrical;
      domex::Multisection cylinder(comm, {{1, 0, -0.1}, {2, 0, 0.1}}, cylinder_options);
      box.rebalance(clumps);
      cylinder.rebalance(ring);
      SCOPED_TRACE(fmt_layout(divisions) + " " + name(method));
      EXPECT_TRUE(same_cuts_everywhere(comm, box));
      EXPECT_TRUE(same_cuts_everywhere(comm, cylinder));
      const double imbalances[2] = {imbalance(comm, box, clumps), imbalance(comm, cylinder, ring)};
      for (int n = 0; n < 2; ++n) {
        EXPECT_LE(imbalances[n], 1.05) << (n ? "ring" : "clustered");
        if (method == domex::CutMethod::global) {
          global_imbalance[n] = imbalances[n];
        } else {  // a scalable method: within 1 % of the global one on the same input and budget
          EXPECT_LE(imbalances[n], global_imbalance[n] + 0.01) << (n ? "ring" : "clustered");
        }
      }
    }
  }
}

TEST(Multisection, SampledGlobalCutsUseAPerRankBudget) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto points = clustered(5000, 500 + static_cast<std::uint64_t>(comm.rank()));
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}},
                                    {.method = domex::CutMethod::global, .samples_per_rank = 512});
  decomposition.rebalance(points);
  EXPECT_TRUE(same_cuts_everywhere(comm, decomposition));
  // One level is sorted per part count > 1; about 512 samples per rank arrive.
  const auto& stats = decomposition.stats();
  if (comm.size() == 1) {
    EXPECT_EQ(stats.samples_sorted, 0u);
  } else {
    EXPECT_GT(stats.samples_sorted, 0u);
    EXPECT_LE(stats.bytes_received, 600u * 32u * static_cast<unsigned>(comm.size()));
  }
  EXPECT_LE(imbalance(comm, decomposition, points), 1.25);
}

TEST(Multisection, SampledLevelsReceiveTheirPartsWorthOfSamples) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto points = clustered(5000, 550 + static_cast<std::uint64_t>(comm.rank()));
  const std::size_t per_part = 200;
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}},
                                    {.method = domex::CutMethod::sampled, .samples_per_rank = per_part});
  decomposition.rebalance(points);
  EXPECT_TRUE(same_cuts_everywhere(comm, decomposition));
  const auto d = decomposition.divisions();
  std::size_t parts = 0;
  for (int n : d) parts += n > 1 ? static_cast<std::size_t>(n) : 0;
  // Each level with n > 1 parts draws about per_part * n samples (stochastic
  // rounding: at most one more per rank); what a rank sorts grows with
  // nx + ny + nz, not with P.
  EXPECT_LE(decomposition.stats().samples_sorted, parts * per_part + 3u * static_cast<unsigned>(comm.size()));
  if (comm.size() > 1) {
    EXPECT_GT(decomposition.stats().samples_sorted, parts * per_part / 2);
  }
  EXPECT_LE(imbalance(comm, decomposition, points), 1.35);
}

TEST(Multisection, HistogramReceivesLittle) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto points = uniform(5000, 600 + static_cast<std::uint64_t>(comm.rank()));
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}}, {.periodic = {true, true, true}});
  decomposition.rebalance(points);
  decomposition.rebalance(points);  // the particles have not moved to their owners: some routing
  const auto& stats = decomposition.stats();
  EXPECT_EQ(stats.samples_sorted, 0u);
  EXPECT_LE(imbalance(comm, decomposition, points), 1.01);
  if (comm.size() == 1) {
    EXPECT_EQ(stats.rounds, 0);
  }
}

/// Brute force: every box that touches or overlaps `rank`'s within the
/// margin, periodic shifts included (the definition neighbours_of meets).
std::vector<int> brute_neighbours(const domex::Multisection& d, int size, int rank, double margin) {
  const domex::Box mine = d.box(rank);
  const domex::Box& domain = d.domain();
  std::array<bool, 3> periodic = d.options().periodic;
  if (d.geometry() == domex::Geometry::cylindrical) periodic[1] = true;
  std::vector<int> result;
  for (int other = 0; other < size; ++other) {
    if (other == rank) continue;
    const domex::Box theirs = d.box(other);
    bool touches = true;
    for (int a = 0; a < 3 && touches; ++a) {
      const double tolerance = 1e-12 * domain.extent(a) + margin;
      const auto overlaps = [&](double shift) {
        return theirs.lo[a] + shift <= mine.hi[a] + tolerance && mine.lo[a] - tolerance <= theirs.hi[a] + shift;
      };
      const double length = domain.extent(a);
      touches = overlaps(0) || (periodic[a] && (overlaps(length) || overlaps(-length)));
    }
    if (touches) result.push_back(other);
  }
  return result;
}

TEST(Multisection, NeighboursFromTheCutsEqualTheBruteForceScan) {
  domex::Comm comm{MPI_COMM_WORLD};
  if (comm.rank() == 0) std::printf("random cut sets: seed 700 + trial\n");
  for (int trial = 0; trial < 12; ++trial) {
    std::mt19937_64 random(700 + static_cast<std::uint64_t>(trial));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const bool cylindrical = trial % 3 == 2;
    const double margin = trial % 2 ? 0.0 : 0.05 * u(random);
    domex::MultisectionOptions options{.divisions = layouts(comm.size())[static_cast<std::size_t>(trial % 4)],
                                       .periodic = {trial % 2 == 0, trial % 4 < 2, false},
                                       .geometry = cylindrical ? domex::Geometry::cylindrical : domex::Geometry::cartesian,
                                       .neighbour_margin = margin};
    domex::Multisection d(comm, cylindrical ? domex::Box{{1, 0, 0}, {2, 0, 1}} : domex::Box{{0, 0, 0}, {1, 1, 1}},
                          options);
    // Random cuts: a random (same on every rank) skewed distribution.
    const double skew = 1 + 3 * u(random);
    std::vector<Point> points;
    std::mt19937_64 local(random() + static_cast<std::uint64_t>(comm.rank()));
    for (int n = 0; n < 400; ++n) {
      const double a = std::pow(u(local), skew), b = u(local), c = std::pow(u(local), 1 / skew);
      if (cylindrical) {
        const double r = 1 + a, phi = 2 * std::numbers::pi * b;
        points.push_back({r * std::cos(phi), r * std::sin(phi), c});
      } else {
        points.push_back({a, b, c});
      }
    }
    d.rebalance(points);
    for (int r = 0; r < comm.size(); ++r) {
      const auto fast = d.neighbours_of(r);
      EXPECT_EQ(fast, brute_neighbours(d, comm.size(), r, margin)) << "trial " << trial << " rank " << r;
      if (r == comm.rank()) {
        EXPECT_EQ(d.neighbours(), fast);
      }
    }
  }
}

TEST(Multisection, OwnersFastPathGivesTheSameDestinationsAsTheFullSearch) {
  domex::Comm comm{MPI_COMM_WORLD};
  for (bool cylindrical : {false, true}) {
    domex::MultisectionOptions options{.periodic = {true, false, true},
                                       .geometry = cylindrical ? domex::Geometry::cylindrical : domex::Geometry::cartesian};
    domex::Multisection d(comm, cylindrical ? domex::Box{{0.5, 0, 0}, {2, 0, 1}} : domex::Box{{0, 0, 0}, {1, 1, 1}},
                          options);
    d.rebalance(cylindrical ? ring_points(500, 800 + static_cast<std::uint64_t>(comm.rank()))
                            : clustered(500, 800 + static_cast<std::uint64_t>(comm.rank())));
    std::vector<Point> points = cylindrical ? ring_points(2000, 900) : uniform(2000, 900);
    // Adversarial: exactly on every cut and box corner, on the periodic seam,
    // just below it, NaN, infinite, outside a non-periodic axis, -0.
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    for (int r = 0; r < comm.size(); ++r) {
      const domex::Box b = d.box(r);
      for (double x : {b.lo[0], b.hi[0], 0.5 * (b.lo[0] + b.hi[0])})
        for (double y : {b.lo[1], b.hi[1], 0.5 * (b.lo[1] + b.hi[1])})
          for (double z : {b.lo[2], b.hi[2]}) {
            if (cylindrical) {  // on the wedge's edges and arcs, and a hair beside them
              for (double dphi : {0.0, 1e-15, -1e-15, 1e-10, -1e-10})
                points.push_back({x * std::cos(y + dphi), x * std::sin(y + dphi), z});
            } else {
              points.push_back({x, y, z});
            }
          }
    }
    for (const Point& p : std::initializer_list<Point>{{1.0, 0.5, 0.5}, {0.0, 0.5, 0.5}, {-1e-17, 0.5, 0.5},
                                                       {std::nextafter(1.0, 0.0), 0.5, 0.5}, {0.5, 1.0, 0.5},
                                                       {0.5, 0.5, 1.0}, {-0.0, -0.0, -0.0}, {nan, 0.5, 0.5},
                                                       {0.5, nan, 0.5}, {inf, 0.5, 0.5}, {0.5, -inf, 0.5},
                                                       {0.5, 0.5, 7.0}, {0.5, 1.5, 0.5}, {1.5, -1e-300, 0.5},
                                                       {1.5, 0.0, 0.5}, {-1.5, -0.0, 0.5}, {0.0, 0.0, 0.5}})
      points.push_back(p);
    std::vector<int> fast(points.size());
    d.owners(points, fast);
    for (std::size_t i = 0; i < points.size(); ++i)
      EXPECT_EQ(fast[i], d.try_owner(points[i]))
          << "(" << points[i][0] << ", " << points[i][1] << ", " << points[i][2] << ")";
  }
}

}  // namespace

namespace {

/// A user's own particle type: the position is one member among others.
struct UserParticle {
  long id;
  double mass;
  domex::Point position;
  float temperature;
};

TEST(Multisection, ParticlesReadThroughAProjectionGiveTheSameCuts) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto points = clustered(3000, 77 + static_cast<std::uint64_t>(comm.rank()));
  std::vector<UserParticle> particles;
  std::vector<double> weights;
  for (std::size_t i = 0; i < points.size(); ++i) {
    particles.push_back({static_cast<long>(i), 1.0, points[i], 0.5f});
    weights.push_back(1.0 + static_cast<double>(i % 3));
  }
  domex::Multisection copied(comm, {{0, 0, 0}, {1, 1, 1}});
  copied.rebalance(points, weights);
  domex::Multisection by_member(comm, {{0, 0, 0}, {1, 1, 1}});
  by_member.rebalance(std::span<const UserParticle>(particles), &UserParticle::position, weights);
  domex::Multisection by_lambda(comm, {{0, 0, 0}, {1, 1, 1}});
  by_lambda.rebalance(std::span<const UserParticle>(particles),
                      [](const UserParticle& p) { return p.position; }, weights);
  EXPECT_EQ(by_member.cuts(), copied.cuts());
  EXPECT_EQ(by_lambda.cuts(), copied.cuts());
}

}  // namespace

namespace {

// Cuts saved with cuts() and restored into a fresh decomposition give the
// same owners and neighbours; bad cuts are an error on every rank and leave
// the object as it was.
TEST(Multisection, RestoreSavedCuts) {
  domex::Comm comm{MPI_COMM_WORLD};
  const domex::Box domain{{0, 0, 0}, {1, 1, 1}};
  const auto particles = clustered(5000, 3 + static_cast<std::uint64_t>(comm.rank()));
  domex::Multisection balanced(comm, domain);
  balanced.rebalance(particles);
  domex::Multisection fresh(comm, domain);
  fresh.restore(balanced.cuts());
  EXPECT_EQ(fresh.cuts(), balanced.cuts());
  EXPECT_EQ(fresh.neighbours(), balanced.neighbours());
  for (const auto& p : particles) ASSERT_EQ(fresh.owner(p), balanced.owner(p));
  auto bad = balanced.cuts();
  const auto before = fresh.cuts();
  bad.pop_back();
  EXPECT_THROW(fresh.restore(bad), domex::Error);
  bad = balanced.cuts();
  if (comm.rank() == comm.size() - 1) bad[0] = -1;  // one rank's copy does not span the domain
  EXPECT_THROW(fresh.restore(bad), domex::Error);
  EXPECT_EQ(fresh.cuts(), before);
}

}  // namespace

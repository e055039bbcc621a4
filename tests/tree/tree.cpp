// SPDX-License-Identifier: BSD-3-Clause
#include <domex/decompose/multisection.hpp>
#include <domex/migrate/migrate.hpp>
#include <domex/tree/tree.hpp>

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

namespace {

using domex::Point;

enum class Distribution { uniform, plummer, ring };

/// Particles of one global set, decomposed by multisection and migrated to
/// their owners. The set is generated identically on every rank from `seed`,
/// rank r first keeps ids with id % P == r.
struct Particles {
  std::vector<Point> x;
  std::vector<double> m;
  std::vector<std::uint64_t> id;
  domex::Box root;
};

domex::Box root_of(Distribution distribution) {
  switch (distribution) {
    case Distribution::uniform: return {{0, 0, 0}, {1, 1, 1}};
    case Distribution::plummer: return {{-10, -10, -10}, {10, 10, 10}};
    case Distribution::ring: return {{-2, -2, -2}, {2, 2, 2}};
  }
  return {};
}

Particles make_particles(domex::Comm& comm, Distribution distribution, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Particles p;
  for (std::size_t i = 0; i < n; ++i) {
    Point x;
    if (distribution == Distribution::uniform) {
      x = {u(random), u(random), u(random)};
    } else if (distribution == Distribution::ring) {
      // Planetary ring as domex-bench tree's: radius 1, width 0.1, thickness 0.001.
      const double r = std::sqrt(0.95 * 0.95 + (1.05 * 1.05 - 0.95 * 0.95) * u(random));
      const double phi = 2 * 3.141592653589793 * u(random);
      x = {r * std::cos(phi), r * std::sin(phi), 0.001 * (u(random) - 0.5)};
    } else {
      // Plummer sphere in Henon units (scale radius 3 pi / 16), truncated at
      // r = 9 inside the root box [-10, 10)^3.
      double r;
      do r = 3 * 3.141592653589793 / 16 / std::sqrt(std::pow(std::max(u(random), 1e-12), -2.0 / 3.0) - 1.0);
      while (r > 9);
      const double cos_theta = 2 * u(random) - 1, phi = 2 * 3.141592653589793 * u(random);
      const double s = std::sqrt(1 - cos_theta * cos_theta);
      x = {r * s * std::cos(phi), r * s * std::sin(phi), r * cos_theta};
    }
    if (i % static_cast<std::size_t>(comm.size()) != static_cast<std::size_t>(comm.rank())) continue;
    p.x.push_back(x);
    p.m.push_back(1.0 / static_cast<double>(n));
    p.id.push_back(i);
  }
  domex::Multisection domains(comm, root_of(distribution));
  domains.rebalance(p.x);
  domex::MigrationPlan plan(comm, domains, p.x);
  domex::migrate(plan, p.x, p.m, p.id);
  p.root = root_of(distribution);
  return p;
}

constexpr double softening = 1.0 / 32;

// Under AddressSanitizer (CI's sanitizer job) the tree runs ~20x slower: the
// sets shrink and the Plummer accuracy check at 1e5 is left to the Release job.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif

/// Exact fp64 direct sums for the particles with id % stride == 0: (local
/// index, acceleration).
std::vector<std::pair<std::size_t, Point>> direct_sums(const domex::Comm& comm, const Particles& p, std::size_t stride) {
  const auto all_x = comm.allgatherv(std::span<const Point>(p.x));
  const auto all_m = comm.allgatherv(std::span<const double>(p.m));
  std::vector<std::pair<std::size_t, Point>> exact;
  for (std::size_t i = 0; i < p.x.size(); ++i) {
    if (p.id[i] % stride != 0) continue;
    Point sum{0, 0, 0};
    for (std::size_t j = 0; j < all_x.size(); ++j) {
      const double dx = all_x[j][0] - p.x[i][0], dy = all_x[j][1] - p.x[i][1], dz = all_x[j][2] - p.x[i][2];
      const double r2 = dx * dx + dy * dy + dz * dz + softening * softening;
      const double f = all_m[j] / (r2 * std::sqrt(r2));
      sum[0] += f * dx, sum[1] += f * dy, sum[2] += f * dz;
    }
    exact.emplace_back(i, sum);
  }
  return exact;
}

/// Per-particle |da| / |a| of the sampled particles, all ranks, sorted.
std::vector<double> relative_errors(const domex::Comm& comm, const std::vector<std::pair<std::size_t, Point>>& exact,
                                    const std::vector<Point>& a) {
  std::vector<double> errors;
  for (const auto& [i, e] : exact) {
    const double d0 = a[i][0] - e[0], d1 = a[i][1] - e[1], d2 = a[i][2] - e[2];
    errors.push_back(std::sqrt((d0 * d0 + d1 * d1 + d2 * d2) / (e[0] * e[0] + e[1] * e[1] + e[2] * e[2])));
  }
  auto all = comm.allgatherv(std::span<const double>(errors));
  std::sort(all.begin(), all.end());
  return all;
}

/// |da| / rms |a| of the sampled particles (rms over all samples), all ranks, sorted.
std::vector<double> rms_errors(const domex::Comm& comm, const std::vector<std::pair<std::size_t, Point>>& exact,
                               const std::vector<Point>& a) {
  std::vector<std::array<double, 2>> sampled;  // |da|^2, |a|^2
  for (const auto& [i, e] : exact) {
    const double d0 = a[i][0] - e[0], d1 = a[i][1] - e[1], d2 = a[i][2] - e[2];
    sampled.push_back({d0 * d0 + d1 * d1 + d2 * d2, e[0] * e[0] + e[1] * e[1] + e[2] * e[2]});
  }
  const auto all = comm.allgatherv(std::span<const std::array<double, 2>>(sampled));
  double mean_a2 = 0;
  for (const auto& s : all) mean_a2 += s[1] / static_cast<double>(all.size());
  std::vector<double> errors;
  for (const auto& s : all) errors.push_back(std::sqrt(s[0] / mean_a2));
  std::sort(errors.begin(), errors.end());
  return errors;
}

double quantile(const std::vector<double>& sorted, double q) {
  return sorted.empty() ? 0.0 : sorted[std::min(sorted.size() - 1, static_cast<std::size_t>(q * static_cast<double>(sorted.size())))];
}

std::vector<Point> tree_forces(domex::Comm& comm, const Particles& p, domex::TreeOptions options,
                               domex::TreeStats* stats = nullptr, domex::TreeOptions* used = nullptr) {
  options.root = p.root;
  domex::TreeForce tree(comm, options);
  domex::Profile profile;
  std::vector<Point> a(p.x.size());
  tree.compute(p.x, p.m, a, profile);
  if (stats) *stats = tree.stats();
  if (used) *used = tree.options();
  return a;
}

bool bitwise_equal(const std::vector<Point>& a, const std::vector<Point>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(Point)) == 0);
}

/// Sum over ranks of the interactions over the sum of targets.
double interactions_per_particle(const domex::Comm& comm, const domex::TreeStats& stats) {
  const double interactions =
      comm.allreduce(static_cast<double>(stats.epj_interactions + stats.spj_interactions), MPI_SUM);
  const double targets = comm.allreduce(static_cast<double>(stats.targets), MPI_SUM);
  return targets > 0 ? interactions / targets : 0.0;
}

struct ErrorCase {
  Distribution distribution;
  std::size_t n;
  double median, p99;  // FDPS's at theta 0.5 with monopoles, per-particle measure
};

TEST(TreeForce, ErrorAgainstDirectSumNoWorseThanFdps) {
  domex::Comm comm{MPI_COMM_WORLD};
  // FDPS's figures are for N = 1e5. A uniform set's error hardly depends on
  // N, so 2e4 particles test it; a Plummer sphere's does (at 2e4 the p99 is
  // ~1.5x that at 1e5), so it is tested at 1e5. Three configurations:
  //  - monopoles, cell test, theta 0.5: FDPS's figures;
  //  - quadrupoles, cell test, theta 0.5: a third of them (~3-4x below at
  //    the same cost: the truncation error falls only from (b/d)^2 to (b/d)^3);
  //  - quadrupoles, particles (b_max) test, theta 0.28: a tenth of them (the
  //    issue's quadrupole target), for at most 2.2x the interactions of the
  //    cell test at theta 0.5 (1e5 particles, np 1: 1.8x uniform, 1.9x Plummer
  //    with the cell test's length = the edge; 1.15x the edge: less).
  struct Configuration {
    const char* name;
    domex::TreeOptions options;
    double bound_factor;
  };
  const Configuration configurations[] = {
      {"monopole", {.softening = softening}, 1.0},
      {"quadrupole", {.quadrupole = true, .softening = softening}, 1.0 / 3},
      {"quadrupole, particles test, theta 0.28",
       {.theta = 0.28, .opening = domex::Opening::particles, .quadrupole = true, .softening = softening},
       1.0 / 10}};
  const ErrorCase cases[] = {{Distribution::uniform, 20000, 4.1e-3, 9.0e-3}, {Distribution::plummer, 100000, 4.8e-4, 2.5e-3}};
  for (const auto& c : cases) {
    if (sanitized && c.distribution == Distribution::plummer) continue;
    const std::size_t stride = c.n / 2000;  // 2000 sampled particles
    const auto p = make_particles(comm, c.distribution, c.n, 41);
    const auto exact = direct_sums(comm, p, stride);
    double cell_cost = 0;
    for (const auto& configuration : configurations) {
      domex::TreeStats stats;
      const auto a = tree_forces(comm, p, configuration.options, &stats);
      const auto errors = relative_errors(comm, exact, a);
      ASSERT_EQ(errors.size(), c.n / stride);
      const double median = quantile(errors, 0.5), p99 = quantile(errors, 0.99);
      const double bound_median = c.median * configuration.bound_factor, bound_p99 = c.p99 * configuration.bound_factor;
      const double cost = interactions_per_particle(comm, stats);
      if (configuration.options.opening == domex::Opening::cell) cell_cost = cost;
      if (comm.rank() == 0)
        std::printf("%s %s: median %.3g p99 %.3g (bounds %.3g %.3g), %.0f interactions/particle\n",
                    c.distribution == Distribution::uniform ? "uniform" : "plummer", configuration.name, median, p99,
                    bound_median, bound_p99, cost);
      EXPECT_LE(median, bound_median) << configuration.name;
      EXPECT_LE(p99, bound_p99) << configuration.name;
      if (configuration.options.opening == domex::Opening::particles) {
        EXPECT_LE(cost, 2.2 * cell_cost);
      }
    }
  }
}

// The p99 of a Plummer sphere is set by the ~20 sampled targets nearest its
// centre (|a| -> 0), so it varies with the seed: with FDPS's test (length =
// the cell's edge) it ranged over 1.9e-3..2.9e-3 (seeds 1, 2, 3, 7, 41) around
// FDPS's 2.5e-3. Seed 7 was the worst; the default test must hold there too.
TEST(TreeForce, PlummerMonopoleErrorHoldsForAnotherSeed) {
  if (sanitized) GTEST_SKIP() << "1e5 particles: left to the Release job";
  domex::Comm comm{MPI_COMM_WORLD};
  const std::size_t n = 100000, stride = n / 2000;
  const auto p = make_particles(comm, Distribution::plummer, n, 7);
  const auto exact = direct_sums(comm, p, stride);
  const auto errors = relative_errors(comm, exact, tree_forces(comm, p, {.softening = softening}));
  ASSERT_EQ(errors.size(), n / stride);
  const double median = quantile(errors, 0.5), p99 = quantile(errors, 0.99);
  if (comm.rank() == 0) std::printf("plummer monopole, seed 7: median %.3g p99 %.3g\n", median, p99);
  EXPECT_LE(median, 4.8e-4);
  EXPECT_LE(p99, 2.5e-3);
}

TEST(TreeForce, EveryLetModeGivesBitwiseIdenticalForces) {
  domex::Comm comm{MPI_COMM_WORLD};
  for (Distribution distribution : {Distribution::uniform, Distribution::plummer})
    for (const auto& [quadrupole, opening] :
         {std::pair{false, domex::Opening::cell}, std::pair{true, domex::Opening::cell},
          std::pair{true, domex::Opening::particles}}) {
      const auto p = make_particles(comm, distribution, sanitized ? 3000 : 12000, 43);
      domex::TreeStats reference_stats;
      const auto reference = tree_forces(
          comm, p, {.opening = opening, .quadrupole = quadrupole, .let = domex::LetMode::alltoallv, .softening = softening},
          &reference_stats);
      for (auto mode : {domex::LetMode::p2p_exact, domex::LetMode::p2p_fast, domex::LetMode::sparse})
        for (auto algorithm : {domex::Algorithm::automatic, domex::Algorithm::nbx}) {
          if (mode != domex::LetMode::sparse && algorithm != domex::Algorithm::automatic) continue;
          domex::TreeStats stats;
          const auto a = tree_forces(comm, p,
                                     {.opening = opening,
                                      .quadrupole = quadrupole,
                                      .let = mode,
                                      .sparse_algorithm = algorithm,
                                      .softening = softening},
                                     &stats);
          EXPECT_TRUE(bitwise_equal(a, reference))
              << to_string(mode) << " quadrupole " << quadrupole << " opening " << to_string(opening);
          EXPECT_EQ(stats.epj_interactions, reference_stats.epj_interactions);
          EXPECT_EQ(stats.spj_interactions, reference_stats.spj_interactions);
          EXPECT_LE(stats.let_messages_sent, reference_stats.let_messages_sent);
        }
      // Nor on the number of threads (sample sort, tree links and moments
      // level by level, LETs walked as subtrees, parallel walk), in any LET mode.
      for (int threads : {1, 3})
        for (auto mode : {domex::LetMode::alltoallv, domex::LetMode::p2p_fast}) {
          domex::TreeStats stats;
          EXPECT_TRUE(bitwise_equal(tree_forces(comm, p,
                                                {.opening = opening,
                                                 .quadrupole = quadrupole,
                                                 .let = mode,
                                                 .softening = softening,
                                                 .threads = threads},
                                                &stats),
                                    reference))
              << threads << " threads, " << to_string(mode);
          EXPECT_EQ(stats.let_items_sent, reference_stats.let_items_sent) << threads << " threads, " << to_string(mode);
          EXPECT_EQ(stats.spj_interactions, reference_stats.spj_interactions);
        }
    }
}

TEST(TreeForce, AgreesWithOneRankWithinTreeError) {
  // Bitwise identity holds across LET modes at one rank count; across rank
  // counts the groups and LETs differ, so forces agree to the tree's error.
  domex::Comm comm{MPI_COMM_WORLD};
  domex::Comm self{MPI_COMM_SELF};
  const auto p = make_particles(comm, Distribution::uniform, 12000, 47);
  const auto a = tree_forces(comm, p, {.softening = softening});
  // All particles on this rank alone, in the same order as a gather gives.
  Particles all{comm.allgatherv(std::span<const Point>(p.x)), comm.allgatherv(std::span<const double>(p.m)), {}, p.root};
  const auto single = tree_forces(self, all, {.softening = softening});
  std::size_t offset = 0;
  {
    const auto counts = comm.allgather(p.x.size());
    for (int r = 0; r < comm.rank(); ++r) offset += counts[static_cast<std::size_t>(r)];
  }
  std::vector<double> differences;
  for (std::size_t i = 0; i < p.x.size(); ++i) {
    const Point& s = single[offset + i];
    const double d0 = a[i][0] - s[0], d1 = a[i][1] - s[1], d2 = a[i][2] - s[2];
    differences.push_back(std::sqrt((d0 * d0 + d1 * d1 + d2 * d2) / (s[0] * s[0] + s[1] * s[1] + s[2] * s[2])));
  }
  if (comm.size() == 1) {
    EXPECT_TRUE(bitwise_equal(a, single));
  }
  auto all_differences = comm.allgatherv(std::span<const double>(differences));
  std::sort(all_differences.begin(), all_differences.end());
  if (comm.rank() == 0)
    std::printf("np %d vs 1 rank: median %.3g p99 %.3g max %.3g\n", comm.size(), quantile(all_differences, 0.5),
                quantile(all_differences, 0.99), all_differences.back());
  EXPECT_LE(quantile(all_differences, 0.5), 4.1e-3);
  EXPECT_LE(quantile(all_differences, 0.99), 1.2e-2);
}

TEST(TreeForce, ListReuse) {
  domex::Comm comm{MPI_COMM_WORLD};
  auto p = make_particles(comm, Distribution::plummer, 10000, 53);
  const auto plain = tree_forces(comm, p, {.softening = softening});
  // reuse = 1 builds every call: the same as a plain walk, every call.
  {
    domex::TreeForce tree(comm, {.reuse = 1, .softening = softening, .root = p.root});
    domex::Profile profile;
    std::vector<Point> a(p.x.size());
    for (int call = 0; call < 2; ++call) {
      tree.compute(p.x, p.m, a, profile);
      EXPECT_TRUE(tree.stats().lists_built);
      EXPECT_TRUE(bitwise_equal(a, plain));
    }
  }
  // reuse = 3: the building call is the plain walk; a re-use call with
  // unchanged particles gives the same bits; with moved particles it stays
  // within the tree error of a fresh walk.
  domex::TreeForce tree(comm, {.reuse = 3, .softening = softening, .root = p.root});
  domex::Profile profile;
  std::vector<Point> a(p.x.size());
  tree.compute(p.x, p.m, a, profile);
  EXPECT_TRUE(tree.stats().lists_built);
  EXPECT_TRUE(bitwise_equal(a, plain));
  tree.compute(p.x, p.m, a, profile);
  EXPECT_FALSE(tree.stats().lists_built);
  EXPECT_TRUE(bitwise_equal(a, plain));
  EXPECT_EQ(profile.local_seconds("traverse") >= 0, true);
  std::mt19937_64 random(59 + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> u(-1e-4, 1e-4);
  for (Point& x : p.x)
    for (double& v : x) v += u(random);  // the set lies within |x| < 9, the root is [-10, 10)
  tree.compute(p.x, p.m, a, profile);
  EXPECT_FALSE(tree.stats().lists_built);
  const auto fresh = tree_forces(comm, p, {.softening = softening});
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d0 = a[i][0] - fresh[i][0], d1 = a[i][1] - fresh[i][1], d2 = a[i][2] - fresh[i][2];
    const double norm = std::sqrt(fresh[i][0] * fresh[i][0] + fresh[i][1] * fresh[i][1] + fresh[i][2] * fresh[i][2]);
    worst = std::max(worst, std::sqrt(d0 * d0 + d1 * d1 + d2 * d2) / norm);
  }
  EXPECT_LT(worst, 2e-2);
  // The fourth call builds again.
  tree.compute(p.x, p.m, a, profile);
  EXPECT_TRUE(tree.stats().lists_built);
  EXPECT_TRUE(bitwise_equal(a, fresh));
  // A re-use call with another particle count is an error on every rank.
  tree.compute(p.x, p.m, a, profile);
  std::vector<Point> fewer_x(p.x.begin(), p.x.end() - (comm.rank() == 0 && !p.x.empty() ? 1 : 0));
  std::vector<double> fewer_m(fewer_x.size(), 1.0);
  std::vector<Point> fewer_a(fewer_x.size());
  EXPECT_THROW(tree.compute(fewer_x, fewer_m, fewer_a, profile), domex::Error);
}

TEST(TreeForce, PositionOutsideTheRootIsAnErrorOnEveryRankAndTheObjectStaysUsable) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto p = make_particles(comm, Distribution::uniform, 2000, 61);
  domex::TreeForce tree(comm, {.softening = softening, .root = p.root});
  domex::Profile profile;
  auto bad = p.x;
  if (comm.rank() == comm.size() - 1) bad.push_back({0.5, 1.25, 0.5});
  std::vector<double> m(bad.size(), 1.0 / 2000);
  std::vector<Point> a(bad.size());
  try {
    tree.compute(bad, m, a, profile);
    ADD_FAILURE() << "no error";
  } catch (const domex::Error& error) {
    if (comm.rank() == comm.size() - 1) {
      EXPECT_NE(std::string(error.what()).find("1.25"), std::string::npos) << error.what();
    }
  }
  std::vector<Point> good(p.x.size());
  tree.compute(p.x, p.m, good, profile);
  EXPECT_TRUE(bitwise_equal(good, tree_forces(comm, p, {.softening = softening})));
}

TEST(TreeForce, UserKernelSeesTheSameListsAsTheGravityKernel) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto p = make_particles(comm, Distribution::plummer, 8000, 67);
  domex::TreeStats stats;
  const auto builtin = tree_forces(comm, p, {.softening = softening}, &stats);
  domex::TreeForce tree(comm, {.softening = softening, .root = p.root});
  domex::Profile profile;
  std::vector<Point> a(p.x.size());
  std::vector<std::size_t> calls(static_cast<std::size_t>(tree.threads()), 0);
  std::size_t targets_seen = 0;
  // fp64 gravity as a user kernel.
  const double eps2 = softening * softening;
  tree.compute(p.x, p.m, a,
               [&](const domex::TargetGroup& group, std::span<const domex::Epj> epj, std::span<const domex::Spj> spj) {
                 for (std::size_t i = 0; i < group.positions.size(); ++i) {
                   EXPECT_EQ(group.positions[i], p.x[group.indices[i]]);
                   auto add = [&](const Point& x, double m) {
                     const double dx = x[0] - group.positions[i][0], dy = x[1] - group.positions[i][1],
                                  dz = x[2] - group.positions[i][2];
                     const double r2 = dx * dx + dy * dy + dz * dz + eps2;
                     const double f = m / (r2 * std::sqrt(r2));
                     group.accelerations[i][0] += f * dx, group.accelerations[i][1] += f * dy,
                         group.accelerations[i][2] += f * dz;
                   };
                   for (const auto& j : epj) add(j.position, j.mass);
                   for (const auto& j : spj) add(j.centre, j.mass);
                 }
#pragma omp atomic
                 targets_seen += group.positions.size();
               },
               profile);
  EXPECT_EQ(targets_seen, p.x.size());
  EXPECT_EQ(tree.stats().epj_interactions, stats.epj_interactions);
  EXPECT_EQ(tree.stats().spj_interactions, stats.spj_interactions);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d0 = a[i][0] - builtin[i][0], d1 = a[i][1] - builtin[i][1], d2 = a[i][2] - builtin[i][2];
    const double norm = std::sqrt(a[i][0] * a[i][0] + a[i][1] * a[i][1] + a[i][2] * a[i][2]);
    ASSERT_LT(std::sqrt(d0 * d0 + d1 * d1 + d2 * d2), 1e-4 * norm) << i;
  }
}

TEST(TreeForce, RanksWithoutParticlesAndEveryModeAgree) {
  domex::Comm comm{MPI_COMM_WORLD};
  // Everything on rank 0 (no decomposition): the others have nothing.
  Particles p;
  p.root = root_of(Distribution::uniform);
  if (comm.rank() == 0) {
    std::mt19937_64 random(71);
    std::uniform_real_distribution<double> u(0, 1);
    for (int i = 0; i < 3000; ++i) p.x.push_back({u(random), u(random), u(random)}), p.m.push_back(1.0 / 3000);
  }
  const auto reference = tree_forces(comm, p, {.let = domex::LetMode::alltoallv, .softening = softening});
  for (auto mode : {domex::LetMode::p2p_exact, domex::LetMode::p2p_fast, domex::LetMode::sparse})
    EXPECT_TRUE(bitwise_equal(tree_forces(comm, p, {.let = mode, .softening = softening}), reference));
  for (const Point& a : reference)
    for (double v : a) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace

namespace {

// Every source within search_radius of a target reaches the near kernel, with
// its velocity, in every LET mode, including partners on other ranks: the
// pairs found equal a brute-force count over the allgathered set.
TEST(TreeForce, NearKernelSeesEveryPartnerWithinTheSearchRadius) {
  domex::Comm comm(MPI_COMM_WORLD);
  const std::size_t n = sanitized ? 3000 : 20000;
  const Particles p = make_particles(comm, Distribution::uniform, n, 17);
  // Velocity encodes the id, so the kernel can check it travelled with the particle.
  std::vector<Point> v(p.x.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = {static_cast<double>(p.id[i]), 0.5, -1.0};
  const double radius = 0.03;
  const auto all_x = comm.allgatherv(std::span<const Point>(p.x));
  std::size_t expected = 0;
  for (const Point& xi : p.x)
    for (const Point& xj : all_x) {
      const double dx = xi[0] - xj[0], dy = xi[1] - xj[1], dz = xi[2] - xj[2];
      const double d2 = dx * dx + dy * dy + dz * dz;
      expected += d2 > 0 && d2 < radius * radius;
    }
  for (auto let : {domex::LetMode::alltoallv, domex::LetMode::p2p_exact, domex::LetMode::p2p_fast, domex::LetMode::sparse}) {
    domex::TreeForce tree(comm, {.theta = 0.7, .let = let, .search_radius = radius, .threads = 2, .root = p.root});
    std::vector<std::size_t> found(static_cast<std::size_t>(tree.threads()) + 64, 0);
    std::vector<int> bad_velocity(found.size(), 0);
    std::vector<Point> a(p.x.size());
    domex::Profile profile;
    const domex::NearKernel near = [&](const domex::TargetGroup& group, const domex::NearSources& s) {
      std::size_t pairs = 0;
      int bad = 0;
      for (std::size_t i = 0; i < group.positions.size(); ++i)
        for (std::size_t r = 0; r < s.ranges.size(); r += 2)
          for (std::uint32_t k = s.ranges[r]; k < s.ranges[r + 1]; ++k) {
            const double dx = group.positions[i][0] - s.x[k], dy = group.positions[i][1] - s.y[k],
                         dz = group.positions[i][2] - s.z[k];
            const double d2 = dx * dx + dy * dy + dz * dz;
            if (d2 > 0 && d2 < radius * radius) {
              ++pairs;
              bad += s.velocities[k][1] != 0.5 || s.velocities[k][2] != -1.0;
            }
          }
      const auto slot = static_cast<std::size_t>(omp_get_thread_num());
#pragma omp atomic
      found[slot] += pairs;
#pragma omp atomic
      bad_velocity[slot] += bad;
    };
    tree.compute(p.x, p.m, v, a, near, profile);
    std::size_t total = 0;
    int bad = 0;
    for (std::size_t t = 0; t < found.size(); ++t) total += found[t], bad += bad_velocity[t];
    EXPECT_EQ(total, expected) << "LET mode " << domex::to_string(let);
    EXPECT_EQ(bad, 0) << "LET mode " << domex::to_string(let);
  }
}

}  // namespace

namespace {

// Merged groups: fewer, larger target groups; forces stay within the FDPS
// error bounds and bitwise the same for every LET mode.
TEST(TreeForce, MergedGroupsKeepAccuracyAndLetModeIdentity) {
  domex::Comm comm(MPI_COMM_WORLD);
  const Particles p = make_particles(comm, Distribution::uniform, sanitized ? 4000 : 30000, 23);
  domex::TreeStats plain_stats, merged_stats;
  (void)tree_forces(comm, p, {.merge_groups = false, .softening = softening, .threads = 1}, &plain_stats);
  const auto merged = tree_forces(comm, p, {.merge_groups = true, .softening = softening, .threads = 1}, &merged_stats);
  EXPECT_LE(merged_stats.groups, plain_stats.groups);
  const auto errors = relative_errors(comm, direct_sums(comm, p, 7), merged);
  EXPECT_LE(quantile(errors, 0.5), 4.1e-3);
  EXPECT_LE(quantile(errors, 0.99), 9.0e-3);
  for (auto let : {domex::LetMode::alltoallv, domex::LetMode::p2p_exact, domex::LetMode::sparse})
    EXPECT_TRUE(bitwise_equal(tree_forces(comm, p, {.merge_groups = true, .let = let, .softening = softening, .threads = 1}), merged))
        << domex::to_string(let);
}

// The kernels work in fp32, the quadrupole term with 1/s^5: in a problem's
// own unit, lengths of 1e7 or 1e-9 would take it out of fp32's range (1/s^5
// subnormal or infinite) unless the term is computed in a unit of the
// root's size. (The monopole kernel's m / s^3 has less range to spare: at
// 2^40 it is subnormal far from a Plummer sphere of 2e4 unit masses.)
// Lengths scaled by a power of two (the root, the positions and the
// softening; a power of 4 squared, so that even the reciprocal square root
// estimate scales exactly) must scale the forces by its inverse square,
// bitwise, with monopoles and with quadrupoles, at np 1-8.
TEST(TreeForce, ForcesScaleExactlyWithTheUnitOfLength) {
  domex::Comm comm(MPI_COMM_WORLD);
  const Particles p = make_particles(comm, Distribution::plummer, sanitized ? 3000 : 20000, 5);
  for (bool quadrupole : {false, true}) {
    const domex::TreeOptions options{.quadrupole = quadrupole, .softening = softening, .threads = 1};
    const auto unit = tree_forces(comm, p, options);
    for (int power : {24, -30}) {
      const double length = std::ldexp(1.0, power), force = std::ldexp(1.0, -2 * power);
      Particles scaled = p;
      for (auto& x : scaled.x)
        for (double& c : x) c *= length;
      for (int a = 0; a < 3; ++a) scaled.root.lo[a] *= length, scaled.root.hi[a] *= length;
      domex::TreeOptions scaled_options = options;
      scaled_options.softening *= length;
      auto a = tree_forces(comm, scaled, scaled_options);
      std::size_t differ = 0;
      for (std::size_t i = 0; i < a.size(); ++i)
        for (int k = 0; k < 3; ++k) differ += a[i][k] / force != unit[i][k];
      EXPECT_EQ(comm.allreduce(differ, MPI_SUM), 0u) << "length 2^" << power << " quadrupole " << quadrupole;
    }
  }
}

// Theta 0 opens every cell: every target interacts with every particle, so
// the forces are the direct sum up to the fp32 kernel's rounding, with and
// without a search radius, for every LET mode and both moment orders.
TEST(TreeForce, ThetaZeroIsTheDirectSum) {
  domex::Comm comm(MPI_COMM_WORLD);
  const Particles p = make_particles(comm, Distribution::plummer, 3000, 41);
  const auto exact = direct_sums(comm, p, 3);
  const double total = comm.allreduce(static_cast<double>(p.x.size()), MPI_SUM);
  for (double radius : {0.0, 0.05})
    for (bool quadrupole : {false, true})
      for (auto let : {domex::LetMode::alltoallv, domex::LetMode::p2p_fast, domex::LetMode::sparse}) {
        domex::TreeStats stats;
        const auto a = tree_forces(
            comm, p,
            {.theta = 0, .quadrupole = quadrupole, .let = let, .softening = softening, .search_radius = radius,
             .threads = 1},
            &stats);
        EXPECT_DOUBLE_EQ(interactions_per_particle(comm, stats), total) << "radius " << radius;
        const auto errors = relative_errors(comm, exact, a);
        EXPECT_LE(quantile(errors, 1.0), 2e-5) << "radius " << radius << " quadrupole " << quadrupole << " "
                                               << domex::to_string(let);
      }
}

}  // namespace

namespace {

const char* name_of(Distribution distribution) {
  switch (distribution) {
    case Distribution::uniform: return "uniform";
    case Distribution::plummer: return "plummer";
    case Distribution::ring: return "ring";
  }
  return "?";
}

// Accuracy on request: with TreeOptions::target_error the measured median
// error (2000 sampled targets against an exact direct sum) is at or below
// the target, on uniform, Plummer and ring inputs of 2e4 particles (the table
// was calibrated at 1e5, np 1). The per-particle measure is not applied to
// the ring: its forces nearly cancel for some particles (ANCHORS.md).
TEST(TreeForce, TargetErrorIsReached) {
  domex::Comm comm(MPI_COMM_WORLD);
  // At 4e3 particles the errors grow (uniform, 4.8e-3 per particle: 4.7e-3
  // measured with the table's choice alone); the check measures them on the
  // input, so the sanitized build runs 8e3.
  const std::size_t n = sanitized ? 8000 : 20000, stride = n / 2000;
  struct Target {
    domex::ErrorMeasure measure;
    double error;
  };
  // FDPS's per-particle medians (uniform, Plummer), ten times tighter, and rms ones.
  const Target targets[] = {{domex::ErrorMeasure::per_particle, 4.8e-3}, {domex::ErrorMeasure::per_particle, 4.7e-4},
                            {domex::ErrorMeasure::per_particle, 4.7e-5}, {domex::ErrorMeasure::rms, 1e-2},
                            {domex::ErrorMeasure::rms, 1e-3},           {domex::ErrorMeasure::rms, 1e-4}};
  for (Distribution distribution : {Distribution::uniform, Distribution::plummer, Distribution::ring}) {
    const auto p = make_particles(comm, distribution, n, 83);
    const auto exact = direct_sums(comm, p, stride);
    for (const Target& target : targets) {
      if (distribution == Distribution::ring && target.measure == domex::ErrorMeasure::per_particle) continue;
      // The sanitized build checks the memory of every path with the looser
      // targets; the tightest (quadrupoles at small angles, each checked two
      // to four times) run in the Release build.
      if (sanitized && target.error < 1e-4) continue;
      domex::TreeStats stats;
      const domex::TreeOptions options{.softening = softening, .target_error = target.error, .error_measure = target.measure};
      domex::TreeOptions used;  // the configuration chosen and checked
      const auto a = tree_forces(comm, p, options, &stats, &used);
      const auto errors =
          target.measure == domex::ErrorMeasure::per_particle ? relative_errors(comm, exact, a) : rms_errors(comm, exact, a);
      ASSERT_EQ(errors.size(), n / stride);
      const double median = quantile(errors, 0.5);
      const double cost = interactions_per_particle(comm, stats);  // collective: on every rank
      if (comm.rank() == 0)
        std::printf("%s, target %.3g %s: theta %.3f %s %s, %.0f interactions/particle, median error %.3g\n",
                    name_of(distribution), target.error, std::string(to_string(target.measure)).c_str(), used.theta,
                    std::string(to_string(used.opening)).c_str(), used.quadrupole ? "quadrupole" : "monopole", cost,
                    median);
      EXPECT_LE(median, target.error) << name_of(distribution) << " " << to_string(target.measure) << " " << target.error;
    }
  }
}

// The option changes only theta, opening and moments: the forces are bitwise
// those of the chosen configuration given by hand, and without a target they
// are those of the plain options. (check_samples = 0: the table's choice.)
TEST(TreeForce, TargetErrorOnlyChoosesTheConfiguration) {
  domex::Comm comm(MPI_COMM_WORLD);
  const auto p = make_particles(comm, Distribution::plummer, sanitized ? 3000 : 12000, 89);
  EXPECT_TRUE(bitwise_equal(tree_forces(comm, p, {.softening = softening, .target_error = 0}),
                            tree_forces(comm, p, {.softening = softening})));
  for (double target : {4.7e-4, 4.8e-3}) {
    const domex::AccuracyChoice choice = domex::choose_accuracy(target, domex::ErrorMeasure::per_particle);
    domex::TreeForce tree(comm, {.softening = softening, .root = p.root, .target_error = target, .check_samples = 0});
    EXPECT_EQ(tree.options().theta, choice.theta);
    EXPECT_EQ(tree.options().opening, choice.opening);
    EXPECT_EQ(tree.options().quadrupole, choice.quadrupole);
    domex::Profile profile;
    std::vector<Point> a(p.x.size());
    tree.compute(p.x, p.m, a, profile);
    EXPECT_TRUE(bitwise_equal(
        a, tree_forces(comm, p,
                       {.theta = choice.theta, .opening = choice.opening, .quadrupole = choice.quadrupole,
                        .softening = softening})));
  }
  EXPECT_THROW(domex::TreeForce(comm, {.target_error = -1}), domex::Error);
  EXPECT_THROW(domex::TreeForce(comm, {.target_error = 1e-12}), domex::Error);  // below the calibrated range
}

// The accuracy check (TreeOptions::check_samples, on by default): a Plummer
// sphere, whose errors are half the uniform set's that set the table's
// envelope, gets a larger angle than the table's; the forces are those of the
// angle reported, whatever the thread count; later calls do not check again
// until recalibrate().
TEST(TreeForce, CheckedTargetErrorKeepsTheAngleItReports) {
  domex::Comm comm(MPI_COMM_WORLD);
  const auto p = make_particles(comm, Distribution::plummer, sanitized ? 8000 : 20000, 97);
  const double target = 4.7e-4;
  const domex::AccuracyChoice choice = domex::choose_accuracy(target, domex::ErrorMeasure::per_particle);
  std::vector<Point> first;
  double theta = 0;
  for (int threads : {1, 2}) {
    domex::TreeForce tree(comm, {.softening = softening, .threads = threads, .root = p.root, .target_error = target});
    domex::Profile profile;
    std::vector<Point> a(p.x.size());
    tree.compute(p.x, p.m, a, profile);
    const domex::TreeOptions& chosen = tree.options();
    EXPECT_GT(chosen.theta, choice.theta * 1.05);
    EXPECT_EQ(chosen.opening, choice.opening);
    EXPECT_EQ(chosen.quadrupole, choice.quadrupole);
    EXPECT_GT(tree.stats().measured_error, 0);
    EXPECT_LE(tree.stats().measured_error, target / 1.25);
    EXPECT_TRUE(bitwise_equal(a, tree_forces(comm, p,
                                             {.theta = chosen.theta, .opening = chosen.opening,
                                              .quadrupole = chosen.quadrupole, .softening = softening})));
    if (threads == 1) {
      first = a, theta = chosen.theta;
    } else {
      EXPECT_EQ(chosen.theta, theta);
      EXPECT_TRUE(bitwise_equal(a, first));
    }
    std::vector<Point> again(p.x.size());
    tree.compute(p.x, p.m, again, profile);
    EXPECT_EQ(tree.stats().measured_error, 0);
    EXPECT_EQ(tree.options().theta, chosen.theta);
    EXPECT_TRUE(bitwise_equal(again, a));
    tree.recalibrate();
    tree.compute(p.x, p.m, again, profile);
    EXPECT_GT(tree.stats().measured_error, 0);
  }
  // The same angle with lists re-used: the kept lists are the reported angle's.
  domex::TreeForce reused(comm, {.reuse = 3, .softening = softening, .root = p.root, .target_error = target});
  domex::Profile profile;
  std::vector<Point> a(p.x.size());
  for (int call = 0; call < 3; ++call) {
    reused.compute(p.x, p.m, a, profile);
    EXPECT_EQ(reused.options().theta, theta);
    EXPECT_TRUE(bitwise_equal(a, first)) << call;
  }
}

// An input harder than the table's: with groups of at most 8 targets (and
// the table's leaves of 8: larger leaves make smaller errors) the table's
// angle for 4.8e-3 misses it (6e-3 measured at 2e4 particles, np 1 and 3);
// the check narrows the angle until it is reached.
TEST(TreeForce, CheckedTargetErrorNarrowsForAHarderInput) {
  domex::Comm comm(MPI_COMM_WORLD);
  const std::size_t n = sanitized ? 8000 : 20000, stride = n / 1000;
  const auto p = make_particles(comm, Distribution::uniform, n, 101);
  const auto exact = direct_sums(comm, p, stride);
  const double target = 4.8e-3;
  const domex::AccuracyChoice choice = domex::choose_accuracy(target, domex::ErrorMeasure::per_particle);
  const domex::TreeOptions table{
      .leaf_limit = 8, .group_limit = 8, .softening = softening, .target_error = target, .check_samples = 0};
  const double table_error = quantile(relative_errors(comm, exact, tree_forces(comm, p, table)), 0.5);
  domex::TreeOptions checked = table;
  checked.check_samples = 512;
  checked.root = p.root;
  domex::TreeForce tree(comm, checked);
  domex::Profile profile;
  std::vector<Point> a(p.x.size());
  tree.compute(p.x, p.m, a, profile);
  const double error = quantile(relative_errors(comm, exact, a), 0.5);
  if (comm.rank() == 0)
    std::printf("groups of 8, target %.3g: the table's theta %.3f gives %.3g, the checked theta %.3f gives %.3g\n", target,
                choice.theta, table_error, tree.options().theta, error);
  EXPECT_GT(table_error, target);  // what makes the input harder
  EXPECT_LT(tree.options().theta, choice.theta);
  EXPECT_LE(error, target);
  EXPECT_LE(tree.stats().measured_error, target);  // narrowed until within target / 1.25, kept within the target
}

// The check with no particles anywhere checks nothing (the angle stays the
// table's) and the next call, with particles, checks; particles on one rank
// only give the same angle on every rank.
TEST(TreeForce, CheckedTargetErrorWithoutParticlesWaitsForThem) {
  domex::Comm comm(MPI_COMM_WORLD);
  const double target = 4.8e-3;
  const domex::AccuracyChoice choice = domex::choose_accuracy(target, domex::ErrorMeasure::per_particle);
  const auto p = make_particles(comm, Distribution::uniform, sanitized ? 4000 : 10000, 107);
  domex::TreeForce tree(comm, {.softening = softening, .root = p.root, .target_error = target});
  domex::Profile profile;
  std::vector<Point> none;
  tree.compute(none, {}, none, profile);
  EXPECT_EQ(tree.options().theta, choice.theta);
  EXPECT_EQ(tree.stats().measured_error, 0);
  // All the particles on rank 0.
  const auto all_x = comm.allgatherv(std::span<const Point>(p.x));
  const auto all_m = comm.allgatherv(std::span<const double>(p.m));
  const std::vector<Point> x = comm.rank() == 0 ? all_x : std::vector<Point>{};
  const std::vector<double> m = comm.rank() == 0 ? all_m : std::vector<double>{};
  std::vector<Point> a(x.size());
  tree.compute(x, m, a, profile);
  EXPECT_GT(tree.stats().measured_error, 0);
  EXPECT_LE(tree.stats().measured_error, target / 1.25);
  EXPECT_EQ(comm.allreduce(tree.options().theta, MPI_MAX), tree.options().theta);
  EXPECT_EQ(comm.allreduce(tree.options().theta, MPI_MIN), tree.options().theta);
}

}  // namespace

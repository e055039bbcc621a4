// SPDX-License-Identifier: BSD-3-Clause
#include <domex/decompose/buckets.hpp>

#include "bad_input.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>

namespace {

using domex::Point;

TEST(Buckets, RunsAreContiguousAndBalancedByCost) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::BucketDecomposition buckets(comm, {{0, 0, 0}, {1, 1, 1}}, {.buckets = {16, 16, 16}});
  // Particles crowd towards the origin: uniform^3 per axis.
  std::mt19937_64 random(3 + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Point> particles;
  for (int n = 0; n < 20000; ++n) {
    const double a = u(random), b = u(random), c = u(random);
    particles.push_back({a * a * a, b * b, c});
  }
  buckets.rebalance(particles);
  std::vector<double> per_rank(static_cast<std::size_t>(comm.size()), 0);
  for (const auto& p : particles) per_rank[static_cast<std::size_t>(buckets.owner(p))] += 1;
  comm.allreduce_in_place(std::span<double>(per_rank), MPI_SUM);
  const double mean = 20000.0;
  // Granularity is one bucket; the densest bucket holds well under 5% of a share here.
  EXPECT_LE(*std::max_element(per_rank.begin(), per_rank.end()) / mean, 1.10);
  // Every bucket has exactly one owner, and the ranks' runs cover all buckets.
  std::size_t covered = 0;
  for (int r = 0; r < comm.size(); ++r) covered += buckets.buckets_of(r).size();
  EXPECT_EQ(covered, static_cast<std::size_t>(buckets.bucket_count()));
}

TEST(Buckets, NeighboursAreSymmetricAndPeriodicWraps) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::BucketDecomposition buckets(comm, {{0, 0, 0}, {2, 2, 2}}, {.buckets = {8, 8, 8}, .periodic = {true, false, true}});
  EXPECT_EQ(buckets.owner({2.1, 1.0, 1.0}), buckets.owner({0.1, 1.0, 1.0}));
  EXPECT_EQ(buckets.try_owner({1.0, 2.5, 1.0}), -1);
  EXPECT_THROW((void)buckets.owner({1.0, -0.5, 1.0}), domex::Error);
  // Symmetry: gather every rank's neighbour list.
  const auto& mine = buckets.neighbours();
  std::vector<int> flags(static_cast<std::size_t>(comm.size() * comm.size()), 0);
  for (int n : mine) flags[static_cast<std::size_t>(comm.rank() * comm.size() + n)] = 1;
  comm.allreduce_in_place(std::span<int>(flags), MPI_MAX);
  for (int a = 0; a < comm.size(); ++a)
    for (int b = 0; b < comm.size(); ++b)
      EXPECT_EQ(flags[static_cast<std::size_t>(a * comm.size() + b)], flags[static_cast<std::size_t>(b * comm.size() + a)])
          << a << " " << b;
}

std::vector<int> assignment(const domex::BucketDecomposition& buckets) {
  std::vector<int> owners;
  for (int b = 0; b < buckets.bucket_count(); ++b) owners.push_back(buckets.owner_of_bucket(b));
  return owners;
}

std::vector<Point> uniform_points(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Point> points(count);
  for (auto& p : points) p = {u(random), u(random) * u(random), u(random)};
  return points;
}

TEST(Buckets, OneRanksBadInputIsAnErrorOnEveryRankAndTheAssignmentStays) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::BucketDecomposition buckets(comm, {{0, 0, 0}, {1, 1, 1}}, {.buckets = {8, 8, 8}});
  const auto good = uniform_points(400, 70 + static_cast<std::uint64_t>(comm.rank()));
  const std::vector<double> good_weights(good.size(), 1.0);
  buckets.rebalance(good, good_weights);
  for (int bad : domex::testing::bad_ranks(comm.size()))
    for (const auto& input : domex::testing::bad_inputs()) {
      SCOPED_TRACE(input.kind + " on rank " + std::to_string(bad));
      auto positions = good;
      auto weights = good_weights;
      if (comm.rank() == bad) {
        if (input.in_weight) weights[7] = input.weight;
        else positions[7] = input.position;
      }
      const auto before = assignment(buckets);
      try {
        buckets.rebalance(positions, weights);
        ADD_FAILURE() << "no error";
      } catch (const domex::Error& error) {
        const std::string what = error.what();
        EXPECT_NE(what.find("rank " + std::to_string(bad) + ": BucketDecomposition::rebalance: particle 7"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find(input.value), std::string::npos) << what;
      }
      EXPECT_EQ(assignment(buckets), before);
      buckets.rebalance(good, good_weights);  // still usable
    }
}

TEST(Buckets, ExtremeWeightsNeverOverflow) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto points = uniform_points(2000, 80 + static_cast<std::uint64_t>(comm.rank()));
  domex::BucketDecomposition counted(comm, {{0, 0, 0}, {1, 1, 1}}, {.buckets = {8, 8, 8}});
  counted.rebalance(points);
  // Equal weights, however large or small (or zero): the assignment by count.
  for (double w : {1e308, std::numeric_limits<double>::max(), 1e-300, 4.9e-324, 0.0}) {
    domex::BucketDecomposition weighted(comm, {{0, 0, 0}, {1, 1, 1}}, {.buckets = {8, 8, 8}});
    weighted.rebalance(points, std::vector<double>(points.size(), w));
    EXPECT_EQ(assignment(weighted), assignment(counted)) << "weight " << w;
  }
  // Huge and zero mixed: only the huge ones count.
  std::vector<double> cost(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) cost[i] = points[i][2] < 0.5 ? 1e308 : 0.0;
  domex::BucketDecomposition mixed(comm, {{0, 0, 0}, {1, 1, 1}}, {.buckets = {8, 8, 8}});
  mixed.rebalance(points, cost);
  std::vector<double> per_rank(static_cast<std::size_t>(comm.size()), 0);
  for (std::size_t i = 0; i < points.size(); ++i)
    if (cost[i] > 0) per_rank[static_cast<std::size_t>(mixed.owner(points[i]))] += 1;
  comm.allreduce_in_place(std::span<double>(per_rank), MPI_SUM);
  double total = 0;
  for (double c : per_rank) total += c;
  EXPECT_LE(*std::max_element(per_rank.begin(), per_rank.end()) / (total / comm.size()), 1.25);
}

}  // namespace

#include <domex/decompose/buckets.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

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

}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
// domex-bench sparse's `--migration-samples 0` (bench/sparse_migration.hpp):
// its communication-free equal-volume boxes must be Multisection's own
// starting decomposition, box for box and owner for owner, or the 16384-rank
// simulations built on them would not be the pattern measured at 1024.
#include "../../bench/sparse_migration.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

namespace {

using domex::Point;

TEST(EqualBoxes, AreMultisectionsStartingBoxesAndOwners) {
  const domex::Comm comm{MPI_COMM_WORLD};
  const domex::Multisection decomposition(comm, domex::Box{{0, 0, 0}, {1, 1, 1}},
                                          domex::MultisectionOptions{.periodic = {true, true, true}});
  for (int ranks : {comm.size(), 1, 7, 12, 64, 1000}) {  // the rank's own P, and others by their formula alone
    const domex::bench::EqualBoxes equal(ranks);
    if (ranks != comm.size()) {
      int covered = 0;  // every rank's box is nonempty and inside the cube
      for (int r = 0; r < ranks; ++r) {
        const domex::Box box = equal.box(r);
        bool inside = true;
        for (int a = 0; a < 3; ++a) inside = inside && box.lo[a] >= 0 && box.hi[a] <= 1 && box.lo[a] < box.hi[a];
        covered += inside;
        EXPECT_EQ(equal.owner({(box.lo[0] + box.hi[0]) / 2, (box.lo[1] + box.hi[1]) / 2, box.lo[2]}), r);
      }
      EXPECT_EQ(covered, ranks);
      continue;
    }
    for (int r = 0; r < ranks; ++r)
      for (int a = 0; a < 3; ++a) {
        EXPECT_EQ(equal.box(r).lo[a], decomposition.box(r).lo[a]) << "rank " << r << " axis " << a;
        EXPECT_EQ(equal.box(r).hi[a], decomposition.box(r).hi[a]) << "rank " << r << " axis " << a;
      }
    constexpr std::uint64_t seed = 11;  // (plus the rank)
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    std::mt19937_64 random(seed + static_cast<std::uint64_t>(comm.rank()));
    std::uniform_real_distribution<double> u(-0.5, 1.5);  // periodic images too
    for (int n = 0; n < 20000; ++n) {
      const Point p{u(random), u(random), u(random)};
      ASSERT_EQ(equal.owner(p), decomposition.try_owner(p)) << p[0] << " " << p[1] << " " << p[2];
    }
    for (int r = 0; r < ranks; ++r) {  // the cuts themselves: a box's low corner belongs to it
      const domex::Box box = decomposition.box(r);
      ASSERT_EQ(equal.owner(box.lo), decomposition.try_owner(box.lo)) << "rank " << r;
      ASSERT_EQ(equal.owner(box.lo), r);
    }
  }
}

}  // namespace

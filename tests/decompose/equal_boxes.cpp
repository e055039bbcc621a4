// SPDX-License-Identifier: BSD-3-Clause
// domex::EqualBoxes (include/domex/decompose/grid.hpp): the equal-volume
// boxes a Multisection starts with, computed without communication, must be
// Multisection's own starting decomposition, box for box and owner for
// owner, or the 16384-rank simulations built on them (domex-bench sparse
// --migration-samples 0) would not be the pattern measured at 1024.
#include <domex/comm/comm.hpp>
#include <domex/comm/error.hpp>
#include <domex/decompose/grid.hpp>
#include <domex/decompose/multisection.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <limits>
#include <random>
#include <string>

namespace {

using domex::Box;
using domex::Point;

constexpr std::uint64_t seed = 11;  // (plus the rank)

TEST(EqualBoxes, AreMultisectionsStartingBoxesAndOwners) {
  const domex::Comm comm{MPI_COMM_WORLD};
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 random(seed + static_cast<std::uint64_t>(comm.rank()));
  struct Case {
    Box domain;
    std::array<bool, 3> periodic;
    std::array<int, 3> divisions;  // (0: chosen)
  };
  const std::array<int, 3> chosen{0, 0, 0};
  for (const Case& c : {Case{{{0, 0, 0}, {1, 1, 1}}, {true, true, true}, chosen},
                        Case{{{-1.5, 0.1, 2}, {2.25, 0.7, 9}}, {true, false, true}, chosen},
                        Case{{{-3, -1e-3, 0}, {0, 1e-3, 1e6}}, {false, false, false}, {1, comm.size(), 1}},
                        Case{{{0, 0, 0}, {0.3, 1, 1}}, {false, true, false}, {1, 1, comm.size()}}}) {
    std::string trace = "domain";
    for (int a = 0; a < 3; ++a)
      trace += " [" + std::to_string(c.domain.lo[a]) + ", " + std::to_string(c.domain.hi[a]) + ")" +
               (c.periodic[a] ? " periodic" : "");
    SCOPED_TRACE(trace);
    const domex::Multisection decomposition(comm, c.domain,
                                            domex::MultisectionOptions{.divisions = c.divisions, .periodic = c.periodic});
    const domex::EqualBoxes equal(c.domain, domex::grid_divisions(comm.size(), c.divisions), c.periodic);
    ASSERT_EQ(equal.divisions(), decomposition.divisions());
    for (int r = 0; r < comm.size(); ++r)
      for (int a = 0; a < 3; ++a) {
        EXPECT_EQ(equal.box(r).lo[a], decomposition.box(r).lo[a]) << "rank " << r << " axis " << a;
        EXPECT_EQ(equal.box(r).hi[a], decomposition.box(r).hi[a]) << "rank " << r << " axis " << a;
      }
    // Inside, and beyond on every axis (periodic images; outside a
    // non-periodic axis both say -1).
    std::array<std::uniform_real_distribution<double>, 3> u;
    for (int a = 0; a < 3; ++a)
      u[static_cast<std::size_t>(a)] = std::uniform_real_distribution<double>(
          c.domain.lo[a] - c.domain.extent(a) / 2, c.domain.hi[a] + c.domain.extent(a) / 2);
    for (int n = 0; n < 20000; ++n) {
      const Point p{u[0](random), u[1](random), u[2](random)};
      ASSERT_EQ(equal.owner(p), decomposition.try_owner(p)) << p[0] << " " << p[1] << " " << p[2];
    }
    for (int r = 0; r < comm.size(); ++r) {  // the cuts themselves: a box's low corner belongs to it
      const Box box = decomposition.box(r);
      ASSERT_EQ(equal.owner(box.lo), r) << "rank " << r;
      ASSERT_EQ(decomposition.try_owner(box.lo), r) << "rank " << r;
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(equal.owner({nan, c.domain.lo[1], c.domain.lo[2]}), -1);
  }
}

TEST(EqualBoxes, OtherRankCountsCoverTheDomainOnce) {
  // Rank counts other than this run's, by the formula alone.
  const Box domain{{-1, 0, 0}, {1, 3, 0.5}};
  for (int ranks : {1, 7, 12, 64, 1000, 4096}) {
    const domex::EqualBoxes equal(domain, domex::grid_divisions(ranks), {true, true, true});
    double volume = 0;
    for (int r = 0; r < ranks; ++r) {
      const Box box = equal.box(r);
      bool inside = true;
      for (int a = 0; a < 3; ++a)
        inside = inside && box.lo[a] >= domain.lo[a] && box.hi[a] <= domain.hi[a] && box.lo[a] < box.hi[a];
      EXPECT_TRUE(inside) << "rank " << r;
      volume += box.extent(0) * box.extent(1) * box.extent(2);
      EXPECT_EQ(equal.owner({(box.lo[0] + box.hi[0]) / 2, (box.lo[1] + box.hi[1]) / 2, box.lo[2]}), r);
      EXPECT_EQ(equal.owner(box.lo), r);
    }
    EXPECT_NEAR(volume, 2 * 3 * 0.5, 1e-12) << ranks << " ranks";
  }
}

TEST(EqualBoxes, BadDivisionsOrDomainsAreErrors) {
  const Box unit{{0, 0, 0}, {1, 1, 1}};
  EXPECT_THROW(domex::EqualBoxes(unit, {0, 0, 0}), domex::Error);  // (not passed through grid_divisions)
  EXPECT_THROW(domex::EqualBoxes(unit, {2, -1, 1}), domex::Error);
  EXPECT_THROW(domex::EqualBoxes(Box{{0, 0, 0}, {1, 0, 1}}, {1, 1, 1}), domex::Error);
  const double infinity = std::numeric_limits<double>::infinity();
  EXPECT_THROW(domex::EqualBoxes(Box{{0, 0, -infinity}, {1, 1, 1}}, {1, 1, 1}), domex::Error);
}

}  // namespace

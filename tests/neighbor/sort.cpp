// SPDX-License-Identifier: BSD-3-Clause
// spatial_order and permute: a permutation that keeps each bin's particles
// together and in order, along a Morton curve; fields reordered alike.
#include <domex/comm/error.hpp>
#include <domex/neighbor/sort.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace {

using domex::Point;

TEST(SpatialOrder, IsAPermutationGroupingBinsAlongAMortonCurve) {
  const std::uint64_t seed = 41;
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> u(-3.0, 5.0);
  std::vector<Point> x(5000);
  for (Point& p : x) p = {u(random), u(random), u(random)};
  const double bin = 0.5;
  const auto order = domex::spatial_order(x, bin);
  ASSERT_EQ(order.size(), x.size());
  std::vector<std::size_t> sorted(order);
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t k = 0; k < sorted.size(); ++k) ASSERT_EQ(sorted[k], k) << "seed " << seed;
  // Bins along the curve: the Morton key of consecutive particles never
  // decreases, and within a bin the original order is kept.
  double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL};
  for (const Point& p : x)
    for (int a = 0; a < 3; ++a) lo[a] = std::min(lo[a], p[a]);
  auto key = [&](const Point& p) {
    std::uint64_t k = 0;
    for (int bit = 20; bit >= 0; --bit)
      for (int a = 2; a >= 0; --a) k = (k << 1) | ((static_cast<std::uint64_t>((p[a] - lo[a]) / bin) >> bit) & 1);
    return k;
  };
  for (std::size_t k = 1; k < order.size(); ++k) {
    const auto before = key(x[order[k - 1]]), now = key(x[order[k]]);
    EXPECT_LE(before, now) << "position " << k;
    if (before == now) {
      EXPECT_LT(order[k - 1], order[k]) << "stable within a bin";
    }
  }
}

TEST(SpatialOrder, PermuteReordersEveryFieldAlikeAndRejectsBadInput) {
  std::vector<Point> x{{3, 0, 0}, {0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
  std::vector<int> id{30, 0, 10, 20};
  const auto order = domex::spatial_order(x, 1.0);
  domex::permute(order, x, id);
  for (std::size_t k = 0; k < x.size(); ++k) {
    EXPECT_EQ(x[k][0], static_cast<double>(k));
    EXPECT_EQ(id[k], static_cast<int>(10 * k));
  }
  auto message_of = [](auto&& call) {
    try {
      call();
    } catch (const domex::Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  std::vector<std::size_t> repeated{0, 0, 1, 2};
  EXPECT_NE(message_of([&] { domex::permute(repeated, x, id); }).find("not a permutation"), std::string::npos);
  std::vector<int> short_field{1, 2};
  EXPECT_NE(message_of([&] { domex::permute(order, x, short_field); }).find("field 1 has 2 entries"), std::string::npos);
  EXPECT_EQ(x[0][0], 0.0) << "nothing changed by a refused permute";
  EXPECT_NE(message_of([&] { (void)domex::spatial_order(x, 0.0); }).find("bin size 0"), std::string::npos);
  x[2][1] = std::nan("");
  EXPECT_NE(message_of([&] { (void)domex::spatial_order(x, 1.0); }).find("particle 2"), std::string::npos);
  EXPECT_TRUE(domex::spatial_order(std::vector<Point>{}, 1.0).empty());
}

TEST(SpatialOrder, PartitionFirstMovesOnlyWhatIsOnTheWrongSide) {
  std::vector<int> value{0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<double> twin{0, 10, 20, 30, 40, 50, 60, 70};
  const std::vector<std::uint8_t> first{1, 0, 1, 1, 0, 1, 0, 1};
  EXPECT_EQ(domex::partition_first(first, value, twin), 5u);
  for (std::size_t k = 0; k < value.size(); ++k) {
    EXPECT_EQ(twin[k], 10.0 * value[k]) << "fields swapped alike";
    EXPECT_EQ(first[static_cast<std::size_t>(value[k])] != 0, k < 5) << "entry " << k;
  }
  // Only the two on the wrong side moved (1 <-> 7, 4 <-> 5): the rest kept their entries.
  EXPECT_EQ(value, (std::vector<int>{0, 7, 2, 3, 5, 4, 6, 1}));
  std::vector<int> none;
  EXPECT_EQ(domex::partition_first(std::vector<std::uint8_t>{}, none), 0u);
  std::vector<int> short_field{1};
  try {
    domex::partition_first(first, short_field);
    ADD_FAILURE() << "a field of another length was taken";
  } catch (const domex::Error& error) {
    EXPECT_NE(std::string(error.what()).find("field 0 has 1 entries"), std::string::npos) << error.what();
  }
}

}  // namespace

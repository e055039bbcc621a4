// SPDX-License-Identifier: BSD-3-Clause
#include <domex/tree/morton.hpp>
#include <domex/tree/sort.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

TEST(Morton, EncodeDecodeRoundTripsEveryAxisValue) {
  std::mt19937_64 random(7);
  std::uniform_int_distribution<std::uint32_t> cell(0, domex::morton_cells_per_axis - 1);
  for (int trial = 0; trial < 10000; ++trial) {
    const std::uint32_t x = cell(random), y = cell(random), z = cell(random);
    const domex::MortonKey key = domex::morton_encode(x, y, z);
    EXPECT_LT(key, 1ull << 63);
    const auto back = domex::morton_decode(key);
    ASSERT_EQ(back[0], x);
    ASSERT_EQ(back[1], y);
    ASSERT_EQ(back[2], z);
  }
  EXPECT_EQ(domex::morton_encode(1, 0, 0), 4u);
  EXPECT_EQ(domex::morton_encode(0, 1, 0), 2u);
  EXPECT_EQ(domex::morton_encode(0, 0, 1), 1u);
  EXPECT_EQ(domex::morton_encode(domex::morton_cells_per_axis - 1, domex::morton_cells_per_axis - 1,
                                 domex::morton_cells_per_axis - 1),
            (1ull << 63) - 1);
}

TEST(Morton, KeysOfPositionsLieInTheirCells) {
  const domex::Box root{{-1, 0, 2}, {3, 2, 6}};
  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 2000; ++trial) {
    const domex::Point p{-1 + 4 * u(random), 2 * u(random), 2 + 4 * u(random)};
    const domex::MortonKey key = domex::morton_key(p, root);
    for (int level : {0, 1, 5, 21}) {
      const domex::Box cell = domex::morton_cell_box(domex::morton_cell_of(key, level), level, root);
      for (int a = 0; a < 3; ++a) {
        EXPECT_LE(cell.lo[a], p[a] + 1e-12);
        EXPECT_GE(cell.hi[a], p[a] - 1e-12);
      }
    }
  }
  // Upper faces round into the last cell, not past it.
  EXPECT_EQ(domex::morton_key_unchecked({std::nextafter(3.0, 0.0), std::nextafter(2.0, 0.0), std::nextafter(6.0, 0.0)},
                                        root),
            (1ull << 63) - 1);
}

TEST(Morton, VectorKeysEqualTheScalarKeysForEveryCountAndEdge) {
  // Random positions, every face and corner of the root, just inside and
  // just outside them, NaN and infinities (clamped as the scalar key does),
  // at every count up to past a vector so that every tail length runs.
  const domex::Box root{{-1, 0, 2}, {3, 2, 6}};
  std::mt19937_64 random(13);
  std::uniform_real_distribution<double> u(0, 1);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  std::vector<domex::Point> points;
  for (int k = 0; k < 200; ++k) points.push_back({-1 + 4 * u(random), 2 * u(random), 2 + 4 * u(random)});
  for (int a = 0; a < 3; ++a)
    for (double v : {root.lo[a], root.hi[a], std::nextafter(root.lo[a], -inf), std::nextafter(root.hi[a], -inf),
                     std::nextafter(root.hi[a], inf), -1e300, 1e300, nan, inf, -inf}) {
      domex::Point p{1, 1, 4};
      p[a] = v;
      points.push_back(p);
    }
  points.push_back(root.lo);
  points.push_back(root.hi);
  for (std::size_t count = 0; count <= 40; ++count) {
    const std::size_t first = points.size() - count;
    std::vector<domex::KeyIndex> out(count + 1, {7, 7});
    domex::morton_key_indices(std::span(points).subspan(first), root, out, 1000);
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(out[i].key, domex::morton_key_unchecked(points[first + i], root)) << "count " << count << " at " << i;
      ASSERT_EQ(out[i].index, 1000 + i);
    }
    EXPECT_EQ(out[count], (domex::KeyIndex{7, 7}));  // nothing past the positions' count
  }
  std::vector<domex::KeyIndex> all(points.size());
  domex::morton_key_indices(points, root, all);
  for (std::size_t i = 0; i < points.size(); ++i) ASSERT_EQ(all[i].key, domex::morton_key_unchecked(points[i], root));
  std::vector<domex::KeyIndex> short_out(3);
  EXPECT_THROW(domex::morton_key_indices(points, root, short_out), domex::Error);
}

TEST(Morton, PositionsOutsideTheRootAreErrors) {
  const domex::Box root{{0, 0, 0}, {1, 1, 1}};
  EXPECT_THROW((void)domex::morton_key({1.0, 0.5, 0.5}, root), domex::Error);
  EXPECT_THROW((void)domex::morton_key({0.5, -1e-9, 0.5}, root), domex::Error);
  EXPECT_THROW((void)domex::morton_key({0.5, 0.5, std::nan("")}, root), domex::Error);
  try {
    (void)domex::morton_key({2.0, 0.5, 0.5}, root);
  } catch (const domex::Error& error) {
    EXPECT_NE(std::string(error.what()).find("2.0"), std::string::npos) << error.what();
  }
  EXPECT_NO_THROW((void)domex::morton_key({0, 0, 0}, root));
}

}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
#include <domex/tree/morton.hpp>

#include <gtest/gtest.h>

#include <random>

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

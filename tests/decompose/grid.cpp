// SPDX-License-Identifier: BSD-3-Clause
// include/domex/decompose/grid.hpp: a rank's place in a grid of domains and
// back, periodic offsets, and the divisions a Multisection chooses (bad
// ones are a domex::Error, never MPI_Dims_create's abort).
#include <domex/comm/error.hpp>
#include <domex/decompose/grid.hpp>

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace {

TEST(GridIndex, RankIndexAndOffsetsAreInverse) {
  for (const std::array<int, 3> divisions : {std::array<int, 3>{1, 1, 1}, {2, 3, 5}, {4, 1, 7}, {16, 16, 16}}) {
    const int ranks = divisions[0] * divisions[1] * divisions[2];
    for (int r = 0; r < ranks; ++r) {
      const auto index = domex::grid_index(r, divisions);
      EXPECT_EQ(domex::grid_rank(index, divisions), r);
      EXPECT_EQ(domex::grid_offset(r, {0, 0, 0}, divisions), r);
      // A whole turn on any axis, either way, comes back.
      EXPECT_EQ(domex::grid_offset(r, {divisions[0], -divisions[1], 2 * divisions[2]}, divisions), r);
      const int next = domex::grid_offset(r, {1, -1, 1}, divisions);
      EXPECT_EQ(domex::grid_offset(next, {-1, 1, -1}, divisions), r);
      const auto moved = domex::grid_index(next, divisions);
      EXPECT_EQ(moved[0], (index[0] + 1) % divisions[0]);
      EXPECT_EQ(moved[1], (index[1] - 1 + divisions[1]) % divisions[1]);
    }
  }
  EXPECT_EQ(domex::grid_index(0, {2, 3, 5})[0], 0);
  EXPECT_EQ(domex::grid_index(29, {2, 3, 5}), (std::array<int, 3>{1, 2, 4}));  // z fastest
  EXPECT_EQ(domex::grid_index(5, {2, 3, 5}), (std::array<int, 3>{0, 1, 0}));
}

TEST(GridDivisions, KeepsRequestedEntriesAndNamesBadOnes) {
  EXPECT_EQ(domex::grid_divisions(12, {0, 0, 1})[2], 1);
  const auto d = domex::grid_divisions(12, {3, 0, 0});
  EXPECT_EQ(d[0], 3);
  EXPECT_EQ(d[0] * d[1] * d[2], 12);
  try {
    (void)domex::grid_divisions(12, {5, 0, 0}, "Caller");
    ADD_FAILURE() << "no error for 5 x ? x ? = 12";
  } catch (const domex::Error& error) {
    EXPECT_NE(std::string(error.what()).find("Caller"), std::string::npos) << error.what();
  }
  EXPECT_THROW((void)domex::grid_divisions(8, {-2, 0, 0}), domex::Error);
  EXPECT_THROW((void)domex::grid_divisions(0), domex::Error);
  EXPECT_THROW((void)domex::grid_divisions(6, {2, 2, 2}), domex::Error);
  // Every entry given, dividing the ranks but not equal to them: MPI_Dims_create alone would abort.
  EXPECT_THROW((void)domex::grid_divisions(16, {2, 2, 2}), domex::Error);
  EXPECT_THROW((void)domex::grid_divisions(8, {1 << 30, 1 << 30, 1 << 30}), domex::Error);  // (no overflow)
  EXPECT_EQ(domex::grid_divisions(16, {2, 2, 4}), (std::array<int, 3>{2, 2, 4}));
}

}  // namespace

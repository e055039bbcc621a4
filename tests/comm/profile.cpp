#include <domex/comm/profile.hpp>

#include <gtest/gtest.h>

namespace {

TEST(Profile, ReducesMinAvgMaxOverRanks) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::Profile profile;
  // Rank r spends r+1 seconds in "kernel" (added, not slept) and only rank 0
  // has an "other" phase.
  profile.add("kernel", comm.rank() + 1.0);
  profile.add("kernel", 0.0);
  if (comm.rank() == 0) profile.add("other", 2.0);
  const auto rows = profile.reduce(comm);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "kernel");
  EXPECT_DOUBLE_EQ(rows[0].min, 1.0);
  EXPECT_DOUBLE_EQ(rows[0].max, comm.size());
  EXPECT_DOUBLE_EQ(rows[0].avg, (comm.size() + 1) / 2.0);
  EXPECT_EQ(rows[0].calls, 2u);
  EXPECT_EQ(rows[1].name, "other");
  EXPECT_DOUBLE_EQ(rows[1].max, 2.0);
  EXPECT_DOUBLE_EQ(rows[1].min, comm.size() > 1 ? 0.0 : 2.0);
  const auto json = domex::Profile::to_json(rows);
  EXPECT_NE(json.find("\"phase\": \"kernel\""), std::string::npos) << json;
  const auto table = domex::Profile::to_table(rows, "t");
  EXPECT_NE(table.find("kernel"), std::string::npos);
}

TEST(Profile, TimerAccumulates) {
  domex::Profile profile;
  { auto timer = profile.phase("decompose"); }
  { auto timer = profile.phase("decompose"); }
  EXPECT_GE(profile.local_seconds("decompose"), 0.0);
  EXPECT_EQ(profile.local_seconds("absent"), 0.0);
}

}  // namespace

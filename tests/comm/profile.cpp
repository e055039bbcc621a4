// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/profile.hpp>

#include <domex/comm/provenance.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

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

TEST(Profile, JsonIsValidWithAnyNameAndNonFiniteValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<domex::Profile::Row> rows = {{"quote \" back\\slash\nnew\tline\x01", nan, inf, -inf, 3},
                                                 {"plain", 1.5, 2.5, 3.5, 1}};
  const auto json = domex::Profile::to_json(rows);
  nlohmann::json parsed;
  ASSERT_NO_THROW(parsed = nlohmann::json::parse(json)) << json;
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0]["phase"], rows[0].name);
  EXPECT_TRUE(parsed[0]["min"].is_null());
  EXPECT_TRUE(parsed[0]["avg"].is_null());
  EXPECT_EQ(parsed[1]["max"], 3.5);
  EXPECT_EQ(parsed[0]["calls"], 3);
}

TEST(Provenance, IsTheSameOnEveryRankAndComplete) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto p = domex::provenance(comm);
  EXPECT_FALSE(p.domex_version.empty());
  EXPECT_FALSE(p.git_commit.empty());
  EXPECT_FALSE(p.mpi_library.empty());
  EXPECT_EQ(p.mpi_library.find('\0'), std::string::npos);
  EXPECT_FALSE(p.compiler.empty());
  EXPECT_EQ(p.date_utc.size(), 20u);  // 2026-11-23T18:00:00Z
  EXPECT_EQ(p.ranks, comm.size());
  // Rank 0's host and date everywhere.
  const std::string mine = p.host + "|" + p.date_utc;
  const auto all = comm.allgatherv<char>(std::span<const char>(mine.data(), mine.size()));
  EXPECT_EQ(std::string(all.begin(), all.end()), [&] {
    std::string expected;
    for (int r = 0; r < comm.size(); ++r) expected += mine;
    return expected;
  }());
}

TEST(Profile, TimerAccumulates) {
  domex::Profile profile;
  { auto timer = profile.phase("decompose"); }
  { auto timer = profile.phase("decompose"); }
  EXPECT_GE(profile.local_seconds("decompose"), 0.0);
  EXPECT_EQ(profile.local_seconds("absent"), 0.0);
}

}  // namespace

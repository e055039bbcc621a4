// SPDX-License-Identifier: BSD-3-Clause
// domex::simulated::Work in a native run: what DOMEX_SIM_RECORD writes, the
// input of the cost model that simulations charge (sim/fit.py).
#include <domex/comm/simulated.hpp>

#include <domex/tree/tree.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

// The settings are read at the first Work of the process, so the variable is
// set before main. One prefix per process: ctest runs np 1..8 side by side.
const std::string prefix = "/tmp/domex-test-simulated-" + std::to_string(::getpid());
const bool recording = ::setenv("DOMEX_SIM_RECORD", prefix.c_str(), 1) == 0;

struct Record {
  double seconds, units;
  std::string phase;
};

/// Every record this process has written so far.
std::vector<Record> records() {
  std::fflush(nullptr);
  const domex::Comm comm{MPI_COMM_WORLD};
  std::ifstream in(prefix + "." + std::to_string(comm.rank()));
  std::vector<Record> result;
  std::string line;
  while (std::getline(in, line)) {
    Record r;
    const auto first = line.find('\t'), second = line.find('\t', first + 1);
    r.seconds = std::stod(line.substr(0, first));
    r.units = std::stod(line.substr(first + 1, second - first - 1));
    r.phase = line.substr(second + 1);
    result.push_back(r);
  }
  return result;
}

TEST(SimulatedWork, RecordsEachFinishedStretchOnce) {
  ASSERT_TRUE(recording);
  const std::size_t before = records().size();
  {
    domex::simulated::Work work("test: counted");
    work.done(42);
    work.done(7);  // a second done() does nothing
  }
  { domex::simulated::Work unfinished("test: never done"); }
  domex::simulated::Work("test: fractional units").done(0.5);
  const auto all = records();
  ASSERT_EQ(all.size(), before + 2);
  EXPECT_EQ(all[before].phase, "test: counted");
  EXPECT_EQ(all[before].units, 42);
  EXPECT_GE(all[before].seconds, 0);
  EXPECT_EQ(all[before + 1].phase, "test: fractional units");
  EXPECT_EQ(all[before + 1].units, 0.5);
}

/// The tree's stretches carry the work counts the model is fitted on: the
/// particles, the LET items built and received, the interactions.
TEST(SimulatedWork, TreePhasesRecordTheirWorkCounts) {
  domex::Comm comm{MPI_COMM_WORLD};
  std::mt19937_64 random(20261128u + static_cast<unsigned>(comm.rank()));
  std::uniform_real_distribution<double> u(0, 1);
  const std::size_t n = 3000 + 500 * static_cast<std::size_t>(comm.rank());
  std::vector<domex::Point> x(n), a(n);
  for (auto& p : x) p = {u(random), u(random), u(random)};
  const std::vector<double> m(n, 1.0 / static_cast<double>(n));
  domex::TreeForce tree(comm, {.threads = 1, .root = {{0, 0, 0}, {1, 1, 1}}});
  domex::Profile profile;
  const std::size_t before = records().size();
  tree.compute(x, m, a, profile);
  const domex::TreeStats& stats = tree.stats();
  const auto all = records();
  std::vector<std::string> phases;
  for (std::size_t k = before; k < all.size(); ++k) {
    const Record& r = all[k];
    phases.push_back(r.phase);
    double expected = 0;
    if (r.phase == "tree: local build" || r.phase == "tree: scatter") expected = static_cast<double>(n);
    else if (r.phase == "tree: LET build") expected = static_cast<double>(stats.let_items_sent);
    else if (r.phase.starts_with("tree: global link")) expected = static_cast<double>(n + stats.let_items_received);
    else if (r.phase == "tree: walk and kernel")
      expected = static_cast<double>(stats.epj_interactions + stats.spj_interactions);
    EXPECT_EQ(r.units, expected) << r.phase;
  }
  const std::vector<std::string> expected = {"tree: local build", "tree: LET build",
                                             stats.let_items_received > 0 ? "tree: global link"
                                                                          : "tree: global link, no LET",
                                             "tree: walk and kernel", "tree: scatter"};
  EXPECT_EQ(phases, expected);
  EXPECT_GT(stats.epj_interactions, 0u);
  if (comm.size() > 1) {
    EXPECT_GT(stats.let_items_received, 0u);
  }
}

struct RemoveRecords : ::testing::Environment {
  void TearDown() override {
    const domex::Comm comm{MPI_COMM_WORLD};
    std::remove((prefix + "." + std::to_string(comm.rank())).c_str());
  }
};
const auto* remove_records = ::testing::AddGlobalTestEnvironment(new RemoveRecords);

}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
#include <domex/exchange/cost_model.hpp>
#include <domex/exchange/exchange.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

using domex::Algorithm;

/// A file name of this rank's own (the test runs on several ranks at once).
std::string temporary_path(const char* name) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return std::string("domex_test_") + name + "_rank" + std::to_string(rank) + ".txt";
}

TEST(CostModel, SaveLoadRoundTrip) {
  auto model = domex::CostModel::builtin();
  model.calibration_ranks = 16;
  model[Algorithm::nbx] = {1.5e-5, 2.25e-6, 3.125e-10};
  const auto path = temporary_path("roundtrip");
  model.save(path);
  const auto loaded = domex::CostModel::load(path);
  std::remove(path.c_str());
  EXPECT_EQ(loaded.calibration_ranks, 16);
  for (Algorithm algorithm : domex::concrete_algorithms) {
    EXPECT_EQ(loaded[algorithm].fixed, model[algorithm].fixed);  // exact: 17 digits
    EXPECT_EQ(loaded[algorithm].per_message, model[algorithm].per_message);
    EXPECT_EQ(loaded[algorithm].per_byte, model[algorithm].per_byte);
  }
  EXPECT_EQ(loaded.fingerprint(), model.fingerprint());
  EXPECT_EQ(loaded.source(), path);
  EXPECT_EQ(domex::CostModel::builtin().source(), "built-in");
}

TEST(CostModel, ChoosesTheSmallestPrediction) {
  domex::CostModel model;
  for (Algorithm algorithm : domex::concrete_algorithms) model[algorithm] = {100e-6, 10e-6, 1e-9};
  model[Algorithm::reduce_scatter] = {50e-6, 10e-6, 1e-9};
  const domex::PatternSummary small{.ranks = 8, .max_messages = 6, .max_bytes = 384};
  EXPECT_EQ(model.choose(small), Algorithm::reduce_scatter);
  // alltoall's synchronisation grows with P, nbx's with log P: at large P a
  // sparse pattern must not pick alltoall even when it is cheapest at P_cal.
  model[Algorithm::alltoall] = {40e-6, 10e-6, 1e-9};
  model.calibration_ranks = 8;
  EXPECT_EQ(model.choose(small), Algorithm::alltoall);
  const domex::PatternSummary large{.ranks = 4096, .max_messages = 6, .max_bytes = 384};
  EXPECT_NE(model.choose(large), Algorithm::alltoall);
  EXPECT_GT(model.predict(Algorithm::alltoall, large), 100 * model.predict(Algorithm::alltoall, small));
  // Per-byte cost dominates for large messages.
  model[Algorithm::rma_fence] = {1e-3, 10e-6, 0.1e-9};
  const domex::PatternSummary bulky{.ranks = 8, .max_messages = 6, .max_bytes = 6e9};
  EXPECT_EQ(model.choose(bulky), Algorithm::rma_fence);
}

TEST(CostModel, LoadErrorsNameFileAndLine) {
  const auto path = temporary_path("bad");
  const auto expect_error = [&](const std::string& text, const std::string& needle) {
    std::ofstream(path) << text;
    try {
      (void)domex::CostModel::load(path);
      ADD_FAILURE() << "no error for: " << text;
    } catch (const domex::Error& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
  };
  expect_error("not a model\n", ":1:");
  expect_error("domex-cost-model 1\nnbx 1 2\n", ":2:");
  expect_error("domex-cost-model 1\ngossip 1 2 3\n", "unknown algorithm 'gossip'");
  expect_error("domex-cost-model 1\nnbx -1 2 3\n", ":2:");
  expect_error("domex-cost-model 1\nnbx 1 2 3\n", "no line for algorithm alltoall");
  std::remove(path.c_str());
  EXPECT_THROW((void)domex::CostModel::load("/nonexistent/model.txt"), domex::Error);
}

/// A model under which `favourite` is by far the cheapest algorithm.
domex::CostModel favouring(Algorithm favourite) {
  domex::CostModel model;
  for (Algorithm algorithm : domex::concrete_algorithms) model[algorithm] = {1e-3, 1e-6, 1e-9};
  model[favourite] = {1e-6, 1e-9, 1e-12};
  return model;
}

/// Runs an automatic exchange (ring pattern) and checks its result; returns the algorithm it ran.
Algorithm automatic_ring(domex::Comm& comm, const domex::CostModel* model = nullptr) {
  domex::Outbox<int> outbox;
  outbox.add((comm.rank() + 1) % comm.size(), comm.rank());
  const auto inbox = domex::exchange(comm, outbox, {.cost_model = model});
  EXPECT_EQ(inbox.message_count(), 1u);
  if (inbox.message_count() == 1) {
    EXPECT_EQ(inbox.message(0)[0], (comm.rank() + comm.size() - 1) % comm.size());
  }
  return inbox.stats().algorithm;
}

TEST(CostModel, FilesThatDifferBetweenRanksNeverSplitTheChoice) {
  // Each rank has its own file favouring a different algorithm: the model is
  // rank 0's on every rank, so every rank runs the same algorithm.
  domex::Comm comm{MPI_COMM_WORLD};
  const Algorithm mine = domex::concrete_algorithms[static_cast<std::size_t>(comm.rank()) % 6];
  const auto path = temporary_path("per_rank_model");
  favouring(mine).save(path);
  ::setenv("DOMEX_COST_MODEL", path.c_str(), 1);
  {
    domex::Comm fresh{MPI_COMM_WORLD};
    const auto& model = domex::CostModel::of_this_machine(fresh);
    const auto fingerprints = fresh.allgather(model.fingerprint());
    for (double f : fingerprints) EXPECT_EQ(f, fingerprints[0]);
    EXPECT_EQ(model.source(), "domex_test_per_rank_model_rank0.txt");
    const Algorithm ran = automatic_ring(fresh);
    EXPECT_EQ(ran, Algorithm::alltoall);  // rank 0's favourite
    for (int algorithm : fresh.allgather(static_cast<int>(ran))) EXPECT_EQ(algorithm, static_cast<int>(ran));
  }
  ::unsetenv("DOMEX_COST_MODEL");
  comm.barrier();
  std::remove(path.c_str());
}

TEST(CostModel, AModelFileRankZeroCannotReadIsAnErrorOnEveryRank) {
  domex::Comm comm{MPI_COMM_WORLD};
  // Only rank 0 points at a file that does not exist; the others at nothing.
  if (comm.rank() == 0) ::setenv("DOMEX_COST_MODEL", "/nonexistent/domex-model.txt", 1);
  {
    domex::Comm fresh{MPI_COMM_WORLD};
    try {
      (void)automatic_ring(fresh);
      ADD_FAILURE() << "no error";
    } catch (const domex::Error& error) {
      EXPECT_NE(std::string(error.what()).find("/nonexistent/domex-model.txt"), std::string::npos) << error.what();
    }
  }
  ::unsetenv("DOMEX_COST_MODEL");
  // Without the file, the built-in model, and a working exchange.
  domex::Comm fresh{MPI_COMM_WORLD};
  const auto& model = domex::CostModel::of_this_machine(fresh);
  EXPECT_EQ(model.source(), "built-in");
  // The built-in model itself on every rank (not sent as text: each rank has it).
  EXPECT_EQ(model.fingerprint(), domex::CostModel::builtin().fingerprint());
  EXPECT_TRUE(model.learned.empty());
  (void)automatic_ring(fresh);
}

TEST(CostModel, ModelsPassedThatDifferBetweenRanksAreAnErrorNotADeadlock) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto same = favouring(Algorithm::nbx);
  EXPECT_EQ(automatic_ring(comm, &same), Algorithm::nbx);
  if (comm.size() == 1) return;
  domex::Comm fresh{MPI_COMM_WORLD};
  const auto different = favouring(domex::concrete_algorithms[static_cast<std::size_t>(comm.rank()) % 6]);
  EXPECT_THROW((void)automatic_ring(fresh, &different), domex::Error);
  // The next call with an agreed model decides again and works.
  EXPECT_EQ(automatic_ring(fresh, &same), Algorithm::nbx);
}

}  // namespace

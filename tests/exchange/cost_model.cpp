#include <domex/exchange/cost_model.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

using domex::Algorithm;

std::string temporary_path(const char* name) { return std::string("domex_test_") + name + ".txt"; }

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
    EXPECT_NEAR(loaded[algorithm].fixed, model[algorithm].fixed, 1e-6 * model[algorithm].fixed);
    EXPECT_NEAR(loaded[algorithm].per_message, model[algorithm].per_message, 1e-6 * model[algorithm].per_message);
    EXPECT_NEAR(loaded[algorithm].per_byte, model[algorithm].per_byte, 1e-6 * model[algorithm].per_byte);
  }
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

}  // namespace

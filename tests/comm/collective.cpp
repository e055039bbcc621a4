// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/collective.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace {

/// The message every rank caught, or "" if it did not throw.
template <class Call>
std::string error_of(Call&& call) {
  try {
    call();
  } catch (const domex::Error& error) {
    return error.what();
  }
  return "";
}

TEST(Collective, AgreeReturnsWhenAllAreValid) {
  domex::Comm comm{MPI_COMM_WORLD};
  EXPECT_NO_THROW(domex::agree(comm, "test", ""));
  EXPECT_NO_THROW(domex::collectively(comm, [] {}));
}

TEST(Collective, OneRanksProblemIsAnErrorOnEveryRankNamingIt) {
  domex::Comm comm{MPI_COMM_WORLD};
  for (int bad : {0, comm.size() - 1, comm.size() / 2}) {
    const std::string problem = comm.rank() == bad ? "weight -1 of particle 7" : "";
    const std::string message = error_of([&] { domex::agree(comm, "rebalance", problem); });
    EXPECT_EQ(message, "domex: rank " + std::to_string(bad) + ": rebalance: weight -1 of particle 7");
  }
}

TEST(Collective, TheLowestFailingRankIsNamed) {
  domex::Comm comm{MPI_COMM_WORLD};
  // Every odd rank fails: rank 1 is named (or nobody at P = 1).
  const std::string problem = comm.rank() % 2 ? "odd" : "";
  const std::string message = error_of([&] { domex::agree(comm, "call", problem); });
  if (comm.size() == 1) EXPECT_EQ(message, "");
  else EXPECT_EQ(message, "domex: rank 1: call: odd");
}

TEST(Collective, AnyExceptionBecomesAnErrorOnEveryRank) {
  domex::Comm comm{MPI_COMM_WORLD};
  const int bad = comm.size() - 1;
  const std::string message = error_of([&] {
    domex::collectively(comm, [&] {
      if (comm.rank() == bad) throw std::runtime_error("disk full");
    });
  });
  EXPECT_EQ(message, "domex: rank " + std::to_string(bad) + ": disk full");
  // The communicator is still usable afterwards.
  EXPECT_EQ(comm.allreduce(1, MPI_SUM), comm.size());
}

TEST(Collective, FailTogetherThrowsOnEveryRank) {
  domex::Comm comm{MPI_COMM_WORLD};
  const std::string message =
      error_of([&] { domex::fail_together(comm, "exchange", comm.rank() == 0 ? "destination 9 out of range" : ""); });
  EXPECT_EQ(message, "domex: rank 0: exchange: destination 9 out of range");
}

}  // namespace

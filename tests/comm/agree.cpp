// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/collective.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(Agree, NothingThrownMeansNoErrorAndMaximaReduced) {
  domex::Comm comm{MPI_COMM_WORLD};
  double maxima[2] = {static_cast<double>(comm.rank()), -static_cast<double>(comm.rank())};
  domex::agree(comm, "test", [] {}, maxima);
  EXPECT_EQ(maxima[0], comm.size() - 1);
  EXPECT_EQ(maxima[1], 0.0);
}

TEST(Agree, OneRanksErrorIsEveryRanksErrorNamingTheLowestFailingRank) {
  domex::Comm comm{MPI_COMM_WORLD};
  for (int bad : {0, comm.size() / 2, comm.size() - 1}) {
    try {
      // Ranks >= bad fail; the lowest, `bad`, is the one reported.
      domex::agree(comm, "test", [&] {
        if (comm.rank() >= bad) domex::fail("test", "value " + std::to_string(40 + comm.rank()));
      });
      FAIL() << "no error";
    } catch (const domex::Error& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find("rank " + std::to_string(bad) + ": test: value " + std::to_string(40 + bad)),
                std::string::npos)
          << what;
    }
  }
  // The communicator is still usable afterwards.
  EXPECT_EQ(comm.allreduce(1, MPI_SUM), comm.size());
}

}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
// GoogleTest main for MPI tests: every rank runs every test; failures are
// printed by the rank that saw them (prefixed with its rank); the exit code is
// the maximum over all ranks, so a failure on any rank fails the ctest entry.

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {

/// On ranks other than 0, print only failures, prefixed "[rank R]".
class FailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (result.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                   result.line_number(), result.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  int result = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}

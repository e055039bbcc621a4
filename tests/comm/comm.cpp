// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/comm.hpp>

#include <gtest/gtest.h>

#include <numeric>

namespace {

TEST(Comm, DuplicatesAndKeepsRankAndSize) {
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  domex::Comm comm{MPI_COMM_WORLD};
  EXPECT_EQ(comm.rank(), world_rank);
  EXPECT_EQ(comm.size(), world_size);
  int result = 0;
  MPI_Comm_compare(comm.get(), MPI_COMM_WORLD, &result);
  EXPECT_EQ(result, MPI_CONGRUENT);  // same group, different context
}

TEST(Comm, TagsCycleIdenticallyOnAllRanks) {
  domex::Comm comm{MPI_COMM_WORLD};
  const int first = comm.next_tag();
  const int second = comm.next_tag();
  EXPECT_NE(first, second);
  const auto firsts = comm.allgather(first);
  for (int tag : firsts) EXPECT_EQ(tag, first);
  for (int i = 2; i < domex::Comm::tag_cycle; ++i) (void)comm.next_tag();
  EXPECT_EQ(comm.next_tag(), first);
}

TEST(Comm, AllreduceAndAllgatherv) {
  domex::Comm comm{MPI_COMM_WORLD};
  const int p = comm.size();
  EXPECT_EQ(comm.allreduce(comm.rank() + 1, MPI_SUM), p * (p + 1) / 2);
  EXPECT_EQ(comm.allreduce(static_cast<double>(comm.rank()), MPI_MAX), p - 1.0);
  // Rank r contributes r copies of r.
  std::vector<long> mine(static_cast<std::size_t>(comm.rank()), comm.rank());
  const auto all = comm.allgatherv<long>(mine);
  std::vector<long> expected;
  for (int r = 0; r < p; ++r) expected.insert(expected.end(), static_cast<std::size_t>(r), r);
  EXPECT_EQ(all, expected);
}

TEST(Comm, MpiErrorsBecomeExceptionsNamingTheCall) {
  domex::Comm comm{MPI_COMM_WORLD};
  int value = 0;
  // An invalid destination rank: MPI_ERRORS_RETURN on our duplicate makes this
  // an error code instead of an abort.
  const int code = MPI_Send(&value, 1, MPI_INT, comm.size() + 5, 0, comm.get());
  try {
    domex::check_mpi(code, "MPI_Send");
    FAIL() << "no exception";
  } catch (const domex::Error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("MPI_Send"), std::string::npos) << what;
    EXPECT_NE(what.find("rank " + std::to_string(comm.rank())), std::string::npos) << what;
  }
}

struct Counter {
  explicit Counter(domex::Comm& comm) : size(comm.size()) {}
  int size;
  int uses = 0;
};

TEST(Comm, CachedStateIsCreatedOncePerCommunicator) {
  domex::Comm comm{MPI_COMM_WORLD};
  comm.cached<Counter>().uses++;
  comm.cached<Counter>().uses++;
  EXPECT_EQ(comm.cached<Counter>().uses, 2);
  EXPECT_EQ(comm.cached<Counter>().size, comm.size());
  domex::Comm moved = std::move(comm);
  EXPECT_EQ(moved.cached<Counter>().uses, 2);
}

}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/reduce.hpp>

#include <gtest/gtest.h>

#include <complex>
#include <span>
#include <vector>

namespace {

TEST(ComplexAllreduce, EqualsTheSerialSum) {
  domex::Comm comm{MPI_COMM_WORLD};
  // Small integers: every partial sum is exact, so any order gives the serial sum.
  const auto value = [](int rank, int k) { return std::complex<double>(rank * 3 + k, -(rank + 1) * (k + 2)); };
  std::vector<std::complex<double>> values(5), serial(5);
  for (int k = 0; k < 5; ++k) {
    values[static_cast<std::size_t>(k)] = value(comm.rank(), k);
    for (int r = 0; r < comm.size(); ++r) serial[static_cast<std::size_t>(k)] += value(r, k);
  }
  auto blocking = values;
  domex::allreduce(comm, std::span(blocking));
  EXPECT_EQ(blocking, serial);
  auto pending = domex::iallreduce(comm, std::span(values));
  pending.wait();
  pending.wait();  // idempotent
  EXPECT_EQ(values, serial);
  EXPECT_TRUE(pending.ready());
}

TEST(ComplexAllreduce, OverlapsOtherWork) {
  domex::Comm comm{MPI_COMM_WORLD};
  std::vector<std::complex<double>> values{{1.0, -1.0}};
  auto pending = domex::iallreduce(comm, std::span(values));
  double work = 0;  // work while the sum is in flight
  for (int i = 0; i < 1000; ++i) work += i;
  domex::AllreduceRequest moved = std::move(pending);
  moved.wait();
  EXPECT_EQ(values[0], std::complex<double>(comm.size(), -comm.size()));
  EXPECT_EQ(work, 499500.0);
}

// By dimension: the serial sum (small integers: exact in any order) for the
// default grid and every 1-, 2- and 3-axis grid of the rank count; the same
// bits on every rank for values whose sum rounds; a bad grid fails on every rank.
TEST(ComplexAllreduce, ByDimensionEqualsTheSerialSumOnEveryGrid) {
  domex::Comm comm{MPI_COMM_WORLD};
  const int p = comm.size();
  const auto value = [](int rank, int k) { return std::complex<double>(rank * 7 - k, (rank + 2) * (k + 1)); };
  std::vector<std::complex<double>> serial(4);
  for (int k = 0; k < 4; ++k)
    for (int r = 0; r < p; ++r) serial[static_cast<std::size_t>(k)] += value(r, k);
  std::vector<std::vector<int>> grids{{}, {p}, {p, 1}, {1, p, 1}};
  for (int a = 1; a <= p; ++a)
    if (p % a == 0) {
      grids.push_back({a, p / a});
      for (int b = 1; b <= p / a; ++b)
        if ((p / a) % b == 0) grids.push_back({a, b, p / a / b});
    }
  for (const auto& grid : grids) {
    std::vector<std::complex<double>> values(4);
    for (int k = 0; k < 4; ++k) values[static_cast<std::size_t>(k)] = value(comm.rank(), k);
    domex::allreduce(comm, std::span(values), {.method = domex::ReduceMethod::by_dimension, .grid = grid});
    EXPECT_EQ(values, serial) << "grid of " << grid.size() << " axes, first " << (grid.empty() ? 0 : grid[0]);
  }
  // Rounded sums: by_dimension agrees with mpi to rounding, and is bitwise the same on every rank.
  std::vector<std::complex<double>> rounded{{0.1 * (comm.rank() + 1), 1.0 / (comm.rank() + 3)}};
  auto by_mpi = rounded;
  domex::allreduce(comm, std::span(by_mpi));
  domex::allreduce(comm, std::span(rounded), {.method = domex::ReduceMethod::by_dimension});
  EXPECT_NEAR(rounded[0].real(), by_mpi[0].real(), 1e-15 * p);
  EXPECT_NEAR(rounded[0].imag(), by_mpi[0].imag(), 1e-15 * p);
  const auto everywhere = comm.allgatherv(std::span<const std::complex<double>>(rounded));
  for (const auto& seen : everywhere) EXPECT_EQ(seen, rounded[0]) << "not the same bits on every rank";
}

TEST(ComplexAllreduce, AutomaticChoosesOneMethodOnEveryRank) {
  domex::Comm comm{MPI_COMM_WORLD};
  EXPECT_EQ(domex::automatic_reduce_choice(comm), domex::ReduceMethod::automatic);
  for (int call = 0; call < 40; ++call) {  // learning, then the choice: exact sums throughout
    std::vector<std::complex<double>> values{{double(comm.rank() + call), -1.0}};
    domex::allreduce(comm, std::span(values), {.method = domex::ReduceMethod::automatic});
    const double ranks = comm.size();
    ASSERT_EQ(values[0], std::complex<double>(ranks * (ranks - 1) / 2 + ranks * call, -ranks)) << "call " << call;
  }
  const auto choice = static_cast<int>(domex::automatic_reduce_choice(comm));
  EXPECT_NE(choice, static_cast<int>(domex::ReduceMethod::automatic));
  EXPECT_EQ(comm.allreduce(choice, MPI_MAX), comm.allreduce(choice, MPI_MIN)) << "ranks chose differently";
}

TEST(ComplexAllreduce, ByDimensionRejectsABadGridOnEveryRank) {
  domex::Comm comm{MPI_COMM_WORLD};
  std::vector<std::complex<double>> values{{1.0, 0.0}};
  // Wrong product (one rank more than there are), and a zero axis.
  EXPECT_THROW(domex::allreduce(comm, std::span(values),
                                {.method = domex::ReduceMethod::by_dimension, .grid = {comm.size() + 1}}),
               domex::Error);
  EXPECT_THROW(domex::allreduce(comm, std::span(values),
                                {.method = domex::ReduceMethod::by_dimension, .grid = {comm.size(), 0}}),
               domex::Error);
  // The Comm is still usable.
  domex::allreduce(comm, std::span(values), {.method = domex::ReduceMethod::by_dimension});
  EXPECT_EQ(values[0], std::complex<double>(comm.size(), 0));
}

}  // namespace

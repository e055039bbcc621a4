// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/reduce.hpp>

#include <gtest/gtest.h>

#include <complex>
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

}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/reduce.hpp>

#include <climits>
#include <string>
#include <utility>

namespace domex {
namespace {

int checked_count(std::span<std::complex<double>> values, const char* call) {
  if (values.size() > static_cast<std::size_t>(INT_MAX))
    fail(call, std::to_string(values.size()) + " values: more than INT_MAX");
  return static_cast<int>(values.size());
}

}  // namespace

void allreduce(const Comm& comm, std::span<std::complex<double>> values) {
  const int count = checked_count(values, "allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), count, MPI_C_DOUBLE_COMPLEX, MPI_SUM, comm.get()),
            "MPI_Allreduce");
}

AllreduceRequest iallreduce(const Comm& comm, std::span<std::complex<double>> values) {
  const int count = checked_count(values, "iallreduce");
  AllreduceRequest pending;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, values.data(), count, MPI_C_DOUBLE_COMPLEX, MPI_SUM, comm.get(),
                           &pending.request_),
            "MPI_Iallreduce");
  return pending;
}

AllreduceRequest::AllreduceRequest(AllreduceRequest&& other) noexcept
    : request_(std::exchange(other.request_, MPI_REQUEST_NULL)) {}

AllreduceRequest& AllreduceRequest::operator=(AllreduceRequest&& other) noexcept {
  if (this != &other) {
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
    request_ = std::exchange(other.request_, MPI_REQUEST_NULL);
  }
  return *this;
}

AllreduceRequest::~AllreduceRequest() {
  if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
}

void AllreduceRequest::wait() {
  if (request_ == MPI_REQUEST_NULL) return;
  check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait (iallreduce)");
}

bool AllreduceRequest::ready() {
  if (request_ == MPI_REQUEST_NULL) return true;
  int done = 0;
  check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test (iallreduce)");
  return done != 0;
}

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/collective.hpp>

#include <fmt/format.h>

#include <climits>
#include <exception>
#include <vector>

namespace domex {

namespace detail {

void agree_on_message(const Comm& comm, const std::string& message) {
  const int first = comm.allreduce(message.empty() ? INT_MAX : comm.rank(), MPI_MIN);
  if (first == INT_MAX) return;
  std::string text = comm.rank() == first ? message : std::string();
  int length = static_cast<int>(text.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT, first, comm.get()), "MPI_Bcast");
  text.resize(static_cast<std::size_t>(length));
  check_mpi(MPI_Bcast(text.data(), length, MPI_CHAR, first, comm.get()), "MPI_Bcast");
  throw Error(text);
}

}  // namespace detail

namespace {
std::string full_message(std::string_view call, const std::string& problem) {
  return problem.empty() ? std::string() : fmt::format("domex: rank {}: {}: {}", world_rank(), call, problem);
}
}  // namespace

void agree(const Comm& comm, std::string_view call, const std::string& problem) {
  detail::agree_on_message(comm, full_message(call, problem));
}

void agree(const Comm& comm, std::string_view call, const std::function<void()>& check, std::span<double> maxima) {
  std::string message;
  try {
    check();
  } catch (const std::exception& error) {
    message = *error.what() ? error.what() : "unknown error";
  }
  // Slot 0: size - (lowest failing rank), 0 when no rank failed; MPI_MAX
  // picks the lowest failing rank, the other slots their maxima.
  std::vector<double> values(1 + maxima.size());
  values[0] = message.empty() ? 0.0 : static_cast<double>(comm.size() - comm.rank());
  for (std::size_t m = 0; m < maxima.size(); ++m) values[m + 1] = message.empty() ? maxima[m] : 0.0;
  comm.allreduce_in_place(std::span<double>(values), MPI_MAX);
  if (values[0] == 0.0) {
    for (std::size_t m = 0; m < maxima.size(); ++m) maxima[m] = values[m + 1];
    return;
  }
  const int first = comm.size() - static_cast<int>(values[0]);
  int length = static_cast<int>(message.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT, first, comm.get()), "MPI_Bcast");
  message.resize(static_cast<std::size_t>(length));
  check_mpi(MPI_Bcast(message.data(), length, MPI_CHAR, first, comm.get()), "MPI_Bcast");
  if (comm.rank() == first) throw Error(message);
  fail(call, fmt::format("another rank (rank {} of this communicator) failed, so no rank went on: {}", first, message));
}

void fail_together(const Comm& comm, std::string_view call, const std::string& problem) {
  detail::agree_on_message(comm, full_message(call, problem));
  // Reached only if no rank had a problem: the caller's reduction said one did.
  fail(call, "a failure was reported, but no rank names one (inconsistent reduction)");
}

}  // namespace domex

#include <domex/comm/collective.hpp>

#include <fmt/format.h>

#include <climits>

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

void fail_together(const Comm& comm, std::string_view call, const std::string& problem) {
  detail::agree_on_message(comm, full_message(call, problem));
  // Reached only if no rank had a problem: the caller's reduction said one did.
  fail(call, "a failure was reported, but no rank names one (inconsistent reduction)");
}

}  // namespace domex

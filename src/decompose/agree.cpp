#include <domex/decompose/agree.hpp>

#include <fmt/format.h>

#include <exception>
#include <string>
#include <vector>

namespace domex {

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

}  // namespace domex

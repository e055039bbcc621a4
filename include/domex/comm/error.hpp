// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex::Error and the MPI error check used on every MPI call in domex.

#include <mpi.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace domex {

/// The one exception type of domex. Its message names the rank (in
/// MPI_COMM_WORLD), the call that failed and the offending value, e.g.
/// "domex: rank 3: exchange: destination 9 out of range [0, 8)".
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// Rank of this process in MPI_COMM_WORLD, or -1 before MPI_Init.
int world_rank() noexcept;

/// Throws domex::Error "domex: rank R: <call>: <what>".
[[noreturn]] void fail(std::string_view call, std::string_view what);

/// Throws domex::Error with MPI's own error string unless code is MPI_SUCCESS.
/// domex communicators and windows use MPI_ERRORS_RETURN, so every MPI error
/// comes back here instead of aborting the job.
inline void check_mpi(int code, std::string_view call) {
  if (code != MPI_SUCCESS) [[unlikely]] {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    fail(call, std::string(text, static_cast<std::size_t>(length)) + " (MPI error code " +
                   std::to_string(code) + ")");
  }
}

}  // namespace domex

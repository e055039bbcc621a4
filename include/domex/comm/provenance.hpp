// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Where a result came from: what every results file records next to its
// numbers, so a figure can be traced to the code, the MPI library, the
// compiler and the machine that produced it.

#include <domex/comm/comm.hpp>

#include <string>

namespace domex {

struct Provenance {
  std::string domex_version;  ///< "major.minor.patch"
  std::string git_commit;     ///< of the source tree domex was built from ("unknown" outside git)
  std::string mpi_library;    ///< first line of MPI_Get_library_version
  std::string compiler;       ///< name and version of the compiler that built domex
  std::string host;           ///< rank 0's host name
  std::string date_utc;       ///< ISO 8601, when provenance() was called
  int ranks = 1;              ///< size of the communicator
};

/// Collective over `comm` (rank 0's host name and clock are broadcast, so
/// every rank returns the same record).
[[nodiscard]] Provenance provenance(const Comm& comm);

}  // namespace domex

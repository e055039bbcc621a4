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

/// For nlohmann::json (found by argument-dependent lookup, so domex itself
/// needs no JSON library): `json{{"provenance", domex::provenance(comm)}}`.
template <class Json>
void to_json(Json& json, const Provenance& p) {
  json = Json{{"domex_version", p.domex_version}, {"git_commit", p.git_commit}, {"mpi_library", p.mpi_library},
              {"compiler", p.compiler},           {"host", p.host},             {"date_utc", p.date_utc},
              {"ranks", p.ranks}};
}

/// Collective over `comm` (rank 0's host name and clock are broadcast, so
/// every rank returns the same record).
[[nodiscard]] Provenance provenance(const Comm& comm);

/// The build's part of provenance() on one line, with no communication:
/// "domex <version> (git <commit>), <MPI library>, <compiler>" (what the
/// applications' --version prints).
[[nodiscard]] std::string build_summary();

}  // namespace domex

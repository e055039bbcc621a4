// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/provenance.hpp>
#include <domex/version.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <ctime>

#include "domex_git_commit.h"  // DOMEX_GIT_COMMIT (build/generated/, written by cmake/git_commit.cmake)

namespace domex {

namespace {

std::string broadcast_from_root(const Comm& comm, std::string text) {
  int length = static_cast<int>(text.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT, 0, comm.get()), "MPI_Bcast");
  text.resize(static_cast<std::size_t>(length));
  check_mpi(MPI_Bcast(text.data(), length, MPI_CHAR, 0, comm.get()), "MPI_Bcast");
  return text;
}

/// What the build fixes (no communication): version, commit, MPI library, compiler.
Provenance of_this_build() {
  Provenance p;
  p.domex_version = DOMEX_VERSION_STRING;
  p.git_commit = DOMEX_GIT_COMMIT;
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> library{};
  int length = 0;
  check_mpi(MPI_Get_library_version(library.data(), &length), "MPI_Get_library_version");
  p.mpi_library = std::string(library.data(), static_cast<std::size_t>(length));
  if (const auto newline = p.mpi_library.find_first_of(std::string_view("\r\n\0", 3)); newline != std::string::npos)
    p.mpi_library.resize(newline);
  while (!p.mpi_library.empty() && (p.mpi_library.back() == ' ' || p.mpi_library.back() == ',')) p.mpi_library.pop_back();
#if defined(__clang__)
  p.compiler = fmt::format("clang {}", __clang_version__);
#elif defined(__GNUC__)
  p.compiler = fmt::format("gcc {}", __VERSION__);
#else
  p.compiler = "unknown";
#endif
  return p;
}

}  // namespace

std::string build_summary() {
  const Provenance p = of_this_build();
  return "domex " + p.domex_version + " (git " + p.git_commit + "), " + p.mpi_library + ", " + p.compiler;
}

Provenance provenance(const Comm& comm) {
  Provenance p = of_this_build();
  std::string host, date;
  if (comm.rank() == 0) {
    std::array<char, 256> name{};
    if (::gethostname(name.data(), name.size() - 1) == 0) host = name.data();
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    ::gmtime_r(&now, &utc);
    std::array<char, 32> text{};
    std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
    date = text.data();
  }
  p.host = broadcast_from_root(comm, host);
  p.date_utc = broadcast_from_root(comm, date);
  p.ranks = comm.size();
  return p;
}

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
// domex-bench: benchmarks of domex's communication, one subcommand each.
//   mpirun -n 8 domex-bench sparse --json sparse.json
// Exit status: 0 done, 2 bad arguments (checked before any work).

#include "command.hpp"

#include <domex/comm/error.hpp>
#include <domex/comm/provenance.hpp>

#include <mpi.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <string>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  CLI::App app{"domex-bench: benchmarks of domex's communication (run under mpirun)"};
  // --version, as the applications have it (made only when asked for).
  app.set_version_flag(
      "--version", std::function<std::string()>([] { return "domex-bench: " + domex::build_summary(); }),
      "Print the versions of domex (and its git commit), the MPI library and the compiler, then exit");
  app.require_subcommand(1);
  for (const auto& add : domex::bench::registry()) add(app);
  int status = 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Every rank parses the same arguments, so every rank leaves here.
    // Bad arguments: one message (rank 0), exit status 2.
    const int code = rank == 0 ? app.exit(error) : error.get_exit_code();
    status = code == 0 ? 0 : 2;
  } catch (const domex::bench::BadArgument& error) {
    // The same on every rank: one message, exit status 2.
    if (rank == 0) std::fprintf(stderr, "%s\n", error.what());
    status = 2;
  } catch (const domex::Error& error) {  // names its origin already: no second prefix
    std::fprintf(stderr, "%s\n", error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "domex-bench: %s\n", error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}

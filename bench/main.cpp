// domex-bench: benchmarks of domex's communication, one subcommand each.
//   mpirun -n 8 domex-bench sparse --json sparse.json

#include "command.hpp"

#include <domex/comm/error.hpp>

#include <mpi.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  CLI::App app{"domex-bench: benchmarks of domex's communication (run under mpirun)"};
  app.require_subcommand(1);
  for (const auto& add : domex::bench::registry()) add(app);
  int status = 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Every rank parses the same arguments, so every rank leaves here.
    status = rank == 0 ? app.exit(error) : (error.get_exit_code() != 0 ? 1 : 0);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "domex-bench: %s\n", error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}

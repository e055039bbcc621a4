// SPDX-License-Identifier: BSD-3-Clause
// domex-lattice: the QCD communication pattern. A Wilson-Dirac operator on a
// random SU(3) gauge field, CG on D^dagger D, and the throughput histogram of
// the 8-direction halo exchange.
//   mpirun -n 4 domex-lattice --local 8 8 8 8 --path datatype --output results/lattice
// Exit codes: 0 done, 1 the run failed (e.g. CG did not converge), 2 bad arguments.

#include <fmt/format.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli.hpp"
#include "config.hpp"
#include "run.hpp"

namespace {

using namespace domex::lattice;

int run(int argc, char** argv) {
  domex::Comm comm{MPI_COMM_WORLD};
  const bool root = comm.rank() == 0;
  CommandLine line;
  auto app = make_app(line);
  try {
    app->parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Every rank parses the same arguments, so every rank leaves here.
    const int code = root ? app->exit(error) : error.get_exit_code();
    return code == 0 ? 0 : 2;
  }
  const Config config = line.finish();
  try {
    validate(config, comm);
  } catch (const domex::Error& error) {
    if (root) std::fprintf(stderr, "%s\n", error.what());
    return 2;
  }
  try {
    simulate(comm, config);
  } catch (const domex::Error& error) {
    // Thrown on every rank: report once.
    if (root) std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return domex::apps::main_of("domex-lattice", argc, argv, run); }

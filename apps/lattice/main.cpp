// SPDX-License-Identifier: BSD-3-Clause
// domex-lattice: the QCD communication pattern. A Wilson-Dirac operator on a
// random SU(3) gauge field, CG on D^dagger D, and the throughput histogram of
// the 8-direction halo exchange.
//   mpirun -n 4 domex-lattice --local 8 8 8 8 --path datatype --output results/lattice
// Exit codes: 0 done, 1 the run failed (e.g. CG did not converge), 2 bad arguments.

#include <fmt/format.h>
#include <mpi.h>

#include <cstdio>
#include <exception>

#include "cli.hpp"
#include "config.hpp"
#include "run.hpp"
#include "run_app.hpp"

namespace {

using namespace domex::lattice;

int run(int argc, char** argv) {
  domex::Comm comm{MPI_COMM_WORLD};
  CommandLine line;
  auto app = make_app(line);
  Config config;
  return domex::apps::run_app(
      comm, *app, argc, argv,
      [&] {
        config = line.finish();
        validate(config, comm);
      },
      [&] { simulate(comm, config); });
}

}  // namespace

int main(int argc, char** argv) { return domex::apps::main_of("domex-lattice", argc, argv, run); }

// SPDX-License-Identifier: BSD-3-Clause
// Fuzzes domex-mhd's command line and INI parser and the configuration check
// behind it, on one rank. First byte even: the rest is an INI file; odd: the
// rest is argv, one argument per line. Parsing must end in a parse error, a
// domex::Error from a check of a value or from validate(), or a valid Config; never a crash, a hang or
// undefined behaviour. Nothing is written (the output folder is cleared
// before validate()).

#include <CLI/CLI.hpp>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  std::atexit([] { MPI_Finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static domex::Comm comm{MPI_COMM_WORLD};
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  domex::mhd::CommandLine line;
  auto app = domex::mhd::make_app(line);
  try {
    if (data[0] % 2 == 0) {
      std::istringstream ini(text);
      app->parse_from_stream(ini);
    } else {
      std::vector<std::string> args;
      std::istringstream lines(text);
      for (std::string arg; std::getline(lines, arg);) args.push_back(arg);
      std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last to first
      app->parse(reversed);
    }
  } catch (const CLI::Error&) {
    return 0;
  } catch (const domex::Error&) {  // a value refused as typed (apps::whole_number)
    return 0;
  }
  domex::mhd::Config config = line.finish();
  config.output.clear();  // never create folders from fuzz input
  try {
    domex::mhd::validate(config, comm);
  } catch (const domex::Error&) {
  }
  return 0;
}

// SPDX-License-Identifier: BSD-3-Clause
#include "command_line.hpp"

#include <CLI/CLI.hpp>
#include <domex/comm/error.hpp>
#include <domex/comm/provenance.hpp>

#include <cstdio>
#include <functional>
#include <string>

namespace domex::apps {

void AppDeleter::operator()(CLI::App* app) const noexcept { delete app; }

std::optional<int> parse_command_line(const Comm& comm, CLI::App& app, int argc, char** argv) {
  const bool root = comm.rank() == 0;
  // --version (every application alike): the build's part of a results
  // file's provenance, on one line, made only when asked for.
  std::string program = argc > 0 && argv[0] ? argv[0] : "domex";
  program = program.substr(program.find_last_of('/') + 1);
  app.set_version_flag(
      "--version", std::function<std::string()>([program] { return program + ": " + build_summary(); }),
      "Print the versions of domex (and its git commit), the MPI library and the compiler, then exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = root ? app.exit(error) : error.get_exit_code();
    return code == 0 ? 0 : 2;
  } catch (const Error& error) {
    if (root) std::fprintf(stderr, "%s\n", error.what());
    return 2;
  }
  return std::nullopt;
}

}  // namespace domex::apps

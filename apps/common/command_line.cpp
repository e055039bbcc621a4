// SPDX-License-Identifier: BSD-3-Clause
#include "command_line.hpp"

#include <CLI/CLI.hpp>
#include <domex/comm/error.hpp>

#include <cstdio>

namespace domex::apps {

void AppDeleter::operator()(CLI::App* app) const noexcept { delete app; }

std::optional<int> parse_command_line(const Comm& comm, CLI::App& app, int argc, char** argv) {
  const bool root = comm.rank() == 0;
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

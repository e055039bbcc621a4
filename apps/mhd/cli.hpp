// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-mhd's command line: every Config field as a flag, the same names as
// INI keys (--config FILE). Shared by main.cpp and the parser's fuzz target.

#include <vector>

#include "command_line.hpp"
#include "config.hpp"

namespace domex::mhd {

/// What the command line sets; finish() gives the Config.
struct CommandLine {
  Config config;
  std::vector<long> cells{config.cells.begin(), config.cells.end()};
  std::vector<int> dims{config.dims.begin(), config.dims.end()};
  bool verify = false;
  /// The Config with the parsed cells and dims in place.
  [[nodiscard]] Config finish() const;
};

/// The parser, bound to `line` (which must outlive it). Unknown INI keys
/// are errors (a typo must not run with a default).
[[nodiscard]] apps::AppPtr make_app(CommandLine& line);

}  // namespace domex::mhd

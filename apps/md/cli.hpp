// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-md's command line: every Config field as a flag, the same names as
// INI keys (--config FILE).

#include "command_line.hpp"
#include "config.hpp"

namespace domex::md {

/// What the command line sets.
struct CommandLine {
  Config config;
  bool verify = false;
};

/// The parser, bound to `line` (which must outlive it). Unknown INI keys
/// are errors (a typo must not run with a default).
[[nodiscard]] apps::AppPtr make_app(CommandLine& line);

}  // namespace domex::md

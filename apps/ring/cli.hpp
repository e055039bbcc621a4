// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-ring's command line: every Config field as a flag, the same names as
// INI keys (--config FILE).

#include <vector>

#include "command_line.hpp"
#include "config.hpp"

namespace domex::ring {

/// What the command line sets; finish() gives the Config.
struct CommandLine {
  Config config;
  std::vector<int> divisions{config.divisions.begin(), config.divisions.end()};
  bool verify = false;
  CLI::Option* particles = nullptr;  ///< set by make_app()
  /// The Config with the parsed divisions in place.
  [[nodiscard]] Config finish() const;
  /// Whether --particles was given (flag or INI key): with --restart it must
  /// then equal the checkpoint's count, which is taken otherwise. Only while
  /// the parser from make_app() lives (it owns the option).
  [[nodiscard]] bool particles_given() const;
};

/// The parser, bound to `line` (which must outlive it). Unknown INI keys are
/// errors (a typo must not run with a default).
[[nodiscard]] apps::AppPtr make_app(CommandLine& line);

}  // namespace domex::ring

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-lattice's command line: every Config field as a flag, the same names
// as INI keys (--config FILE).

#include <vector>

#include "command_line.hpp"
#include "config.hpp"

namespace domex::lattice {

/// What the command line sets; finish() gives the Config.
struct CommandLine {
  Config config;
  std::vector<long> local{config.local.begin(), config.local.end()};
  std::vector<int> dims{config.dims.begin(), config.dims.end()};
  bool large = false;  ///< --large: 16^4 sites per rank
  /// The Config with the parsed local size and dims in place.
  [[nodiscard]] Config finish() const;
};

/// The parser, bound to `line` (which must outlive it). Unknown INI keys are
/// errors (a typo must not run with a default).
[[nodiscard]] apps::AppPtr make_app(CommandLine& line);

}  // namespace domex::lattice

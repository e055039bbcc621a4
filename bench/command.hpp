// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Subcommands of domex-bench register themselves here: each bench/<name>.cpp
// defines a static domex::bench::Registration that adds its CLI11 subcommand.

#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

namespace domex::bench {

/// Adds one subcommand (with its options and callback) to the app.
using AddSubcommand = std::function<void(CLI::App& app)>;

inline std::vector<AddSubcommand>& registry() {
  static std::vector<AddSubcommand> commands;
  return commands;
}

struct Registration {
  explicit Registration(AddSubcommand add) { registry().push_back(std::move(add)); }
};

}  // namespace domex::bench

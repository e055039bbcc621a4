// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Subcommands of domex-bench register themselves here: each bench/<name>.cpp
// defines a static domex::bench::Registration that adds its CLI11 subcommand.

#include <CLI/CLI.hpp>
#include <domex/comm/error.hpp>
#include <domex/exchange/algorithm.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace domex::bench {

/// A bad option value, found the same on every rank (every rank parses the
/// same arguments): main prints it once, as "domex-bench <command>: <what>",
/// and exits with 2.
class BadArgument : public Error {
 public:
  using Error::Error;
};

/// Throws BadArgument "<command>: <what>".
[[noreturn]] inline void bad_argument(std::string_view command, std::string_view what) {
  throw BadArgument(std::string(command) + ": " + std::string(what));
}

/// Every algorithm's name, automatic first: what an --algorithms option accepts.
inline std::vector<std::string> algorithm_names() {
  std::vector<std::string> names{std::string(to_string(Algorithm::automatic))};
  for (Algorithm algorithm : concrete_algorithms) names.emplace_back(to_string(algorithm));
  return names;
}

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

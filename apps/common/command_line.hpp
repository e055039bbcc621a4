// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// An application's parser without CLI11's headers: each cli.cpp builds its
// CLI::App (make_app()), main.cpp only holds and runs it. CLI11 is header-only:
// apps/mps/main.cpp took 24 s to compile at -O3 with it, 13 s without; now
// only cli.cpp and command_line.cpp include it.

#include <domex/comm/comm.hpp>

#include <memory>
#include <optional>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace domex::apps {

/// Deletes a CLI::App where CLI11 is included (command_line.cpp).
struct AppDeleter {
  void operator()(CLI::App* app) const noexcept;
};
/// What make_app() returns: an application's parser, usable where CLI11's
/// headers are not included.
using AppPtr = std::unique_ptr<CLI::App, AppDeleter>;

/// Parses argv with `app`, after adding --version: std::nullopt when the run
/// goes on, else the exit code (--help, --version: 0; a parse error: CLI11's
/// message, 2; a domex::Error from a check such as whole_number(): its
/// message, 2). Every rank parses the same arguments; only rank 0 prints.
[[nodiscard]] std::optional<int> parse_command_line(const Comm& comm, CLI::App& app, int argc, char** argv);

}  // namespace domex::apps

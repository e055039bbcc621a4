// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The run() every application shares: parse the command line, validate,
// simulate, each stage's error printed once (by rank 0) with its exit code.

#include <domex/comm/comm.hpp>
#include <domex/comm/error.hpp>

#include <cstdio>

#include "command_line.hpp"

namespace domex::apps {

/// Bad input found only once the run has begun (a checkpoint that does not
/// fit the run, read after the solver is built): run_app() exits with 2 for
/// it, as for every other bad input. Thrown the same on every rank.
class InputError : public Error {
 public:
  using Error::Error;
};

/// Parses argv with `app` (--help: exit 0; a parse error: CLI11's message,
/// exit 2; a domex::Error from a check such as whole_number(): its message,
/// exit 2), then `validate()` (a domex::Error: its message, exit 2, nothing
/// written), then `simulate()` (a domex::Error: its message, exit 1; an
/// InputError: exit 2). Every
/// rank parses the same arguments and the checks are collective, so every
/// rank takes the same branch; only rank 0 prints.
template <class Validate, class Simulate>
int run_app(const Comm& comm, CLI::App& app, int argc, char** argv, Validate&& validate, Simulate&& simulate) {
  const bool root = comm.rank() == 0;
  if (const auto code = parse_command_line(comm, app, argc, argv)) return *code;
  try {
    validate();
  } catch (const Error& error) {
    if (root) std::fprintf(stderr, "%s\n", error.what());
    return 2;
  }
  try {
    simulate();
  } catch (const InputError& error) {
    if (root) std::fprintf(stderr, "%s\n", error.what());
    return 2;
  } catch (const Error& error) {
    if (root) std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}

}  // namespace domex::apps

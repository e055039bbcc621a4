// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// What Algorithm::automatic knows on a communicator, and how to keep it.
//
//   auto inbox = domex::exchange(comm, outbox);               // automatic, learning
//   for (const auto& c : domex::automatic_report(comm).classes) ...   // what it chose, how
//   if (comm.rank() == 0) domex::learned_model(comm).save("domex-cost-model.txt");

#include <domex/comm/comm.hpp>
#include <domex/exchange/algorithm.hpp>
#include <domex/exchange/cost_model.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace domex {

/// One class of calls automatic has seen on a Comm (see LearnedChoice for
/// the classes).
struct AutomaticClass {
  int message_class = 0;
  int byte_class = 0;
  Algorithm chosen = Algorithm::nbx;  ///< what it runs now
  /// "model" (predicted only), "learned" (measured here) or "loaded"
  /// (measured in an earlier run, from the cost-model file).
  std::string how = "model";
  /// Measured seconds per call (slowest rank), indexed like
  /// concrete_algorithms; negative where not measured.
  std::array<double, concrete_algorithms.size()> seconds = [] {
    std::array<double, concrete_algorithms.size()> none{};
    none.fill(-1);
    return none;
  }();
  std::uint64_t calls = 0;  ///< calls of this class so far
  /// Estimated seconds all calls of this class took (the slowest rank), as of
  /// the last epoch boundary: the measuring epochs as measured, the calls
  /// between them at the chosen algorithm's measured time per call. One-time
  /// setups are not in it (AutomaticReport::setup_seconds).
  double seconds_total = 0;
  /// Estimated regret: how much seconds_total exceeds the same calls at the
  /// fastest measured time per call (the best fixed algorithm in hindsight,
  /// as far as measured), i.e. what learning and rechecking cost the class.
  double regret_seconds = 0;
};

/// An algorithm automatic does not run on a Comm, and why: the one-sided
/// algorithms where windows could collide with another group's (an MPI
/// defect, see comm/mpi_defects.hpp) or where a window could not be created.
struct ExcludedAlgorithm {
  Algorithm algorithm = Algorithm::rma_fence;
  std::string reason;
};

/// automatic's state on `comm`: the model it started from, every class, and
/// the algorithms it does not run there. Local, no communication; identical
/// on every rank.
struct AutomaticReport {
  std::string model_source;  ///< "built-in" or the cost-model file
  std::vector<AutomaticClass> classes;
  std::vector<ExcludedAlgorithm> excluded;
  /// One-time setup automatic paid on this Comm: what the first call of each
  /// algorithm took beyond its measured time per call (an RMA window, the
  /// grid's communicators). Charged to the Comm, whose per-Comm state every
  /// class reuses, not to the class that happened to try it first.
  double setup_seconds = 0;
};
[[nodiscard]] AutomaticReport automatic_report(const Comm& comm);

/// The model automatic uses on `comm` with every measured choice added to its
/// `learned` table: save it from one rank (`if (rank == 0) model.save(path)`)
/// and the next run, which reads it once through CostModel::of_this_machine,
/// starts from what this one learned. Identical on every rank; collective
/// only if automatic has never run on `comm` (it then reads the model).
[[nodiscard]] CostModel learned_model(const Comm& comm);

namespace detail {
/// For tests: multiplies every time automatic measures on this rank (a
/// skewed clock). 1 restores it.
void set_clock_skew_for_testing(double factor) noexcept;
/// For tests: every exchange on this rank that runs `algorithm` (named or
/// chosen by automatic) sleeps `seconds` more, inside automatic's timing (an
/// algorithm made slow on one rank). 0 restores it.
void set_algorithm_delay_for_testing(Algorithm algorithm, double seconds) noexcept;
}  // namespace detail

}  // namespace domex

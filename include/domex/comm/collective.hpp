// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Agreeing on errors in collective calls. The rule every collective domex call
// follows: one rank's bad input becomes a domex::Error on *every* rank, never a
// hang of the ranks that were valid (they would wait in the next collective
// for the rank that threw).
//
//   domex::agree(comm, "rebalance", problem);     // "" on valid ranks
//   domex::collectively(comm, [&] { check(input); });

#include <domex/comm/comm.hpp>

#include <exception>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace domex {

/// Collective over `comm`. Every rank passes what is wrong with its own input
/// ("" when nothing is). If any rank has a problem, every rank throws the same
/// domex::Error: "domex: rank R: <call>: <problem>" for the lowest such rank R
/// (its rank in MPI_COMM_WORLD). Costs one MPI_Allreduce of an int when all
/// are valid; a broadcast of the message only when one is not.
void agree(const Comm& comm, std::string_view call, const std::string& problem);

/// Collective over `comm`. Runs `check` on this rank (it validates local
/// input and may throw), then one MPI_Allreduce(MPI_MAX) of 1 + maxima.size()
/// doubles tells every rank whether some rank's check threw. If one did, every
/// rank throws domex::Error: the lowest failing rank its own message, the
/// others one that names it and quotes it (one MPI_Bcast, only on failure).
/// `maxima` (finite values on entry when `check` succeeds) is reduced in the
/// same call: on return it holds the maximum over all ranks, so a call that
/// needs global maxima anyway (weight scales, extents) pays nothing extra.
void agree(const Comm& comm, std::string_view call, const std::function<void()>& check,
           std::span<double> maxima = {});

/// The error path of agree() alone, for calls that already learned from a
/// reduction they make anyway that some rank failed: every rank must call it.
/// Throws on every rank; `problem` is "" on the ranks without one.
[[noreturn]] void fail_together(const Comm& comm, std::string_view call, const std::string& problem);

/// Collective over `comm`: runs `work` on every rank; if it throws on any rank
/// (any exception type), every rank throws one domex::Error with the message
/// of the lowest failing rank. Strong guarantee only as far as `work` gives it.
template <class Work>
void collectively(const Comm& comm, Work&& work);

namespace detail {
/// agree() for a message that is already complete (a caught exception's text).
void agree_on_message(const Comm& comm, const std::string& message);
}  // namespace detail

// ---------------------------------------------------------------------------

template <class Work>
void collectively(const Comm& comm, Work&& work) {
  std::string message;
  try {
    work();
  } catch (const Error& error) {
    message = error.what();
  } catch (const std::exception& error) {
    message = std::string("domex: rank ") + std::to_string(world_rank()) + ": " +
              (*error.what() ? error.what() : "unknown error");
  }
  detail::agree_on_message(comm, message);
}

}  // namespace domex

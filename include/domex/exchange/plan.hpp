// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// A sparse exchange whose pattern is discovered once and then reused, as a
// PetscSF is: persistent requests, receives posted straight into the inbox's
// final place (sources ascending, no staging, no reordering), no discovery
// step per call.
//
//   domex::SparsePlan<Particle> plan(comm, outbox);      // discovers who sends what to whom
//   for (step ...) {
//     fill(outbox);                                       // same destinations and sizes
//     const auto& inbox = plan.exchange(outbox);          // one small allreduce checks that
//   }

#include <domex/comm/comm.hpp>
#include <domex/exchange/algorithm.hpp>
#include <domex/exchange/exchange.hpp>

#include <cstddef>
#include <memory>

namespace domex {

/// How SparsePlan::exchange learns that an outbox no longer matches the plan.
enum class PlanCheck {
  /// One MPI_Allreduce of an int per call: a rank whose outbox changed
  /// (destinations or sizes) makes every rank re-plan, and the call goes on.
  collective,
  /// No collective: the caller promises the pattern is unchanged. A rank that
  /// breaks the promise sends messages of impossible sizes instead of its
  /// data, so it and every rank it was to send to throw domex::Error (never a
  /// hang, never a silent wrong inbox); call replan() and go on.
  promised,
};

struct PlanOptions {
  /// Algorithm of the discovery (a sparse exchange of the message sizes).
  Algorithm discovery = Algorithm::automatic;
  PlanCheck check = PlanCheck::collective;
  /// Largest piece one MPI message carries (0: 1 GiB); as ExchangeOptions.
  std::size_t max_message_bytes = 0;
};

namespace detail {
/// The byte-level plan behind SparsePlan<T> (src/exchange/plan.cpp).
class BytePlan {
 public:
  BytePlan(const Comm& comm, const PlanOptions& options);
  BytePlan(BytePlan&&) noexcept;
  BytePlan& operator=(BytePlan&&) noexcept;
  ~BytePlan();
  /// Collective: discovers the pattern of `send` and lays out `into`.
  void plan(const SendView& send, RecvStore& into);
  /// Collective: exchanges `send` into `into` along the plan (re-planning
  /// first where PlanCheck::collective finds a change).
  void begin(const SendView& send, RecvStore& into);
  ExchangeStats finish(RecvStore& into);
  [[nodiscard]] std::size_t replans() const noexcept;
  [[nodiscard]] bool active() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};
}  // namespace detail

/// A reusable sparse exchange of elements of type T. Collective calls, in
/// the same order on every rank. The plan has its own duplicate of the
/// communicator, so its messages never match any other call's.
template <Sendable T>
class SparsePlan {
 public:
  /// Collective: discovers the pattern of `outbox` (one sparse exchange of the
  /// message sizes). One rank's invalid outbox is a domex::Error on every
  /// rank; the plan is then not constructed.
  SparsePlan(const Comm& comm, const Outbox<T>& outbox, PlanOptions options = {})
      : plan_(comm, options) {
    plan_.plan(outbox.view(), inbox_.store_);
  }

  /// Collective: sends `outbox` along the plan, returns what arrived (owned by
  /// the plan, valid until the next call). Basic guarantee: after a throw the
  /// inbox is empty and the plan usable (re-planned on the next call where
  /// PlanCheck::collective, or after replan()).
  const Inbox<T>& exchange(const Outbox<T>& outbox) {
    begin(outbox);
    return finish();
  }
  /// Non-blocking form: starts the exchange; compute, then finish(). The
  /// outbox must stay alive and unchanged until finish() returns.
  void begin(const Outbox<T>& outbox) { plan_.begin(outbox.view(), inbox_.store_); }
  /// Completes the exchange started by begin().
  const Inbox<T>& finish() {
    inbox_.stats_ = {};
    inbox_.stats_ = plan_.finish(inbox_.store_);
    return inbox_;
  }
  /// Collective: discovers the pattern again from `outbox`.
  void replan(const Outbox<T>& outbox) { plan_.plan(outbox.view(), inbox_.store_); }

  /// Times the pattern was discovered (1 after construction).
  [[nodiscard]] std::size_t plans() const noexcept { return plan_.replans(); }
  [[nodiscard]] const Inbox<T>& inbox() const noexcept { return inbox_; }

 private:
  detail::BytePlan plan_;
  Inbox<T> inbox_;
};

}  // namespace domex

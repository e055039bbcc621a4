// SPDX-License-Identifier: BSD-3-Clause
// exchange_begin/finish and exchange_each: NBX split in two halves, and NBX
// handing each message over as it arrives.

#include "detail.hpp"

#include <domex/comm/collective.hpp>
#include <domex/exchange/exchange.hpp>

#include <fmt/format.h>

#include <climits>
#include <exception>
#include <optional>

namespace domex::detail {


struct PendingBytes::State {
  State(Comm& comm, const SendView& send, const ExchangeOptions& options) : comm(comm), send(send) {
    const CheckedCall checked = check_call(comm, send, options);
    problem = checked.problem;
    piece = checked.piece;
    this->send = checked.sent(send);
    tag = comm.next_tag();
  }
  Comm& comm;
  SendView send;
  std::optional<std::string> problem;
  std::size_t piece = default_piece;
  int tag = 0;
  RecvStore store;
  ExchangeStats stats{.algorithm = Algorithm::nbx};
  std::vector<MPI_Request> sends;
  bool finished = false;

  Call call(RecvStore& into) {
    Call c{comm, send, into, stats, tag, piece, 0};
    c.failed_here = problem.has_value();
    return c;
  }
};

PendingBytes::PendingBytes(Comm& comm, const SendView& send, const ExchangeOptions& options)
    : state_(std::make_unique<State>(comm, send, options)) {
  Call call = state_->call(state_->store);
  nbx_start(call, state_->sends);
}

PendingBytes::PendingBytes(PendingBytes&&) noexcept = default;
PendingBytes& PendingBytes::operator=(PendingBytes&&) noexcept = default;

PendingBytes::~PendingBytes() {
  // finish() not called (an exception unwound past it): complete the
  // exchange anyway, so no rank waits for this one and no message is left
  // to match a later call.
  if (state_ && !state_->finished) {
    try {
      RecvStore dropped;
      (void)finish(dropped);
    } catch (...) {
    }
  }
}

ExchangeStats PendingBytes::finish(RecvStore& into) {
  State& s = *state_;
  if (s.finished) fail("PendingExchange::finish", "already finished");
  s.finished = true;
  into.clear();
  try {
    Call call = s.call(into);
    copy_self(call);
    nbx_complete(call, s.sends, nullptr);
    if (call.failed_somewhere) {
      into.clear();
      fail_together(s.comm, "exchange_begin", s.problem.value_or(""));
    }
    finish_store(into, s.send.element_size, s.comm.rank());
  } catch (...) {
    into.clear();
    throw;
  }
  return s.stats;
}

ExchangeStats exchange_each_bytes(Comm& comm, const SendView& send, const MessageHandler& each,
                                  const ExchangeOptions& options) {
  const CheckedCall checked = check_call(comm, send, options);
  const auto& problem = checked.problem;
  const SendView sent = checked.sent(send);
  RecvStore unused;
  ExchangeStats stats{.algorithm = Algorithm::nbx};
  Call call{comm, sent, unused, stats, comm.next_tag(), checked.piece, 0};
  call.failed_here = problem.has_value();
  // The handler's exceptions wait until the exchange is complete everywhere;
  // messages of a size that is not a whole number of elements are an error.
  std::exception_ptr first;
  std::string bad_size;
  const MessageHandler guarded = [&](int source, std::span<const std::byte> bytes) {
    if (bytes.size() % send.element_size != 0) {
      if (bad_size.empty())
        bad_size = fmt::format("rank {} received {} bytes from rank {}, not a multiple of the element size {}",
                               comm.rank(), bytes.size(), source, send.element_size);
      return;
    }
    if (first) return;
    try {
      each(source, bytes);
    } catch (...) {
      first = std::current_exception();
    }
  };
  auto& requests = request_scratch();
  nbx_start(call, requests);
  for (std::size_t i = 0; i < sent.ranks.size(); ++i)
    if (call.to_self(i)) guarded(comm.rank(), std::span<const std::byte>(call.payload(i), call.bytes(i)));
  nbx_complete(call, requests, &guarded);
  if (call.failed_somewhere) fail_together(comm, "exchange_each", problem.value_or(""));
  if (first) std::rethrow_exception(first);
  if (!bad_size.empty()) fail("exchange_each", bad_size);
  return stats;
}

}  // namespace domex::detail

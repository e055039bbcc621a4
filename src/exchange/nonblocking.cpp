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

namespace {
constexpr std::size_t default_piece = std::size_t{1} << 30;

/// What exchange_bytes checks before it communicates; the empty send side
/// replaces an invalid one (the rank then takes part with no messages).
std::optional<std::string> check(const Comm& comm, const SendView& send, const ExchangeOptions& options,
                                 std::size_t& piece) {
  piece = options.max_message_bytes ? options.max_message_bytes : default_piece;
  if (piece > static_cast<std::size_t>(INT_MAX)) {
    piece = default_piece;
    return fmt::format("max_message_bytes {} exceeds INT_MAX", options.max_message_bytes);
  }
  return invalid(send, comm.size());
}
}  // namespace

struct PendingBytes::State {
  State(Comm& comm, const SendView& send, const ExchangeOptions& options) : comm(comm), send(send) {
    problem = check(comm, send, options, piece);
    if (problem) this->send = SendView{{}, {}, nullptr, send.element_size, 0};
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
  std::size_t piece = default_piece;
  const auto problem = check(comm, send, options, piece);
  const SendView sent = problem ? SendView{{}, {}, nullptr, send.element_size, 0} : send;
  RecvStore unused;
  ExchangeStats stats{.algorithm = Algorithm::nbx};
  Call call{comm, sent, unused, stats, comm.next_tag(), piece, 0};
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

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Sparse dynamic data exchange: every rank knows what it sends to whom,
// nobody knows who sends to it (particle migration, LET exchange).
//
//   domex::Outbox<Particle> outbox;
//   outbox.add(neighbour, leaving);                       // or Outbox::by_destination
//   auto inbox = domex::exchange(comm, outbox, {.algorithm = domex::Algorithm::nbx});
//   for (auto [source, particles] : inbox) ...

#include <domex/comm/comm.hpp>
#include <domex/exchange/algorithm.hpp>
#include <domex/exchange/buffer.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace domex {

template <Sendable T>
class SparsePlan;
template <Sendable T>
class PendingExchange;

namespace detail {
/// The byte-level exchange behind every typed call: validates the send side,
/// runs the algorithm, leaves `into` sorted by source. Collective.
ExchangeStats exchange_bytes(Comm& comm, const SendView& send, RecvStore& into, const ExchangeOptions& options);

/// For tests: the next RMA window creation on this rank reports a failure
/// (after the collective creation itself succeeded), as an MPI defect would.
/// Call it on one rank: every rank then falls back together.
void fail_next_window_for_testing() noexcept;

/// A received message handed to the caller: its source and its bytes.
using MessageHandler = std::function<void(int source, std::span<const std::byte> bytes)>;
/// exchange_each() at the byte level (NBX).
ExchangeStats exchange_each_bytes(Comm& comm, const SendView& send, const MessageHandler& each,
                                  const ExchangeOptions& options);

/// An NBX exchange whose sends are posted; finish() receives and completes.
class PendingBytes {
 public:
  PendingBytes(Comm& comm, const SendView& send, const ExchangeOptions& options);
  PendingBytes(PendingBytes&&) noexcept;
  PendingBytes& operator=(PendingBytes&&) noexcept;
  ~PendingBytes();
  ExchangeStats finish(RecvStore& into);

 private:
  struct State;
  std::unique_ptr<State> state_;
};
}  // namespace detail

/// The send side: messages grouped by destination in one contiguous buffer
/// (CSR: destination ranks, element offsets, data). Destinations must be
/// distinct; a message may be empty; a message to one's own rank is copied.
template <Sendable T>
class Outbox {
 public:
  Outbox() = default;
  /// Adopts a ready CSR description: message i goes to ranks[i] and holds
  /// data[offsets[i] .. offsets[i+1]). Checked by exchange(), not here.
  Outbox(std::vector<int> ranks, std::vector<std::size_t> offsets, std::vector<T> data)
      : ranks_(std::move(ranks)), offsets_(std::move(offsets)), data_(std::move(data)) {}

  /// Groups items by destination (a counting sort, O(n + max destination)):
  /// item j goes to destination_of_item[j]; messages come out with ascending
  /// destinations. Throws domex::Error for a negative destination.
  static Outbox by_destination(std::span<const int> destination_of_item, std::span<const T> items);

  /// Appends a message to `destination`, or extends the last message if it
  /// goes to the same destination.
  void add(int destination, std::span<const T> items) {
    if (ranks_.empty() || ranks_.back() != destination) {
      ranks_.push_back(destination);
      offsets_.push_back(offsets_.back());
    }
    data_.insert(data_.end(), items.begin(), items.end());
    offsets_.back() = data_.size();
  }
  void add(int destination, const T& item) { add(destination, std::span<const T>(&item, 1)); }
  /// Removes every message, keeps the capacity (reuse it every step).
  void clear() noexcept {
    ranks_.clear();
    offsets_.assign(1, 0);
    data_.clear();
  }

  [[nodiscard]] std::size_t message_count() const noexcept { return ranks_.size(); }
  [[nodiscard]] std::span<const int> ranks() const noexcept { return ranks_; }
  [[nodiscard]] std::span<const std::size_t> offsets() const noexcept { return offsets_; }
  [[nodiscard]] std::span<const T> data() const noexcept { return data_; }
  [[nodiscard]] std::span<const T> message(std::size_t i) const {
    return std::span<const T>(data_).subspan(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  [[nodiscard]] detail::SendView view() const noexcept {
    return {ranks_, offsets_, reinterpret_cast<const std::byte*>(data_.data()), sizeof(T), data_.size()};
  }

 private:
  std::vector<int> ranks_;
  std::vector<std::size_t> offsets_{0};
  std::vector<T> data_;
};

/// The receive side: one message per rank that sent to this one, sources
/// ascending, in one contiguous buffer (sources, element offsets, data).
template <Sendable T>
class Inbox {
 public:
  struct Message {
    int source;
    std::span<const T> items;
  };
  class Iterator {
   public:
    Iterator(const Inbox* inbox, std::size_t index) : inbox_(inbox), index_(index) {}
    Message operator*() const { return {inbox_->source(index_), inbox_->message(index_)}; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator==(const Iterator& other) const = default;

   private:
    const Inbox* inbox_;
    std::size_t index_;
  };

  [[nodiscard]] std::size_t message_count() const noexcept { return store_.sources.size(); }
  [[nodiscard]] std::span<const int> sources() const noexcept { return store_.sources; }
  [[nodiscard]] int source(std::size_t i) const { return store_.sources[i]; }
  /// Element offsets, message_count() + 1 of them.
  [[nodiscard]] std::span<const std::size_t> offsets() const noexcept { return store_.offsets; }
  /// Total number of elements received.
  [[nodiscard]] std::size_t size() const noexcept { return store_.offsets.back(); }
  [[nodiscard]] std::span<const T> data() const noexcept {
    return {reinterpret_cast<const T*>(store_.data.data()), size()};
  }
  [[nodiscard]] std::span<T> data() noexcept { return {reinterpret_cast<T*>(store_.data.data()), size()}; }
  [[nodiscard]] std::span<const T> message(std::size_t i) const {
    return data().subspan(store_.offsets[i], store_.offsets[i + 1] - store_.offsets[i]);
  }
  [[nodiscard]] Iterator begin() const { return {this, 0}; }
  [[nodiscard]] Iterator end() const { return {this, message_count()}; }
  /// What the exchange that filled this inbox did on this rank.
  [[nodiscard]] const ExchangeStats& stats() const noexcept { return stats_; }

 private:
  template <Sendable U>
  friend void exchange(Comm&, const Outbox<U>&, Inbox<U>&, const ExchangeOptions&);
  template <Sendable U>
  friend class SparsePlan;
  template <Sendable U>
  friend class PendingExchange;
  detail::RecvStore store_;
  ExchangeStats stats_;
};

/// Collective sparse exchange into an existing inbox, whose storage is reused
/// (no allocation once it has grown to the pattern). `options` must be the
/// same on every rank. If one rank's outbox or options are invalid
/// (destination out of range or repeated, inconsistent offsets, a piece size
/// above INT_MAX), every rank throws the same domex::Error naming that rank
/// and value, without an extra collective on the valid path: the news travels
/// in the algorithm's own synchronisation. Basic guarantee: after any throw
/// `into` is empty (no sources, no data) and reusable; the Comm stays usable.
template <Sendable T>
void exchange(Comm& comm, const Outbox<T>& outbox, Inbox<T>& into, const ExchangeOptions& options = {}) {
  static_assert(alignof(T) <= alignof(std::max_align_t), "over-aligned types cannot be exchanged");
  into.stats_ = {};
  into.stats_ = detail::exchange_bytes(comm, outbox.view(), into.store_, options);
}

/// Collective sparse exchange; returns what this rank received. Errors as above.
template <Sendable T>
[[nodiscard]] Inbox<T> exchange(Comm& comm, const Outbox<T>& outbox, const ExchangeOptions& options = {}) {
  Inbox<T> inbox;
  exchange(comm, outbox, inbox, options);
  return inbox;
}

/// An exchange started by exchange_begin(); finish() completes it.
template <Sendable T>
class PendingExchange {
 public:
  /// Collective: receives everything sent to this rank and returns it (the
  /// same inbox exchange() would give). Errors as exchange(), thrown here.
  [[nodiscard]] Inbox<T> finish() {
    Inbox<T> inbox;
    inbox.stats_ = bytes_.finish(inbox.store_);
    return inbox;
  }

 private:
  template <Sendable U>
  friend PendingExchange<U> exchange_begin(Comm&, const Outbox<U>&, const ExchangeOptions&);
  PendingExchange(Comm& comm, const Outbox<T>& outbox, const ExchangeOptions& options)
      : bytes_(comm, outbox.view(), options) {}
  detail::PendingBytes bytes_;
};

/// Non-blocking sparse exchange: posts the sends and returns; compute, then
/// call finish() on the result (collective, in the same order on every rank).
/// Always NBX (Hoefler et al. 2010), whose synchronous sends travel while the
/// caller computes; options.algorithm is ignored. The outbox must stay alive
/// and unchanged until finish() returns.
template <Sendable T>
[[nodiscard]] PendingExchange<T> exchange_begin(Comm& comm, const Outbox<T>& outbox,
                                                const ExchangeOptions& options = {}) {
  return PendingExchange<T>(comm, outbox, options);
}

/// Collective sparse exchange that hands each message to
/// `on_message(int source, std::span<const T> items)` as soon as it arrives
/// (any source order, the message to self included), without staging the
/// whole inbox. NBX. If the handler throws, the exchange still completes on
/// every rank and the first exception is rethrown here afterwards; invalid
/// input throws on every rank as exchange() does (the handler may already
/// have seen some messages).
template <Sendable T, class Handler>
ExchangeStats exchange_each(Comm& comm, const Outbox<T>& outbox, Handler&& on_message,
                            const ExchangeOptions& options = {}) {
  const detail::MessageHandler each = [&](int source, std::span<const std::byte> bytes) {
    on_message(source, std::span<const T>(reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)));
  };
  return detail::exchange_each_bytes(comm, outbox.view(), each, options);
}

// ---------------------------------------------------------------------------

template <Sendable T>
Outbox<T> Outbox<T>::by_destination(std::span<const int> destination_of_item, std::span<const T> items) {
  if (destination_of_item.size() != items.size())
    fail("Outbox::by_destination", "destination_of_item and items differ in length");
  int highest = -1;
  for (std::size_t j = 0; j < destination_of_item.size(); ++j) {
    if (destination_of_item[j] < 0)
      fail("Outbox::by_destination",
           "item " + std::to_string(j) + " has negative destination " + std::to_string(destination_of_item[j]));
    highest = std::max(highest, destination_of_item[j]);
  }
  std::vector<std::size_t> start(static_cast<std::size_t>(highest) + 2, 0);
  for (int destination : destination_of_item) ++start[static_cast<std::size_t>(destination) + 1];
  Outbox outbox;
  outbox.offsets_.clear();
  outbox.offsets_.push_back(0);
  for (std::size_t d = 0; d + 1 < start.size(); ++d) {
    if (start[d + 1] == 0) continue;
    outbox.ranks_.push_back(static_cast<int>(d));
    outbox.offsets_.push_back(outbox.offsets_.back() + start[d + 1]);
  }
  for (std::size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
  outbox.data_.resize(items.size());
  for (std::size_t j = 0; j < items.size(); ++j)
    outbox.data_[start[static_cast<std::size_t>(destination_of_item[j])]++] = items[j];
  return outbox;
}

}  // namespace domex

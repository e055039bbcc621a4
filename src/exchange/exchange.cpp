// SPDX-License-Identifier: BSD-3-Clause
// exchange_bytes: validation, dispatch to the algorithms, and the helpers
// they share (detail.hpp).

#include "detail.hpp"

#include <domex/comm/collective.hpp>
#include <domex/comm/mpi_defects.hpp>
#include <domex/exchange/exchange.hpp>

#include <fmt/format.h>

#include <domex/exchange/automatic.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <numeric>
#include <optional>
#include <string>
#include <thread>

namespace domex::detail {

namespace {

/// set_algorithm_delay_for_testing(): seconds added per algorithm on this rank.
std::array<double, concrete_algorithms.size() + 1> algorithm_delay{};

}  // namespace

void set_algorithm_delay_for_testing(Algorithm algorithm, double seconds) noexcept {
  algorithm_delay[static_cast<std::size_t>(algorithm)] = seconds;
}

void finish_store(RecvStore& into, std::size_t element_size, int rank) {
  const std::size_t count = into.sources.size();
  for (std::size_t i = 0; i <= count; ++i) {
    if (into.offsets[i] % element_size != 0)
      fail("exchange", fmt::format("rank {} received a message of {} bytes from rank {}, not a multiple of the "
                                   "element size {} (different types on sender and receiver?)",
                                   rank, into.offsets[i] - (i ? into.offsets[i - 1] : 0), into.sources[i ? i - 1 : 0],
                                   element_size));
  }
  if (!std::is_sorted(into.sources.begin(), into.sources.end())) {
    std::vector<std::size_t> order(count);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return into.sources[a] < into.sources[b]; });
    into.scratch.resize(into.data.size());
    std::vector<int> sources(count);
    std::vector<std::size_t> offsets(count + 1, 0);
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t i = order[k];
      const std::size_t length = into.offsets[i + 1] - into.offsets[i];
      copy_bytes(into.scratch.data() + offsets[k], into.data.data() + into.offsets[i], length);
      sources[k] = into.sources[i];
      offsets[k + 1] = offsets[k] + length;
    }
    into.data.swap(into.scratch);
    into.sources.swap(sources);
    into.offsets.swap(offsets);
  }
  for (auto& offset : into.offsets) offset /= element_size;
}

/// The first thing wrong with a send side, or nothing.
std::optional<std::string> invalid(const SendView& send, int size) {
  const auto& ranks = send.ranks;
  const auto& offsets = send.offsets;
  if (ranks.empty() && offsets.size() <= 1) {
    if (!offsets.empty() && offsets[0] != 0) return fmt::format("offsets[0] is {}, not 0", offsets[0]);
    return std::nullopt;
  }
  if (offsets.size() != ranks.size() + 1)
    return fmt::format("{} destinations need {} offsets, got {}", ranks.size(), ranks.size() + 1, offsets.size());
  if (offsets[0] != 0) return fmt::format("offsets[0] is {}, not 0", offsets[0]);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size)
      return fmt::format("destination {} (message {}) out of range [0, {})", ranks[i], i, size);
    if (offsets[i + 1] > send.element_count)
      return fmt::format("offset {} of message {} lies beyond the {} elements of data (a negative offset?)",
                         offsets[i + 1], i, send.element_count);
    if (offsets[i + 1] < offsets[i])
      return fmt::format("offsets decrease at message {}: {} then {}", i, offsets[i], offsets[i + 1]);
  }
  if (offsets.back() != send.element_count)
    return fmt::format("last offset {} does not match the {} elements of data", offsets.back(), send.element_count);
  // Distinct destinations: cheap when they ascend (the builders' output).
  if (!std::is_sorted(ranks.begin(), ranks.end()) || std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) {
    std::vector<int> sorted(ranks.begin(), ranks.end());
    std::sort(sorted.begin(), sorted.end());
    if (auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end())
      return fmt::format("destination {} appears more than once", *twice);
  }
  return std::nullopt;
}

std::byte* append_message(RecvStore& into, int source, std::size_t bytes) {
  const std::size_t start = into.data.size();
  into.data.resize(start + bytes);
  into.sources.push_back(source);
  into.offsets.push_back(start + bytes);
  return into.data.data() + start;
}

void copy_self(Call& call) {
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i) {
    if (!call.to_self(i)) continue;
    const std::size_t bytes = call.bytes(i);
    std::byte* target = append_message(call.into, call.comm.rank(), bytes);
    copy_bytes(target, call.payload(i), bytes);
  }
}

void post_sends(Call& call, bool synchronous, std::vector<MPI_Request>& requests) {
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i) {
    if (call.to_self(i)) continue;
    const std::size_t bytes = call.bytes(i);
    const std::byte* data = call.payload(i);
    const int destination = call.send.ranks[i];
    for (std::size_t piece = 0, pieces = piece_count(bytes, call.piece); piece < pieces; ++piece) {
      const std::size_t begin = piece * call.piece;
      const int length = static_cast<int>(std::min(call.piece, bytes - begin));
      MPI_Request request;
      void* buffer = const_cast<std::byte*>(data + begin);
      if (synchronous)
        check_mpi(MPI_Issend(buffer, length, MPI_BYTE, destination, call.tag, call.comm.get(), &request), "MPI_Issend");
      else
        check_mpi(MPI_Isend(buffer, length, MPI_BYTE, destination, call.tag, call.comm.get(), &request), "MPI_Isend");
      requests.push_back(request);
    }
    ++call.stats.messages_sent;
    call.stats.bytes_sent += bytes;
  }
}

void post_receive(Call& call, int source, std::byte* target, std::size_t bytes, std::vector<MPI_Request>& requests) {
  for (std::size_t piece = 0, pieces = piece_count(bytes, call.piece); piece < pieces; ++piece) {
    const std::size_t begin = piece * call.piece;
    const int length = static_cast<int>(std::min(call.piece, bytes - begin));
    MPI_Request request;
    check_mpi(MPI_Irecv(target + begin, length, MPI_BYTE, source, call.tag, call.comm.get(), &request), "MPI_Irecv");
    requests.push_back(request);
  }
  ++call.stats.messages_received;
  call.stats.bytes_received += bytes;
}

void receive_matched(Call& call, MPI_Message message, const MPI_Status& status) {
  const int source = status.MPI_SOURCE;
  int count = 0;
  check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  std::size_t bytes = static_cast<std::size_t>(count);
  std::byte* target = append_message(call.into, source, bytes);
  check_mpi(MPI_Mrecv(target, count, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
  // A full piece means more pieces follow from the same source on this tag.
  std::size_t last = bytes;
  while (last == call.piece) {
    MPI_Status next_status;
    check_mpi(MPI_Mprobe(source, call.tag, call.comm.get(), &message, &next_status), "MPI_Mprobe");
    check_mpi(MPI_Get_count(&next_status, MPI_BYTE, &count), "MPI_Get_count");
    last = static_cast<std::size_t>(count);
    const std::size_t at = call.into.data.size();
    call.into.data.resize(at + last);
    call.into.offsets.back() += last;
    check_mpi(MPI_Mrecv(call.into.data.data() + at, count, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
    bytes += last;
  }
  ++call.stats.messages_received;
  call.stats.bytes_received += bytes;
}

bool take_envelope(Call& call, MPI_Message message, const MPI_Status& status, std::vector<Envelope>& envelopes) {
  int count = 0;
  check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  if (static_cast<std::size_t>(count) == call.piece) {
    receive_matched(call, message, status);  // more pieces follow: rare, received at once
    return false;
  }
  envelopes.push_back({message, status.MPI_SOURCE, count});
  return true;
}

void receive_envelopes(Call& call, std::vector<Envelope>& envelopes) {
  if (envelopes.empty()) return;
  struct ReceiveRequests;
  auto& requests = scratch<std::vector<MPI_Request>, ReceiveRequests>();
  requests.clear();
  const std::size_t first = call.into.sources.size();
  for (const auto& envelope : envelopes)
    (void)append_message(call.into, envelope.source, static_cast<std::size_t>(envelope.count));
  for (std::size_t k = 0; k < envelopes.size(); ++k) {
    MPI_Request request;
    check_mpi(MPI_Imrecv(call.into.data.data() + call.into.offsets[first + k], envelopes[k].count, MPI_BYTE,
                         &envelopes[k].message, &request),
              "MPI_Imrecv");
    requests.push_back(request);
    ++call.stats.messages_received;
    call.stats.bytes_received += static_cast<std::size_t>(envelopes[k].count);
  }
  wait_all(requests, "MPI_Waitall");
  envelopes.clear();
}

void receive_any(Call& call, std::size_t count) {
  // Match every envelope first, then receive them all at once: large
  // messages then arrive concurrently instead of one after another. All
  // sources and sizes are known before anything is received, so the store is
  // laid out in source order, the message to self in its place: no reordering
  // copy afterwards (which cost a full pass over large inboxes).
  struct Envelopes;
  auto& envelopes = scratch<std::vector<Envelope>, Envelopes>();
  envelopes.clear();
  for (std::size_t received = 0; received < count; ++received) {
    MPI_Message message;
    MPI_Status status;
    check_mpi(MPI_Mprobe(MPI_ANY_SOURCE, call.tag, call.comm.get(), &message, &status), "MPI_Mprobe");
    take_envelope(call, message, status, envelopes);
  }
  std::sort(envelopes.begin(), envelopes.end(),
            [](const Envelope& a, const Envelope& b) { return a.source < b.source; });
  std::size_t self = SIZE_MAX;
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i)
    if (call.to_self(i)) self = i;
  // Sizes first (the buffer may grow), then the receives into place.
  const int me = call.comm.rank();
  std::size_t self_slot = SIZE_MAX;
  const std::size_t first = call.into.sources.size();
  for (const auto& envelope : envelopes) {
    if (self != SIZE_MAX && self_slot == SIZE_MAX && me < envelope.source) {
      self_slot = call.into.sources.size();
      (void)append_message(call.into, me, call.bytes(self));
    }
    (void)append_message(call.into, envelope.source, static_cast<std::size_t>(envelope.count));
  }
  if (self != SIZE_MAX && self_slot == SIZE_MAX) {
    self_slot = call.into.sources.size();
    (void)append_message(call.into, me, call.bytes(self));
  }
  struct Requests;
  auto& requests = scratch<std::vector<MPI_Request>, Requests>();
  requests.clear();
  std::size_t slot = first;
  for (auto& envelope : envelopes) {
    if (slot == self_slot) ++slot;
    MPI_Request request;
    check_mpi(MPI_Imrecv(call.into.data.data() + call.into.offsets[slot], envelope.count, MPI_BYTE, &envelope.message,
                         &request),
              "MPI_Imrecv");
    requests.push_back(request);
    ++call.stats.messages_received;
    call.stats.bytes_received += static_cast<std::size_t>(envelope.count);
    ++slot;
  }
  if (self != SIZE_MAX && call.bytes(self))
    copy_bytes(call.into.data.data() + call.into.offsets[self_slot], call.payload(self), call.bytes(self));
  wait_all(requests, "MPI_Waitall");
  envelopes.clear();
}

namespace {

/// Whether RMA is offered on one Comm, and why not.
struct RmaOffer {
  explicit RmaOffer(Comm& comm) {
#ifndef DOMEX_SMPI  // SimGrid's simulated ranks share no node segments
    refused = window_collision_risk(comm);
#else
    (void)comm;
#endif
  }
  std::optional<std::string> refused;
};

/// Armed on this rank by fail_next_window_for_testing().
bool fail_next_window = false;

/// Windows that could not be freed: created here while the creation failed
/// on another rank (MPI_Win_free is collective over ranks it never reached).
std::vector<MPI_Win>& abandoned_windows() {
  static std::vector<MPI_Win> windows;
  return windows;
}

}  // namespace

void fail_next_window_for_testing() noexcept { fail_next_window = true; }

const std::optional<std::string>& rma_refusal(Comm& comm) { return comm.cached<RmaOffer>().refused; }

std::byte* create_window(Comm& comm, std::size_t bytes, int displacement_unit, std::vector<std::byte>& storage,
                         MPI_Win& window) {
  window = MPI_WIN_NULL;
  auto& offer = comm.cached<RmaOffer>();
  if (offer.refused) return nullptr;
  std::byte* base = nullptr;
// SimGrid SMPI (sim/): MPI_Win_create over zero-filled memory is resident in
// every simulated rank; MPI_Win_allocate is not.
#if defined(OPEN_MPI) || defined(DOMEX_SMPI)
  (void)storage;
  const char* call = "MPI_Win_allocate";
  int rc = MPI_Win_allocate(static_cast<MPI_Aint>(bytes), displacement_unit, MPI_INFO_NULL, comm.get(), &base, &window);
#else
  storage.resize(bytes);
  base = storage.data();
  const char* call = "MPI_Win_create";
  int rc = MPI_Win_create(base, static_cast<MPI_Aint>(bytes), displacement_unit, MPI_INFO_NULL, comm.get(), &window);
#endif
  if (rc != MPI_SUCCESS) window = MPI_WIN_NULL;  // undefined after a failure
  else rc = MPI_Win_set_errhandler(window, MPI_ERRORS_RETURN);
  if (rc == MPI_SUCCESS && std::exchange(fail_next_window, false)) rc = MPI_ERR_WIN;
  // One allreduce agrees on the outcome: the lowest failing rank with its
  // error class, and whether every rank holds a window (then it can be freed).
  int error_class = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &error_class);
  long long agreed[2] = {rc != MPI_SUCCESS ? (static_cast<long long>(comm.rank()) << 24) + error_class : LLONG_MAX,
                         window != MPI_WIN_NULL ? 1 : 0};
  comm.allreduce_in_place(std::span<long long>(agreed), MPI_MIN);
  if (agreed[0] == LLONG_MAX) return base;
  if (window != MPI_WIN_NULL && (!agreed[1] || MPI_Win_free(&window) != MPI_SUCCESS))
    abandoned_windows().push_back(window);
  window = MPI_WIN_NULL;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(static_cast<int>(agreed[0] & 0xffffff), text, &length);
  offer.refused = fmt::format("{} failed on rank {} of the communicator ({}): RMA withdrawn from it", call,
                              agreed[0] >> 24, std::string_view(text, static_cast<std::size_t>(length)));
  return nullptr;
}

void wait_all(std::vector<MPI_Request>& requests, const char* call) {
  if (!requests.empty())
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), call);
  requests.clear();
}

std::vector<MPI_Request>& request_scratch() {
  struct Requests;
  auto& requests = scratch<std::vector<MPI_Request>, Requests>();
  requests.clear();
  return requests;
}

std::vector<int>& int_scratch(std::size_t size) {
  struct Values;
  auto& values = scratch<std::vector<int>, Values>();
  values.assign(size, 0);
  return values;
}

CheckedCall check_call(const Comm& comm, const SendView& send, const ExchangeOptions& options) {
  CheckedCall checked{options.max_message_bytes ? options.max_message_bytes : default_piece, options.rma_window_bytes,
                      std::nullopt};
  if (checked.piece > static_cast<std::size_t>(INT_MAX)) {
    checked.problem = fmt::format("max_message_bytes {} exceeds INT_MAX", checked.piece);
    checked.piece = default_piece;
  } else if (checked.window > static_cast<std::size_t>(INT_MAX)) {
    checked.problem = fmt::format("rma_window_bytes {} exceeds INT_MAX", checked.window);
    checked.window = 0;
  } else {
    checked.problem = invalid(send, comm.size());
  }
  return checked;
}

ExchangeStats exchange_bytes(Comm& comm, const SendView& send, RecvStore& into, const ExchangeOptions& options) {
  // Invalid input on one rank is an error on every rank: the rank takes part
  // with no messages and folds the news into the algorithm's own
  // synchronisation (see detail.hpp), then all throw the same domex::Error.
  const CheckedCall checked = check_call(comm, send, options);
  const auto& problem = checked.problem;
  const SendView sent = checked.sent(send);

  // Basic guarantee for `into`: on any error it is left empty and reusable.
  into.clear();
  try {
    ExchangeStats stats;
    AutomaticDecision automatic{options.algorithm, false, false};
    if (options.algorithm == Algorithm::automatic) automatic = choose_automatic(comm, sent, options);
    stats.algorithm = automatic.algorithm;
    stats.learned = automatic.learned;
    const double start = automatic.timed ? MPI_Wtime() : 0.0;
    Call call{comm, sent, into, stats, comm.next_tag(), checked.piece, checked.window};
    call.failed_here = problem.has_value();
    switch (stats.algorithm) {
      case Algorithm::alltoall: run_alltoall(call); break;
      case Algorithm::sendrecv_reduce: run_sendrecv_reduce(call); break;
      case Algorithm::nbx: run_nbx(call); break;
      case Algorithm::reduce_scatter: run_reduce_scatter(call); break;
      case Algorithm::rma_fence: run_rma_fence(call); break;
      case Algorithm::rma_passive: run_rma_passive(call); break;
      case Algorithm::grid: run_grid(call); break;
      case Algorithm::automatic: fail("exchange", "automatic did not choose an algorithm");
    }
    if (const double delay = algorithm_delay[static_cast<std::size_t>(stats.algorithm)]; delay > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    // automatic's choice ran another algorithm (an RMA window could not be
    // created, agreed on every rank): the epoch ends, untimed.
    const bool fell_back = options.algorithm == Algorithm::automatic && stats.algorithm != automatic.algorithm;
    if (fell_back) automatic_fell_back(comm);
    if (call.failed_somewhere) {
      into.clear();
      fail_together(comm, "exchange", problem.value_or(""));
    }
    finish_store(into, send.element_size, comm.rank());
    if (automatic.timed && !fell_back) record_automatic_time(comm, MPI_Wtime() - start);
    return stats;
  } catch (...) {
    into.clear();
    throw;
  }
}

}  // namespace domex::detail

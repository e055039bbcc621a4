// SPDX-License-Identifier: BSD-3-Clause
// SparsePlan: the pattern discovered once (a sparse exchange of the message
// sizes), then persistent requests: receives bound to their final place in
// the inbox (sources ascending), sends bound to the outbox's buffer (re-bound
// locally when the buffer moves). Each call is MPI_Startall + MPI_Waitall.

#include "detail.hpp"

#include <domex/comm/collective.hpp>
#include <domex/exchange/plan.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>

namespace domex::detail {

namespace {
constexpr int plan_tag = 0;  // the plan's own communicator: one tag is enough
}  // namespace

struct BytePlan::State {
  State(const Comm& user, const PlanOptions& options) : comm(user.get()), options(options) {}
  ~State() { free_requests(); }

  Comm comm;
  PlanOptions options;
  std::size_t piece = default_piece;
  std::size_t plans = 0;
  bool planned = false;
  bool active = false;

  // The pattern as planned.
  std::size_t element_size = 0;
  std::vector<int> send_ranks;
  std::vector<std::size_t> send_bytes;
  std::vector<int> sources;            // ascending, self included
  std::vector<std::size_t> recv_bytes;  // per source
  std::vector<std::size_t> recv_at;     // byte offset per source in the inbox
  std::size_t recv_total = 0;

  // Persistent requests, one per piece, and what each receive expects.
  std::vector<MPI_Request> receives, sends;
  std::vector<int> receive_source;
  std::vector<std::size_t> receive_expected;
  std::vector<MPI_Status> statuses;
  const std::byte* bound_send = nullptr;  // (nullptr is a valid binding: an outbox of empty messages)
  bool sends_bound = false;
  const std::byte* bound_receive = nullptr;

  // The exchange in progress.
  std::string broken_here;  // PlanCheck::promised broken by this rank
  std::vector<MPI_Request> impossible_sends;
  std::vector<std::uint8_t> one_byte{0};
  ExchangeStats stats;

  void free_requests() noexcept {
    for (auto* list : {&receives, &sends})
      for (auto& request : *list)
        if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
    receives.clear();
    sends.clear();
    bound_send = bound_receive = nullptr;
    sends_bound = false;
  }

  [[nodiscard]] int self() const noexcept { return comm.rank(); }

  /// Same destinations, sizes and element size as planned.
  [[nodiscard]] bool matches(const SendView& send) const {
    if (send.element_size != element_size || send.ranks.size() != send_ranks.size()) return false;
    for (std::size_t i = 0; i < send_ranks.size(); ++i)
      if (send.ranks[i] != send_ranks[i] || (send.offsets[i + 1] - send.offsets[i]) * send.element_size != send_bytes[i])
        return false;
    return true;
  }

  /// The inbox laid out for the plan (sources, element offsets, data size).
  void lay_out(RecvStore& into) {
    into.clear();
    for (std::size_t s = 0; s < sources.size(); ++s) {
      into.sources.push_back(sources[s]);
      into.offsets.push_back((recv_at[s] + recv_bytes[s]) / element_size);
    }
    into.data.resize(recv_total);
  }

  /// Receive requests bound to `into`'s data (local).
  void bind_receives(RecvStore& into) {
    for (auto& request : receives)
      if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
    receives.clear();
    receive_source.clear();
    receive_expected.clear();
    for (std::size_t s = 0; s < sources.size(); ++s) {
      if (sources[s] == self()) continue;
      const std::size_t bytes = recv_bytes[s];
      for (std::size_t p = 0, pieces = piece_count(bytes, piece); p < pieces; ++p) {
        const std::size_t begin = p * piece, length = std::min(piece, bytes - begin);
        MPI_Request request;
        check_mpi(MPI_Recv_init(into.data.data() + recv_at[s] + begin, static_cast<int>(length), MPI_BYTE, sources[s],
                                plan_tag, comm.get(), &request),
                  "MPI_Recv_init");
        receives.push_back(request);
        receive_source.push_back(sources[s]);
        receive_expected.push_back(length);
      }
    }
    bound_receive = into.data.data();
  }

  /// Send requests bound to the outbox's data (local).
  void bind_sends(const SendView& send) {
    for (auto& request : sends)
      if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
    sends.clear();
    for (std::size_t i = 0; i < send_ranks.size(); ++i) {
      if (send_ranks[i] == self()) continue;
      const std::byte* data = send.data + send.offsets[i] * send.element_size;
      for (std::size_t p = 0, pieces = piece_count(send_bytes[i], piece); p < pieces; ++p) {
        const std::size_t begin = p * piece, length = std::min(piece, send_bytes[i] - begin);
        MPI_Request request;
        check_mpi(MPI_Send_init(const_cast<std::byte*>(data + begin), static_cast<int>(length), MPI_BYTE,
                                send_ranks[i], plan_tag, comm.get(), &request),
                  "MPI_Send_init");
        sends.push_back(request);
      }
    }
    bound_send = send.data;
    sends_bound = true;
  }
};

BytePlan::BytePlan(const Comm& comm, const PlanOptions& options) : state_(std::make_unique<State>(comm, options)) {
  if (options.max_message_bytes) state_->piece = options.max_message_bytes;
}
BytePlan::BytePlan(BytePlan&&) noexcept = default;
BytePlan& BytePlan::operator=(BytePlan&&) noexcept = default;
BytePlan::~BytePlan() = default;

std::size_t BytePlan::replans() const noexcept { return state_->plans; }
bool BytePlan::active() const noexcept { return state_->active; }

void BytePlan::plan(const SendView& send, RecvStore& into) {
  State& s = *state_;
  if (s.active) fail("SparsePlan", "an exchange is in progress: call finish() first");
  std::string problem;
  if (s.piece > static_cast<std::size_t>(INT_MAX)) problem = fmt::format("max_message_bytes {} exceeds INT_MAX", s.piece);
  else if (auto why = invalid(send, s.comm.size())) problem = *why;
  agree(s.comm, "SparsePlan", problem);

  // Discovery: every destination learns the size of its message.
  std::vector<std::size_t> offsets(send.ranks.size() + 1);
  std::vector<std::uint64_t> sizes(send.ranks.size());
  for (std::size_t i = 0; i < send.ranks.size(); ++i) {
    offsets[i + 1] = i + 1;
    sizes[i] = (send.offsets[i + 1] - send.offsets[i]) * send.element_size;
  }
  const Outbox<std::uint64_t> announce(std::vector<int>(send.ranks.begin(), send.ranks.end()), offsets, sizes);
  const auto announced = domex::exchange(s.comm, announce, {.algorithm = s.options.discovery});
  std::string mismatch;
  for (std::size_t m = 0; m < announced.message_count() && mismatch.empty(); ++m)
    if (announced.message(m)[0] % send.element_size != 0)
      mismatch = fmt::format("rank {} sends {} bytes, not a multiple of this rank's element size {} (different types?)",
                             announced.source(m), announced.message(m)[0], send.element_size);
  agree(s.comm, "SparsePlan", mismatch);

  s.free_requests();
  s.element_size = send.element_size;
  s.send_ranks.assign(send.ranks.begin(), send.ranks.end());
  s.send_bytes.assign(sizes.begin(), sizes.end());
  s.sources.assign(announced.sources().begin(), announced.sources().end());
  s.recv_bytes.clear();
  s.recv_at.clear();
  s.recv_total = 0;
  for (std::size_t m = 0; m < announced.message_count(); ++m) {
    s.recv_at.push_back(s.recv_total);
    s.recv_bytes.push_back(announced.message(m)[0]);
    s.recv_total += announced.message(m)[0];
  }
  s.lay_out(into);
  s.bind_receives(into);
  s.planned = true;
  ++s.plans;
}

void BytePlan::begin(const SendView& send, RecvStore& into) {
  State& s = *state_;
  if (s.active) fail("SparsePlan::begin", "an exchange is already in progress: call finish() first");
  std::string problem;
  if (auto why = invalid(send, s.comm.size())) problem = *why;
  const bool changed = problem.empty() && !s.matches(send);
  s.broken_here.clear();
  if (s.options.check == PlanCheck::collective) {
    // One allreduce: 2 = some outbox is invalid, 1 = some pattern changed.
    const int verdict = s.comm.allreduce(!problem.empty() ? 2 : changed ? 1 : 0, MPI_MAX);
    if (verdict == 2) {
      into.clear();
      agree(s.comm, "SparsePlan::exchange", problem);
    }
    if (verdict == 1) plan(send, into);
  } else if (!problem.empty() || changed) {
    s.broken_here = !problem.empty() ? problem
                                     : "the outbox's destinations or sizes differ from the plan's, but PlanCheck::"
                                       "promised said they would not: call replan()";
  }

  // Local re-binding where the inbox or the outbox moved.
  if (into.data.data() != s.bound_receive || into.sources.size() != s.sources.size() ||
      into.data.size() != s.recv_total) {
    s.lay_out(into);
    s.bind_receives(into);
  }
  if (s.broken_here.empty() && (!s.sends_bound || send.data != s.bound_send)) s.bind_sends(send);

  s.stats = {};
  s.stats.algorithm = s.options.discovery;
  if (!s.receives.empty())
    check_mpi(MPI_Startall(static_cast<int>(s.receives.size()), s.receives.data()), "MPI_Startall");
  if (s.broken_here.empty()) {
    for (std::size_t i = 0; i < s.send_ranks.size(); ++i) {
      if (s.send_ranks[i] != s.self()) continue;
      for (std::size_t m = 0; m < s.sources.size(); ++m)
        if (s.sources[m] == s.self() && s.send_bytes[i])
          copy_bytes(into.data.data() + s.recv_at[m], send.data + send.offsets[i] * send.element_size,
                     s.send_bytes[i]);
    }
    if (!s.sends.empty()) check_mpi(MPI_Startall(static_cast<int>(s.sends.size()), s.sends.data()), "MPI_Startall");
  } else {
    // Impossible sizes in place of every planned piece: 0 bytes where data
    // was expected, 1 byte where an empty piece was (a truncation there).
    for (std::size_t i = 0; i < s.send_ranks.size(); ++i) {
      if (s.send_ranks[i] == s.self()) continue;
      for (std::size_t p = 0, pieces = piece_count(s.send_bytes[i], s.piece); p < pieces; ++p) {
        const std::size_t length = std::min(s.piece, s.send_bytes[i] - p * s.piece);
        MPI_Request request;
        check_mpi(MPI_Isend(s.one_byte.data(), length == 0 ? 1 : 0, MPI_BYTE, s.send_ranks[i], plan_tag, s.comm.get(),
                            &request),
                  "MPI_Isend");
        s.impossible_sends.push_back(request);
      }
    }
  }
  s.active = true;
}

ExchangeStats BytePlan::finish(RecvStore& into) {
  State& s = *state_;
  if (!s.active) fail("SparsePlan::finish", "no exchange in progress: call begin() first");
  s.active = false;
  int broken_by = -1;
  if (!s.receives.empty()) {
    s.statuses.resize(s.receives.size());
    const int code = MPI_Waitall(static_cast<int>(s.receives.size()), s.receives.data(), s.statuses.data());
    if (code != MPI_SUCCESS && code != MPI_ERR_IN_STATUS) check_mpi(code, "MPI_Waitall");
    for (std::size_t r = 0; r < s.receives.size(); ++r) {
      int count = -1;
      const bool failed = code == MPI_ERR_IN_STATUS && s.statuses[r].MPI_ERROR != MPI_SUCCESS;
      if (!failed) check_mpi(MPI_Get_count(&s.statuses[r], MPI_BYTE, &count), "MPI_Get_count");
      if ((failed || static_cast<std::size_t>(count) != s.receive_expected[r]) && broken_by < 0)
        broken_by = s.receive_source[r];
    }
  }
  wait_all(s.impossible_sends, "MPI_Waitall");
  if (s.broken_here.empty() && !s.sends.empty())
    check_mpi(MPI_Waitall(static_cast<int>(s.sends.size()), s.sends.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  if (!s.broken_here.empty()) {
    into.clear();
    fail("SparsePlan::exchange", s.broken_here);
  }
  if (broken_by >= 0) {
    into.clear();
    fail("SparsePlan::exchange",
         fmt::format("rank {} sent messages that do not match the plan: its outbox changed under PlanCheck::promised "
                     "(see its error); call replan()",
                     broken_by));
  }
  for (std::size_t i = 0; i < s.send_ranks.size(); ++i)
    if (s.send_ranks[i] != s.self()) {
      ++s.stats.messages_sent;
      s.stats.bytes_sent += s.send_bytes[i];
    }
  for (std::size_t m = 0; m < s.sources.size(); ++m)
    if (s.sources[m] != s.self()) {
      ++s.stats.messages_received;
      s.stats.bytes_received += s.recv_bytes[m];
    }
  return s.stats;
}

}  // namespace domex::detail

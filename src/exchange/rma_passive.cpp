// SPDX-License-Identifier: BSD-3-Clause
// rma_passive: one-sided passive target in the low-level style of ACP. Each
// rank exposes, twice (the call parity), a mailbox: a 64-bit reservation
// counter, P message descriptors and `rma_window_bytes` of data space (by
// default sized to the first call's pattern, see create(), and grown when a
// later call's messages do not fit). The window stays under
// MPI_Win_lock_all for the Comm's lifetime (until it grows).
//
// A sender reserves a descriptor slot and data space at each destination with
// ONE MPI_Fetch_and_op on the counter (high bits count slots, low bits count
// bytes), MPI_Puts the data and the descriptor, and flushes. A message that
// does not fit the data space is announced by its descriptor and sent
// point-to-point. Completion is a cheap consensus: one barrier (O(log P)),
// after which every mailbox is complete; it is an MPI_Allreduce of two
// integers so that it also tells every rank whether one had invalid input and
// how much data space the call lacked.
//
// Why the window grows: sized by the first call alone, a Comm whose first
// call sent 64 B kept a 4 KiB window for good, and every later 256 KiB
// message went point-to-point (18.6 us per call at np 2 where a window of the
// right size took 11.4 us). A call whose messages did not all fit now makes
// the next call recreate the window with room for them (at least twice the
// data space, at most 4 MiB; never where the caller fixed rma_window_bytes):
// every rank learns it from the same allreduce, so they recreate together,
// at most ten times per Comm.
//
// Why two mailboxes: a rank leaving the barrier of call n may start call n+1
// while a slower rank still reads its call-n mailbox, but it cannot reach call
// n+2 before that rank has entered barrier n+1, i.e. finished reading.
//
// Where RMA is not offered (rma_refusal: a window could collide with another
// group's, or could not be created) it runs nbx, and says so in the stats.

#include "detail.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <fmt/format.h>

namespace domex::detail {

namespace {

constexpr int slot_shift = 40;  // bytes reserved per call < 2^40, slots < 2^24
constexpr std::uint64_t byte_mask = (std::uint64_t{1} << slot_shift) - 1;

struct Descriptor {
  std::uint64_t source;  ///< sender rank; bit 32 set when the data is in the window
  std::uint64_t bytes;
  std::uint64_t offset;  ///< in the data space of the mailbox
};
constexpr std::uint64_t in_window_bit = std::uint64_t{1} << 32;

struct PassiveWindow {
  explicit PassiveWindow(Comm&) {}
  PassiveWindow(const PassiveWindow&) = delete;
  PassiveWindow& operator=(const PassiveWindow&) = delete;
  ~PassiveWindow() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (window != MPI_WIN_NULL && !finalized) {
      MPI_Win_unlock_all(window);
      MPI_Win_free(&window);
    }
  }

  /// Collective (the first rma_passive call on a Comm). data_bytes 0: twice
  /// the most bytes any rank sends in this call, as a power of two from
  /// 4 KiB to 4 MiB (agreed with one allreduce: senders must know the
  /// capacity), so a small pattern does not pay for a large window (creating
  /// one costs ~0.1 ms at 64 KiB and ~1 ms at 1 MiB here).
  void create(Comm& comm, std::size_t data_bytes, std::size_t sending) {
    tried = true;
    if (rma_refusal(comm)) return;
    fixed = data_bytes != 0;
    if (data_bytes == 0) {
      const auto most = comm.allreduce(static_cast<unsigned long long>(sending), MPI_MAX);
      data_bytes = automatic_size(2 * static_cast<std::size_t>(most));
    }
    if (data_bytes > static_cast<std::size_t>(INT_MAX))
      fail("exchange(rma_passive)", fmt::format("rma_window_bytes {} exceeds INT_MAX", data_bytes));
    capacity = (data_bytes + 7) / 8 * 8;
    ranks = static_cast<std::size_t>(comm.size());
    mailbox_bytes = sizeof(std::uint64_t) + ranks * sizeof(Descriptor) + capacity;
    std::byte* base = create_window(comm, 2 * mailbox_bytes, 1, memory, window);
    if (!base) return;  // the creation failed on some rank: every rank falls back
    for (int parity = 0; parity < 2; ++parity) std::memset(base + parity * mailbox_bytes, 0, sizeof(std::uint64_t));
    check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, window), "MPI_Win_lock_all");
    // Every counter is zero before anyone reserves.
    check_mpi(MPI_Barrier(comm.get()), "MPI_Barrier");
  }

  /// A data space of at least `bytes` as the automatic sizing gives it: a
  /// power of two from 4 KiB to 4 MiB.
  static std::size_t automatic_size(std::size_t bytes) {
    return std::clamp<std::size_t>(std::bit_ceil(std::max<std::size_t>(bytes, 1)), std::size_t{4} << 10,
                                   largest_automatic);
  }

  /// Collective (every rank learnt `bytes` from the same allreduce): frees
  /// the window and creates one with `bytes` of data space. Both mailboxes
  /// are empty: every rank left the previous call's consensus, and
  /// MPI_Win_free waits for every rank, so none still reads the old one.
  void grow(Comm& comm, std::size_t bytes) {
    check_mpi(MPI_Win_unlock_all(window), "MPI_Win_unlock_all");
    check_mpi(MPI_Win_free(&window), "MPI_Win_free");
    window = MPI_WIN_NULL;
    create(comm, bytes, 0);
    fixed = false;
  }

  [[nodiscard]] MPI_Aint counter_at(int parity) const { return static_cast<MPI_Aint>(parity * mailbox_bytes); }
  [[nodiscard]] MPI_Aint descriptor_at(int parity, std::uint64_t slot) const {
    return counter_at(parity) + static_cast<MPI_Aint>(sizeof(std::uint64_t) + slot * sizeof(Descriptor));
  }
  [[nodiscard]] MPI_Aint data_at(int parity, std::uint64_t offset) const {
    return counter_at(parity) +
           static_cast<MPI_Aint>(sizeof(std::uint64_t) + ranks * sizeof(Descriptor) + offset);
  }

  static constexpr std::size_t largest_automatic = std::size_t{4} << 20;

  MPI_Win window = MPI_WIN_NULL;
  bool tried = false;  ///< create() ran: a null window now means "not offered"
  bool fixed = false;  ///< the caller chose the size (rma_window_bytes): it never grows
  std::size_t grow_to = 0;  ///< data space the next call recreates the window with (0: keep it)
  std::vector<std::byte> memory;
  std::size_t capacity = 0;
  std::size_t ranks = 0;
  std::size_t mailbox_bytes = 0;
  std::uint64_t calls = 0;
  std::vector<std::uint64_t> increments, reservations;
  std::vector<Descriptor> outgoing, incoming;
  std::vector<std::size_t> slots;  // where each incoming message goes in the store
};

}  // namespace

void run_rma_passive(Call& call) {
  auto& state = call.comm.cached<PassiveWindow>();
  if (!state.tried) {
    std::size_t sending = 0;
    for (std::size_t i = 0; i < call.send.ranks.size(); ++i) sending += call.to_self(i) ? 0 : call.bytes(i);
    state.create(call.comm, call.rma_window_bytes, sending);
  }
  if (state.window != MPI_WIN_NULL && state.grow_to > state.capacity) state.grow(call.comm, state.grow_to);
  state.grow_to = 0;
  if (state.window == MPI_WIN_NULL) {
    call.stats.algorithm = two_sided_fallback(Algorithm::rma_passive);
    return run_nbx(call);
  }
  const int parity = static_cast<int>(state.calls++ % 2);
  const int rank = call.comm.rank();
  const std::size_t count = call.send.ranks.size();
  auto& requests = request_scratch();

  // 1. Reserve: one fetch-and-add per destination, all in flight together.
  state.increments.assign(count, 0);
  state.reservations.assign(count, 0);
  for (std::size_t i = 0; i < count; ++i) {
    if (call.to_self(i)) continue;
    const std::size_t bytes = call.bytes(i);
    state.increments[i] =
        (std::uint64_t{1} << slot_shift) + (bytes <= state.capacity ? (bytes + 7) / 8 * 8 : 0);
    check_mpi(MPI_Fetch_and_op(&state.increments[i], &state.reservations[i], MPI_UINT64_T, call.send.ranks[i],
                               state.counter_at(parity), MPI_SUM, state.window),
              "MPI_Fetch_and_op");
  }
  check_mpi(MPI_Win_flush_all(state.window), "MPI_Win_flush_all");

  // 2. Put data that fits and every descriptor; send the rest.
  state.outgoing.resize(count);
  std::size_t lacking = 0, sending = 0;  // data space a message that did not fit needed; bytes sent
  for (std::size_t i = 0; i < count; ++i) {
    if (call.to_self(i)) continue;
    const std::size_t bytes = call.bytes(i);
    const std::uint64_t slot = state.reservations[i] >> slot_shift;
    const std::uint64_t offset = state.reservations[i] & byte_mask;
    const bool fits = bytes <= state.capacity && offset + bytes <= state.capacity;
    const int destination = call.send.ranks[i];
    state.outgoing[i] = {static_cast<std::uint64_t>(rank) | (fits ? in_window_bit : 0), bytes, offset};
    if (fits && bytes)
      check_mpi(MPI_Put(call.payload(i), static_cast<int>(bytes), MPI_BYTE, destination,
                        state.data_at(parity, offset), static_cast<int>(bytes), MPI_BYTE, state.window),
                "MPI_Put");
    check_mpi(MPI_Put(&state.outgoing[i], sizeof(Descriptor), MPI_BYTE, destination,
                      state.descriptor_at(parity, slot), sizeof(Descriptor), MPI_BYTE, state.window),
              "MPI_Put");
    sending += bytes;
    if (!fits) {
      lacking = std::max(lacking, static_cast<std::size_t>(offset) + (bytes + 7) / 8 * 8);
      for (std::size_t piece = 0, pieces = piece_count(bytes, call.piece); piece < pieces; ++piece) {
        const std::size_t begin = piece * call.piece;
        MPI_Request request;
        check_mpi(MPI_Isend(call.payload(i) + begin, static_cast<int>(std::min(call.piece, bytes - begin)), MPI_BYTE,
                            destination, call.tag, call.comm.get(), &request),
                  "MPI_Isend");
        requests.push_back(request);
      }
    }
    ++call.stats.messages_sent;
    call.stats.bytes_sent += bytes;
  }
  check_mpi(MPI_Win_flush_all(state.window), "MPI_Win_flush_all");

  // 3. Consensus: after the barrier every put to every mailbox is complete.
  //    The barrier is an allreduce of the failure flag (same synchronisation)
  //    and of the data space wanted: what a message that did not fit needed,
  //    or twice what this rank sends (the first call's sizing).
  unsigned long long consensus[2] = {call.failed_here ? 1ULL : 0ULL, 0};
  if (lacking && !state.fixed && state.capacity < PassiveWindow::largest_automatic)
    consensus[1] = std::max(lacking, 2 * sending);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, consensus, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, call.comm.get()),
            "MPI_Allreduce");
  call.failed_somewhere = consensus[0] != 0;
  if (consensus[1] && !call.failed_somewhere)
    state.grow_to = PassiveWindow::automatic_size(std::max<std::size_t>(consensus[1], 2 * state.capacity));

  // 4. Read this rank's mailbox (through MPI, correct in either memory model).
  std::uint64_t counter = 0;
  check_mpi(MPI_Get(&counter, 1, MPI_UINT64_T, rank, state.counter_at(parity), 1, MPI_UINT64_T, state.window),
            "MPI_Get");
  check_mpi(MPI_Win_flush(rank, state.window), "MPI_Win_flush");
  const std::uint64_t arrived = counter >> slot_shift;
  state.incoming.resize(arrived);
  if (arrived)
    check_mpi(MPI_Get(state.incoming.data(), static_cast<int>(arrived * sizeof(Descriptor)), MPI_BYTE, rank,
                      state.descriptor_at(parity, 0), static_cast<int>(arrived * sizeof(Descriptor)), MPI_BYTE,
                      state.window),
              "MPI_Get");
  check_mpi(MPI_Win_flush(rank, state.window), "MPI_Win_flush");
  // Size the store first (a pending MPI_Get must not see its target move),
  // in source order with the message to self in its place, so that no
  // reordering copy follows.
  std::sort(state.incoming.begin(), state.incoming.end(), [](const Descriptor& a, const Descriptor& b) {
    return (a.source & 0xffffffffu) < (b.source & 0xffffffffu);
  });
  std::size_t self = SIZE_MAX, self_slot = SIZE_MAX;
  for (std::size_t i = 0; i < count; ++i)
    if (call.to_self(i)) self = i;
  state.slots.clear();
  for (const Descriptor& descriptor : state.incoming) {
    const int source = static_cast<int>(descriptor.source & 0xffffffffu);
    if (self != SIZE_MAX && self_slot == SIZE_MAX && rank < source) {
      self_slot = call.into.sources.size();
      (void)append_message(call.into, rank, call.bytes(self));
    }
    state.slots.push_back(call.into.sources.size());
    (void)append_message(call.into, source, descriptor.bytes);
  }
  if (self != SIZE_MAX && self_slot == SIZE_MAX) {
    self_slot = call.into.sources.size();
    (void)append_message(call.into, rank, call.bytes(self));
  }
  if (self != SIZE_MAX && call.bytes(self))
    copy_bytes(call.into.data.data() + call.into.offsets[self_slot], call.payload(self), call.bytes(self));
  for (std::size_t m = 0; m < state.incoming.size(); ++m) {
    const Descriptor& descriptor = state.incoming[m];
    std::byte* target = call.into.data.data() + call.into.offsets[state.slots[m]];
    if (!(descriptor.source & in_window_bit)) {  // did not fit: comes point-to-point
      post_receive(call, call.into.sources[state.slots[m]], target, descriptor.bytes, requests);
      continue;
    }
    if (descriptor.bytes)
      check_mpi(MPI_Get(target, static_cast<int>(descriptor.bytes), MPI_BYTE, rank,
                        state.data_at(parity, descriptor.offset), static_cast<int>(descriptor.bytes), MPI_BYTE,
                        state.window),
                "MPI_Get");
    ++call.stats.messages_received;
    call.stats.bytes_received += descriptor.bytes;
  }
  check_mpi(MPI_Win_flush(rank, state.window), "MPI_Win_flush");
  // 5. Empty the mailbox for call n+2 (same accumulate family as the reservations).
  const std::uint64_t zero = 0;
  check_mpi(MPI_Accumulate(&zero, 1, MPI_UINT64_T, rank, state.counter_at(parity), 1, MPI_UINT64_T, MPI_REPLACE,
                           state.window),
            "MPI_Accumulate");
  check_mpi(MPI_Win_flush(rank, state.window), "MPI_Win_flush");
  wait_all(requests, "MPI_Waitall");
}

}  // namespace domex::detail

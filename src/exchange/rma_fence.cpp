// SPDX-License-Identifier: BSD-3-Clause
// rma_fence: every rank exposes P count slots in an MPI window (created once
// per Comm). Between two MPI_Win_fence calls each sender MPI_Puts the size of
// its message into slot [sender] of each destination; after the closing fence
// every receiver scans its P slots, then the data moves point-to-point with
// receives posted at their final place (sizes are known: no probing, no
// reordering). Cost: two fences (O(P) synchronisation) plus an O(P) scan.
// Where RMA is not offered (rma_refusal: a window could collide with another
// group's, or could not be created) it runs alltoall, and says so in the stats.

#include "detail.hpp"

#include <cstdint>

namespace domex::detail {

namespace {

/// The count window of one Comm.
struct FenceWindow {
  explicit FenceWindow(Comm& comm) {
    const std::size_t bytes = sizeof(std::uint64_t) * static_cast<std::size_t>(comm.size());
    slots = reinterpret_cast<std::uint64_t*>(create_window(comm, bytes, sizeof(std::uint64_t), storage, window));
    if (!slots) return;  // not offered on this Comm: every rank falls back
    std::fill_n(slots, comm.size(), 0);
    // No Put may land before every rank has its window.
    comm.barrier();
  }
  FenceWindow(const FenceWindow&) = delete;
  FenceWindow& operator=(const FenceWindow&) = delete;
  ~FenceWindow() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (window != MPI_WIN_NULL && !finalized) MPI_Win_free(&window);
  }
  MPI_Win window = MPI_WIN_NULL;
  std::vector<std::byte> storage;
  std::uint64_t* slots = nullptr;
  std::vector<std::uint64_t> outgoing;  // origin buffers must live until the fence
};

}  // namespace

void run_rma_fence(Call& call) {
  auto& state = call.comm.cached<FenceWindow>();
  if (state.window == MPI_WIN_NULL) {
    call.stats.algorithm = two_sided_fallback(Algorithm::rma_fence);
    return run_alltoall(call);
  }
  const int rank = call.comm.rank();
  state.outgoing.resize(call.send.ranks.size());
  check_mpi(MPI_Win_fence(MPI_MODE_NOPRECEDE, state.window), "MPI_Win_fence");
  // A failing rank marks its slot at every rank (O(P) puts, on the error path only).
  static constexpr std::uint64_t failed_mark = UINT64_MAX;
  if (call.failed_here)
    for (int destination = 0; destination < call.comm.size(); ++destination)
      check_mpi(MPI_Put(&failed_mark, 1, MPI_UINT64_T, destination, rank, 1, MPI_UINT64_T, state.window), "MPI_Put");
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i) {
    if (call.to_self(i)) continue;
    state.outgoing[i] = call.bytes(i) + 1;  // 0 means "no message"
    check_mpi(MPI_Put(&state.outgoing[i], 1, MPI_UINT64_T, call.send.ranks[i], rank, 1, MPI_UINT64_T, state.window),
              "MPI_Put");
  }
  check_mpi(MPI_Win_fence(MPI_MODE_NOSUCCEED, state.window), "MPI_Win_fence");

  // Layout in source order; the self message takes its place among them.
  std::size_t self_message = SIZE_MAX;
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i)
    if (call.to_self(i)) self_message = i;
  std::size_t total = 0;
  call.failed_somewhere = call.failed_here;
  for (int source = 0; source < call.comm.size(); ++source) {
    const std::uint64_t mark = state.slots[source];
    if (mark == failed_mark) {
      call.failed_somewhere = true;
      state.slots[source] = 0;
      continue;
    }
    if (source != rank && mark == 0) continue;
    if (source == rank && self_message == SIZE_MAX) continue;
    total += source == rank ? call.bytes(self_message) : mark - 1;
    call.into.sources.push_back(source);
    call.into.offsets.push_back(total);
  }
  call.into.data.resize(total);
  auto& requests = request_scratch();
  for (std::size_t m = 0; m < call.into.sources.size(); ++m) {
    const int source = call.into.sources[m];
    std::byte* target = call.into.data.data() + call.into.offsets[m];
    const std::size_t bytes = call.into.offsets[m + 1] - call.into.offsets[m];
    if (source == rank) {
      copy_bytes(target, call.payload(self_message), bytes);
    } else {
      post_receive(call, source, target, bytes, requests);
      state.slots[source] = 0;  // ready for the next call (ordered by its first fence)
    }
  }
  post_sends(call, /*synchronous=*/false, requests);
  wait_all(requests, "MPI_Waitall");
}

}  // namespace domex::detail

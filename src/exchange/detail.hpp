// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Private helpers shared by the six sparse-exchange algorithms.
//
// Conventions of every algorithm:
// - messages to self never touch MPI: copy_self() copies them;
// - a message travels as pieces of at most `piece` bytes (an int count); the
//   last piece is shorter than `piece`, possibly empty, so a receiver that
//   learns a size by probing knows when a message ends (non-overtaking
//   order between one sender and one receiver on one tag keeps pieces in order);
// - every message of a call carries the call's own tag (Comm::next_tag());
// - the receive store is filled with byte offsets in any source order;
//   finish() sorts it by source and converts offsets to elements;
// - a rank whose input is invalid (Call::failed_here) sends nothing and
//   folds a flag into the algorithm's own synchronisation (a sentinel count,
//   one more vector entry, an allreduce in place of a barrier), so that
//   every rank sets Call::failed_somewhere identically without an extra
//   collective; messages already in flight are still received, so nothing
//   is left unmatched.

#include <domex/comm/comm.hpp>
#include <domex/comm/scratch.hpp>
#include <domex/exchange/algorithm.hpp>
#include <domex/exchange/buffer.hpp>
#include <domex/exchange/exchange.hpp>

#include <mpi.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace domex::detail {

/// Everything one call of one algorithm works with.
struct Call {
  Comm& comm;
  SendView send;
  RecvStore& into;
  ExchangeStats& stats;
  int tag;
  std::size_t piece;  ///< bytes per MPI message, <= INT_MAX
  std::size_t rma_window_bytes;
  /// This rank's input is invalid: it takes part with an empty send side and
  /// tells the others through the communication the algorithm makes anyway.
  bool failed_here = false;
  /// Set by the algorithm when it learned that some rank (this one included)
  /// failed. Every rank of the call reaches the same value.
  bool failed_somewhere = false;

  [[nodiscard]] std::size_t bytes(std::size_t message) const noexcept {
    return (send.offsets[message + 1] - send.offsets[message]) * send.element_size;
  }
  [[nodiscard]] const std::byte* payload(std::size_t message) const noexcept {
    return send.data + send.offsets[message] * send.element_size;
  }
  [[nodiscard]] bool to_self(std::size_t message) const noexcept { return send.ranks[message] == comm.rank(); }
};

/// The first thing wrong with a send side for a communicator of `size` ranks
/// (destination out of range or repeated, offsets inconsistent), or nothing.
std::optional<std::string> invalid(const SendView& send, int size);

/// The piece and window sizes of a call, and what is wrong with its input
/// (nothing when `problem` is empty): checked before anything is sent.
struct CheckedCall {
  std::size_t piece;   ///< bytes per MPI message (the default where the option was invalid)
  std::size_t window;  ///< rma_passive data space per rank (0: sized by its first call)
  std::optional<std::string> problem;
  /// The send side to use: `send`, or an empty one where this rank's input is
  /// invalid (it then takes part with no messages and tells the others).
  [[nodiscard]] SendView sent(const SendView& send) const {
    return problem ? SendView{{}, {}, nullptr, send.element_size, 0} : send;
  }
};
/// Default piece: 1 GiB per MPI message.
inline constexpr std::size_t default_piece = std::size_t{1} << 30;
/// Checks `options` (piece and window sizes within int) and `send` for `comm`.
CheckedCall check_call(const Comm& comm, const SendView& send, const ExchangeOptions& options);

/// Sorts received messages by source (stable: a no-op when they arrived in
/// order) and turns byte offsets into element offsets; throws if a message is
/// not a whole number of elements.
void finish_store(RecvStore& into, std::size_t element_size, int rank);

/// Number of MPI messages (pieces) a message of `bytes` travels as.
[[nodiscard]] inline std::size_t piece_count(std::size_t bytes, std::size_t piece) noexcept {
  return bytes / piece + 1;
}

/// Appends a message of `bytes` from `source` and returns where to write it.
/// Invalidates pointers returned before (the buffer may grow).
std::byte* append_message(RecvStore& into, int source, std::size_t bytes);

/// Copies the message to self, if any, into the store.
void copy_self(Call& call);

/// Posts MPI_Isend (or MPI_Issend when `synchronous`) of every piece of every
/// message not to self; counts them in the stats.
void post_sends(Call& call, bool synchronous, std::vector<MPI_Request>& requests);

/// Posts MPI_Irecv of every piece of a message of known size into `target`.
void post_receive(Call& call, int source, std::byte* target, std::size_t bytes, std::vector<MPI_Request>& requests);

/// Receives a message whose first piece was matched by MPI_Mprobe/Improbe,
/// then its further pieces. Counts it in the stats.
void receive_matched(Call& call, MPI_Message message, const MPI_Status& status);

/// A message matched by MPI_Mprobe/MPI_Improbe, not yet received.
struct Envelope {
  MPI_Message message;
  int source;
  int count;  ///< bytes of its first (here: only) piece
};
/// Receives a matched message at once if more pieces follow it (rare);
/// otherwise keeps its envelope for receive_envelopes(). True if kept.
bool take_envelope(Call& call, MPI_Message message, const MPI_Status& status, std::vector<Envelope>& envelopes);
/// Receives all kept envelopes with MPI_Imrecv posted together, then waits.
void receive_envelopes(Call& call, std::vector<Envelope>& envelopes);

/// Receives `count` messages from unknown sources (MPI_Mprobe on the tag)
/// and the message to self, laid out in source order.
void receive_any(Call& call, std::size_t count);

/// Whether the one-sided algorithms may create windows on `comm`: not where
/// windows can collide with another group's (window_collision_risk, Open MPI
/// < 5.0) and not after a window creation failed on it. Collective on the
/// first call per Comm (see window_collision_risk), then local. Identical on
/// every rank: the reason, or nothing where RMA is offered.
const std::optional<std::string>& rma_refusal(Comm& comm);

/// The two-sided algorithm a one-sided one runs where RMA is not offered:
/// rma_fence -> alltoall (both exchange P counts densely), rma_passive -> nbx
/// (both sparse, completed by a tree-shaped consensus).
[[nodiscard]] constexpr Algorithm two_sided_fallback(Algorithm algorithm) noexcept {
  return algorithm == Algorithm::rma_fence ? Algorithm::alltoall : Algorithm::nbx;
}

/// A window of `bytes` (> 0) bytes on every rank of comm, errors returned,
/// and its base address; nullptr on every rank where RMA is not offered
/// (rma_refusal) or the creation failed on some rank: the outcome is agreed
/// in one MPI_Allreduce, a failure withdraws RMA from the Comm (rma_refusal
/// says which call failed on which rank) and never throws. Open MPI:
/// MPI_Win_allocate (its MPI_Win_create needs an RMA transport that a single
/// process lacks). Others: MPI_Win_create over `storage`, because MPICH
/// 4.0.2's MPI_Win_allocate misplaces Puts between ranks of one node (a Put
/// to rank 1 landed in rank 0's window). See comm/mpi_defects.hpp.
std::byte* create_window(Comm& comm, std::size_t bytes, int displacement_unit, std::vector<std::byte>& storage,
                         MPI_Win& window);

/// MPI_Waitall over requests, then clears them.
void wait_all(std::vector<MPI_Request>& requests, const char* call);

/// Per-thread request and count scratch, reused across calls so the hot path
/// does not allocate once it has grown.
std::vector<MPI_Request>& request_scratch();
std::vector<int>& int_scratch(std::size_t size);

/// NBX in two halves, for exchange_begin/finish and the callback form:
/// post the synchronous sends; then receive until the consensus completes,
/// handing each message to `each` as it arrives where given (else into the
/// store).
void nbx_start(Call& call, std::vector<MPI_Request>& sends);
void nbx_complete(Call& call, std::vector<MPI_Request>& sends, const MessageHandler* each);

// The algorithms (one file each).
void run_alltoall(Call& call);
void run_sendrecv_reduce(Call& call);
void run_nbx(Call& call);
void run_reduce_scatter(Call& call);
void run_rma_fence(Call& call);
void run_rma_passive(Call& call);
void run_grid(Call& call);
/// What automatic runs for one call, and whether to time it.
struct AutomaticDecision {
  Algorithm algorithm;
  bool timed;    ///< call record_automatic_time() with this call's duration
  bool learned;  ///< for ExchangeStats::learned
};
/// Chooses a concrete algorithm for this call (collective at epoch
/// boundaries: the same calls on every rank). See automatic.cpp.
AutomaticDecision choose_automatic(Comm& comm, const SendView& send, const ExchangeOptions& options);
/// This rank's duration of a call choose_automatic() said to time.
void record_automatic_time(Comm& comm, double seconds);
/// The call automatic chose ran another algorithm (an RMA window could not
/// be created: the failure is agreed on every rank): ends the epoch, so the
/// next call decides again without the one-sided algorithms.
void automatic_fell_back(Comm& comm);

}  // namespace domex::detail

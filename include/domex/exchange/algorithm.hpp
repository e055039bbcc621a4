// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The sparse-exchange algorithms and the options of an exchange.

#include <array>
#include <cstddef>
#include <string_view>

namespace domex {

class CostModel;

/// How a sparse exchange lets receivers learn who sends to them.
enum class Algorithm {
  automatic,        ///< chosen by the calibrated CostModel from the pattern
  alltoall,         ///< MPI_Alltoall of counts + MPI_Alltoallv: O(P)
  sendrecv_reduce,  ///< sends + MPI_Allreduce of per-destination counts: O(log P) + P-vector
  nbx,              ///< MPI_Issend + MPI_Iprobe + MPI_Ibarrier (Hoefler et al. 2010): O(log P)
  reduce_scatter,   ///< MPI_Reduce_scatter_block of a 0/1 vector, then send/recv
  rma_fence,        ///< MPI_Put of counts between MPI_Win_fence, then the data: O(P) sync
  rma_passive,      ///< lock_all + MPI_Fetch_and_op reservation + MPI_Put + flush + barrier (ACP style)
  grid,             ///< two hops over an R x C process grid (row, then column): O(sqrt P) partners
};

/// The concrete algorithms: the six of the seed study's tables, then the
/// two-level grid.
inline constexpr std::array<Algorithm, 7> concrete_algorithms = {
    Algorithm::alltoall,  Algorithm::sendrecv_reduce, Algorithm::nbx,  Algorithm::reduce_scatter,
    Algorithm::rma_fence, Algorithm::rma_passive,     Algorithm::grid};

/// "alltoall", "nbx", ...
std::string_view to_string(Algorithm algorithm) noexcept;
/// Inverse of to_string(); throws domex::Error naming the valid names.
Algorithm algorithm_from_string(std::string_view name);

/// Whether Algorithm::automatic times its candidates on the caller's own
/// calls (on) or uses the cost model's ranking alone (off: reproducible).
enum class Learning { on, off };

/// Options of one exchange call (designated initialisers:
/// `{.algorithm = domex::Algorithm::nbx}`).
struct ExchangeOptions {
  Algorithm algorithm = Algorithm::automatic;
  /// Largest piece one MPI message carries; longer messages travel as several
  /// pieces. 0 means 1 GiB. MPI counts are int: this is how messages of more
  /// than INT_MAX bytes work with MPI-3 libraries. Tests set it small.
  std::size_t max_message_bytes = 0;
  /// Model for Algorithm::automatic; nullptr means CostModel::of_this_machine(comm).
  /// A model given here must be equal on every rank (checked: ranks that pass
  /// different models get a domex::Error, never different algorithms).
  const CostModel* cost_model = nullptr;
  /// Bytes of receive space per rank in the rma_passive window (per call
  /// parity); messages that do not fit are sent point-to-point. Fixed by the
  /// first rma_passive call on the Comm. 0 means automatic: twice the most
  /// bytes any rank sends in that call, as a power of two from 4 KiB to
  /// 4 MiB, grown (collectively, at the next rma_passive call) whenever a
  /// call's messages did not fit, so a Comm whose first call was small is
  /// not slow for good (named or through automatic: the same window).
  std::size_t rma_window_bytes = 0;
  /// Algorithm::automatic: learn from measured calls (default) or not. Must
  /// be the same on every rank (checked).
  Learning learning = Learning::on;
};

/// What one exchange did on this rank. Messages to self are copied locally
/// and counted in neither messages nor bytes.
struct ExchangeStats {
  Algorithm algorithm = Algorithm::automatic;  ///< the algorithm that ran
  /// automatic only: the choice came from measurements (learned or loaded),
  /// not from the model's prediction alone, or this call was a measurement.
  bool learned = false;
  std::size_t messages_sent = 0;
  std::size_t messages_received = 0;
  std::size_t bytes_sent = 0;
  std::size_t bytes_received = 0;
};

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
// sendrecv_reduce: post the sends, then one MPI_Allreduce of a P-vector of
// per-destination message counts tells every rank how many messages it will
// receive; receive that many with MPI_Mprobe(MPI_ANY_SOURCE).
// Cost: O(log P) rounds carrying an O(P) vector, plus the messages. Its
// last entry counts the ranks whose input was invalid.

#include "detail.hpp"

namespace domex::detail {

void run_sendrecv_reduce(Call& call) {
  auto& requests = request_scratch();
  post_sends(call, /*synchronous=*/false, requests);
  // One more entry than ranks: how many ranks failed.
  const auto size = static_cast<std::size_t>(call.comm.size());
  auto& counts = int_scratch(size + 1);
  counts[size] = call.failed_here ? 1 : 0;
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i)
    if (!call.to_self(i)) counts[static_cast<std::size_t>(call.send.ranks[i])] = 1;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, counts.data(), call.comm.size() + 1, MPI_INT, MPI_SUM, call.comm.get()),
            "MPI_Allreduce");
  call.failed_somewhere = counts[size] > 0;
  receive_any(call, static_cast<std::size_t>(counts[static_cast<std::size_t>(call.comm.rank())]));
  wait_all(requests, "MPI_Waitall");
}

}  // namespace domex::detail

// SPDX-License-Identifier: BSD-3-Clause
// reduce_scatter: MPI_Reduce_scatter_block of a 0/1 vector (entry d is 1 when
// this rank sends to d) leaves each rank the number of messages it will
// receive; then send/recv. O(P) data in few rounds; the sends are posted
// first so they travel while the reduction runs.

#include "detail.hpp"

namespace domex::detail {

void run_reduce_scatter(Call& call) {
  auto& requests = request_scratch();
  post_sends(call, /*synchronous=*/false, requests);
  // A failing rank adds P to every entry: a rank receives fewer than P
  // messages, so incoming / P counts the failing ranks, incoming % P the messages.
  const int size = call.comm.size();
  auto& flags = int_scratch(static_cast<std::size_t>(size));
  if (call.failed_here) flags.assign(flags.size(), size);
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i)
    if (!call.to_self(i)) flags[static_cast<std::size_t>(call.send.ranks[i])] += 1;
  int incoming = 0;
  check_mpi(MPI_Reduce_scatter_block(flags.data(), &incoming, 1, MPI_INT, MPI_SUM, call.comm.get()),
            "MPI_Reduce_scatter_block");
  call.failed_somewhere = incoming >= size;
  receive_any(call, static_cast<std::size_t>(incoming % size));
  wait_all(requests, "MPI_Waitall");
}

}  // namespace domex::detail

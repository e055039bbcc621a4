// SPDX-License-Identifier: BSD-3-Clause
// Smallest domex program: every rank sends its rank to the next one with the
// automatically chosen sparse-exchange algorithm and checks what arrived.
//   mpirun -n 4 ring_exchange

#include <domex/exchange/exchange.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    domex::Comm comm{MPI_COMM_WORLD};
    domex::Outbox<int> outbox;
    outbox.add((comm.rank() + 1) % comm.size(), comm.rank());
    const auto inbox = domex::exchange(comm, outbox);
    const int expected = (comm.rank() + comm.size() - 1) % comm.size();
    for (auto [source, values] : inbox)
      if (source != expected || values.size() != 1 || values[0] != expected) status = 1;
    if (inbox.message_count() != 1) status = 1;
    status = comm.allreduce(status, MPI_MAX);
    if (comm.rank() == 0)
      std::printf("ring_exchange: %d ranks, algorithm %s: %s\n", comm.size(),
                  std::string(domex::to_string(inbox.stats().algorithm)).c_str(), status ? "WRONG" : "ok");
  }
  MPI_Finalize();
  return status;
}

// SPDX-License-Identifier: BSD-3-Clause
// Tutorial 1: sparse dynamic data exchange.
//
// Every rank knows what it sends to whom; nobody knows who will send to it.
// That is the situation of particle migration or a tree code's LET exchange,
// and what domex::exchange() solves. Here rank r sends to r + 1 and r + 3
// (mod P) a message of (destination % 4) + 1 items; each receiver checks that
// exactly the right ranks sent to it, with the right items.
//
// Then it shows the error model: an invalid destination on ONE rank makes the
// exchange throw the same domex::Error on EVERY rank (no rank hangs waiting
// for the others), and the Comm stays usable afterwards.
//
//   scripts/run -n 2 build/01-sparse-exchange/sparse_exchange

#include <domex/exchange/exchange.hpp>

#include <cstdio>
#include <set>
#include <string>

namespace {

// Anything trivially copyable can be exchanged: domex sends its bytes.
struct Item {
  int from;
  int to;
  int index;
};

// The ranks `rank` sends to; a set, because destinations must be distinct
// (with P = 2, r + 1 and r + 3 are the same rank).
std::set<int> destinations_of(int rank, int size) { return {(rank + 1) % size, (rank + 3) % size}; }

int items_for(int destination) { return destination % 4 + 1; }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int wrong = 0;
  {  // every domex object is destroyed before MPI_Finalize
    // A duplicate of MPI_COMM_WORLD: domex's messages never match yours, and
    // every MPI error becomes a domex::Error instead of an abort.
    domex::Comm comm{MPI_COMM_WORLD};
    const int rank = comm.rank();
    const int size = comm.size();

    // The send side: messages grouped by destination in one buffer.
    domex::Outbox<Item> outbox;
    for (int destination : destinations_of(rank, size))
      for (int i = 0; i < items_for(destination); ++i) outbox.add(destination, Item{rank, destination, i});

    // What this rank must receive: from every rank whose destinations include it.
    std::set<int> senders;
    for (int source = 0; source < size; ++source)
      if (destinations_of(source, size).count(rank)) senders.insert(source);

    long checked = 0;
    std::string automatic_chose;
    // The same exchange with the automatic choice (default) and with NBX
    // (Hoefler et al. 2010): the result does not depend on the algorithm.
    for (auto algorithm : {domex::Algorithm::automatic, domex::Algorithm::nbx}) {
      const auto inbox = domex::exchange(comm, outbox, {.algorithm = algorithm});
      if (inbox.message_count() != senders.size()) wrong = 1;
      for (auto [source, items] : inbox) {  // sources ascending
        if (!senders.count(source) || items.size() != static_cast<std::size_t>(items_for(rank))) wrong = 1;
        for (std::size_t i = 0; i < items.size(); ++i, ++checked)
          if (items[i].from != source || items[i].to != rank || items[i].index != static_cast<int>(i)) wrong = 1;
      }
      if (algorithm == domex::Algorithm::automatic) automatic_chose = domex::to_string(inbox.stats().algorithm);
    }

    // The error model: rank 0 addresses a rank that does not exist. Every
    // rank (not only rank 0) gets the same domex::Error, naming rank 0 and
    // the bad destination.
    domex::Outbox<Item> bad;
    if (rank == 0) bad.add(size, Item{rank, size, 0});
    int threw = 0;
    try {
      (void)domex::exchange(comm, bad);
    } catch (const domex::Error& error) {
      threw = 1;
      if (rank == 0) std::printf("expected error on every rank: %s\n", error.what());
    }
    // Every rank must have thrown; and the Comm still works (this allreduce).
    if (comm.allreduce(threw, MPI_MIN) != 1) wrong = 1;

    wrong = comm.allreduce(wrong, MPI_MAX);
    checked = comm.allreduce(checked, MPI_SUM);
    if (rank == 0) {
      if (wrong)
        std::printf("WRONG: 01-sparse-exchange: some rank received wrong messages\n");
      else
        std::printf("ok: 01-sparse-exchange: %d ranks, %ld items correct (automatic chose %s, then nbx), "
                    "bad destination on rank 0 was an error on every rank\n",
                    size, checked, automatic_chose.c_str());
    }
  }
  MPI_Finalize();
  return wrong;
}

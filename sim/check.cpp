// SPDX-License-Identifier: BSD-3-Clause
// domex-sim-check: every sparse-exchange algorithm (and automatic, the
// callback form and a reused SparsePlan) on random patterns, checked byte
// for byte on every rank. Built with -DDOMEX_SMPI=ON and run under smpirun
// by sim/run check (CI): the compatibility layer's matched probes, barrier
// and Dims_create must give the results of a real MPI.
//
//   sim/run fattree-ib 64 check

#include <domex/exchange/exchange.hpp>
#include <domex/exchange/plan.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <vector>

namespace {

/// The value of byte i of the message from `source` to `destination` in trial t.
std::uint8_t byte_of(int source, int destination, int trial, std::size_t i) {
  return static_cast<std::uint8_t>(source * 131 + destination * 31 + trial * 7 + static_cast<int>(i));
}

/// This rank's outbox in trial t: a random set of destinations (self and
/// empty messages included), sizes from 0 to a few pieces.
domex::Outbox<std::uint8_t> outbox_of(int rank, int size, int trial) {
  std::mt19937 random(static_cast<unsigned>(trial * 7919 + rank));
  std::vector<int> destinations;
  const int count = static_cast<int>(random() % 9);
  for (int k = 0; k < count; ++k) destinations.push_back(static_cast<int>(random() % static_cast<unsigned>(size)));
  std::sort(destinations.begin(), destinations.end());
  destinations.erase(std::unique(destinations.begin(), destinations.end()), destinations.end());
  domex::Outbox<std::uint8_t> outbox;
  for (int destination : destinations) {
    const std::size_t bytes = random() % 4 == 0 ? 0 : random() % 3000;
    std::vector<std::uint8_t> message(bytes);
    for (std::size_t i = 0; i < bytes; ++i) message[i] = byte_of(rank, destination, trial, i);
    outbox.add(destination, message);
  }
  return outbox;
}

/// What this rank must receive in trial t: (source, bytes) ascending.
std::vector<std::pair<int, std::size_t>> expected_of(int rank, int size, int trial) {
  std::vector<std::pair<int, std::size_t>> expected;
  for (int source = 0; source < size; ++source) {
    const auto outbox = outbox_of(source, size, trial);
    for (std::size_t m = 0; m < outbox.message_count(); ++m)
      if (outbox.ranks()[m] == rank) expected.emplace_back(source, outbox.message(m).size());
  }
  return expected;
}

int check_inbox(const domex::Inbox<std::uint8_t>& inbox, int rank, int size, int trial, const std::string& name) {
  const auto expected = expected_of(rank, size, trial);
  int errors = 0;
  if (inbox.message_count() != expected.size()) {
    std::fprintf(stderr, "rank %d %s trial %d: %zu messages, expected %zu\n", rank, name.c_str(), trial,
                 inbox.message_count(), expected.size());
    return 1;
  }
  for (std::size_t m = 0; m < expected.size(); ++m) {
    const auto items = inbox.message(m);
    if (inbox.source(m) != expected[m].first || items.size() != expected[m].second) {
      ++errors;
      continue;
    }
    for (std::size_t i = 0; i < items.size(); ++i)
      if (items[i] != byte_of(expected[m].first, rank, trial, i)) {
        ++errors;
        break;
      }
  }
  if (errors) std::fprintf(stderr, "rank %d %s trial %d: %d wrong messages\n", rank, name.c_str(), trial, errors);
  return errors;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int failures = 0;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    domex::Comm comm{MPI_COMM_WORLD};
    std::vector<domex::Algorithm> algorithms(domex::concrete_algorithms.begin(), domex::concrete_algorithms.end());
    algorithms.push_back(domex::Algorithm::automatic);
    constexpr int trials = 4;
    for (domex::Algorithm algorithm : algorithms) {
      int errors = 0;
      domex::Inbox<std::uint8_t> inbox;  // reused across trials, as in a time loop
      for (int trial = 0; trial < trials; ++trial) {
        const auto outbox = outbox_of(rank, size, trial);
        // Small pieces (1000 B): messages of several pieces are exercised too.
        domex::exchange(comm, outbox, inbox, {.algorithm = algorithm, .max_message_bytes = 1000});
        errors += check_inbox(inbox, rank, size, trial, std::string(domex::to_string(algorithm)));
      }
      int total = errors;
      MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      if (rank == 0)
        std::printf("%-16s %d trials, %d ranks: %s\n", std::string(domex::to_string(algorithm)).c_str(), trials, size,
                    total == 0 ? "ok" : "WRONG");
      failures += total;
    }
    {  // The reused plan: pattern discovered once, exchanged three times.
      const auto outbox = outbox_of(rank, size, 0);
      domex::SparsePlan<std::uint8_t> plan(comm, outbox);
      int errors = 0;
      for (int repeat = 0; repeat < 3; ++repeat) errors += check_inbox(plan.exchange(outbox), rank, size, 0, "plan");
      MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      if (rank == 0) std::printf("%-16s 3 calls, %d ranks: %s\n", "plan", size, errors == 0 ? "ok" : "WRONG");
      failures += errors;
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "domex-sim-check rank %d: %s\n", rank, error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) std::printf("domex-sim-check: %s\n", failures == 0 ? "all algorithms correct" : "FAILURES");
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}

// SPDX-License-Identifier: BSD-3-Clause
// domex-sim-rounds: what the simulator itself costs per round of messages, with
// no domex code in the way. Every rank sends one message of --bytes to each of
// its 26 neighbours on a periodic 3-D grid of ranks (MPI_Dims_create) and
// receives theirs: MPI_Irecv, MPI_Isend, MPI_Waitall (event-driven, no polling),
// then a barrier. Rank 0 prints, per round, the wall time the simulation took
// for both (this machine's clock) and the simulated time of the exchange
// (slowest rank).
//
//   sim/run ib 4096 rounds --bytes 64 --rounds 3
//   DOMEX_SIM_RENDEZVOUS=1 sim/run ib 4096 rounds   # every send rendezvous
//   sim/run ib 64 rounds --rounds 200 --complete test
//
// --complete test completes the requests with MPI_Testall after a barrier
// instead of MPI_Waitall: SimGrid 3.32 keeps every request that a test
// completed in its rank's list of activities, which each later completion
// walks, so the wall time per round grows with the rounds before it
// (sim/README.md, "Requests completed by a test").

#include <domex/decompose/grid.hpp>

#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace {

/// The value after `flag` in argv, parsed as an integer in [lo, hi], into
/// `value` (left as it is when the flag is absent). False when it is not one.
bool integer_flag(int argc, char** argv, const char* flag, long lo, long hi, long& value) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], flag) != 0) continue;
    if (i + 1 >= argc) return false;
    char* end = nullptr;
    const long parsed = std::strtol(argv[i + 1], &end, 10);
    if (end == argv[i + 1] || *end != '\0' || parsed < lo || parsed > hi) return false;
    value = parsed;
  }
  return true;
}

/// The value after `flag` in argv, one of `choices`, into `value` (left as it
/// is when the flag is absent). False when it is none of them.
bool choice_flag(int argc, char** argv, const char* flag, std::initializer_list<const char*> choices,
                 const char*& value) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], flag) != 0) continue;
    if (i + 1 >= argc ||
        std::none_of(choices.begin(), choices.end(), [&](const char* c) { return std::strcmp(argv[i + 1], c) == 0; }))
      return false;
    value = argv[i + 1];
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long bytes = 64, rounds = 3;
  const char* complete = "wait";
  if (!integer_flag(argc, argv, "--bytes", 0, 1 << 20, bytes) ||
      !integer_flag(argc, argv, "--rounds", 1, 1000, rounds) ||
      !choice_flag(argc, argv, "--complete", {"wait", "test"}, complete)) {
    if (rank == 0)
      std::fprintf(stderr,
                   "domex-sim-rounds: usage: [--bytes 0..1048576] [--rounds 1..1000] [--complete wait|test]\n");
    MPI_Finalize();
    return 2;
  }
  std::array<int, 3> dims{0, 0, 0};
  MPI_Dims_create(size, 3, dims.data());
  // The 26 neighbours; neighbour 25 - k lies opposite neighbour k.
  std::vector<int> peers;
  for (int dx = -1; dx <= 1; ++dx)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dz = -1; dz <= 1; ++dz)
        if (dx != 0 || dy != 0 || dz != 0) peers.push_back(domex::grid_offset(rank, {dx, dy, dz}, dims));
  const bool by_test = std::strcmp(complete, "test") == 0;
  const auto n = static_cast<std::size_t>(bytes);
  std::vector<char> out(26 * n, 1), in(26 * n);
  std::vector<MPI_Request> requests(52);
  if (rank == 0)
    std::printf("domex-sim-rounds: %d ranks (%d x %d x %d), 26 messages of %ld B per rank and round\n", size, dims[0],
                dims[1], dims[2], bytes);
  for (long round = 0; round < rounds; ++round) {
    const auto wall = std::chrono::steady_clock::now();
    const double start = MPI_Wtime();
    // (The tag tells apart two neighbours that are the same rank on a short axis.)
    for (int k = 0; k < 26; ++k)
      MPI_Irecv(in.data() + k * n, static_cast<int>(bytes), MPI_BYTE, peers[25 - k], k, MPI_COMM_WORLD, &requests[k]);
    for (int k = 0; k < 26; ++k)
      MPI_Isend(out.data() + k * n, static_cast<int>(bytes), MPI_BYTE, peers[k], k, MPI_COMM_WORLD,
                &requests[26 + k]);
    if (by_test) {  // every message has arrived after the barrier: the tests complete them
      MPI_Barrier(MPI_COMM_WORLD);
      for (int done = 0; !done;) MPI_Testall(52, requests.data(), &done, MPI_STATUSES_IGNORE);
    } else {
      MPI_Waitall(52, requests.data(), MPI_STATUSES_IGNORE);
    }
    const double simulated = MPI_Wtime() - start;
    MPI_Barrier(MPI_COMM_WORLD);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    // (Outside the wall time. An allreduce, recursive doubling in sim/run:
    // SMPI's MPI_Reduce took 40 s of wall time at 1024 ranks.)
    double slowest = 0;
    MPI_Allreduce(&simulated, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("round %ld: simulated %.1f us (slowest rank), wall %.2f s (with a barrier)\n", round, slowest * 1e6,
                  seconds);
  }
  MPI_Finalize();
  return 0;
}

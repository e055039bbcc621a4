// SPDX-License-Identifier: BSD-3-Clause
// domex-sim-pingpong: the calibration check of a platform. Ranks 0 and P-1
// (the farthest pair in the hostfile) ping-pong with MPI_Send/MPI_Recv (one
// way = half the round trip) from 8 B to 2 MiB, and rank 0 times MPI_Put +
// MPI_Win_flush of 8 B into rank P-1 (passive target, lock_all). Prints
// microseconds and GB/s per size, and the targets when given
// (--target-latency-us, --target-bandwidth-gbs, --target-put-us).
//
//   sim/run ib 2 pingpong

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double target_latency = 0, target_bandwidth = 0, target_put = 0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--target-latency-us") == 0) target_latency = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--target-bandwidth-gbs") == 0) target_bandwidth = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--target-put-us") == 0) target_put = std::atof(argv[i + 1]);
  }
  const int peer = size - 1;
  const bool active = size > 1 && (rank == 0 || rank == peer);
  std::vector<char> buffer(2u << 20);
  constexpr int repeats = 10;
  double latency = 0, bandwidth = 0;
  if (rank == 0)
    std::printf("ping-pong rank 0 <-> rank %d (simulated: one way = half the round trip)\n%10s %12s %10s\n", peer,
                "bytes", "one way[us]", "GB/s");
  for (const int bytes : {8, 64, 512, 4096, 32768, 262144, 2 << 20}) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (!active) continue;
    // One untimed round trip: the ranks leave the barrier at different times.
    if (rank == 0) {
      MPI_Send(buffer.data(), bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
      MPI_Recv(buffer.data(), bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buffer.data(), bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buffer.data(), bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
    const double start = MPI_Wtime();
    for (int r = 0; r < repeats; ++r) {
      if (rank == 0) {
        MPI_Send(buffer.data(), bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
        MPI_Recv(buffer.data(), bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buffer.data(), bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buffer.data(), bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
    }
    const double one_way = (MPI_Wtime() - start) / (2.0 * repeats);
    if (rank == 0) {
      std::printf("%10d %12.3f %10.3f\n", bytes, 1e6 * one_way, bytes / one_way / 1e9);
      if (bytes == 8) latency = one_way;
      bandwidth = bytes / one_way;
    }
  }
  // MPI_Put of 8 B + flush, passive target (window from MPI_Win_allocate).
  void* base = nullptr;
  MPI_Win window;
  MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &window);
  MPI_Win_lock_all(0, window);
  double put = 0;
  if (rank == 0 && size > 1) {
    const long value = 42;
    MPI_Put(&value, 8, MPI_BYTE, peer, 0, 8, MPI_BYTE, window);
    MPI_Win_flush(peer, window);  // first one apart (setup)
    const double start = MPI_Wtime();
    for (int r = 0; r < repeats; ++r) {
      MPI_Put(&value, 8, MPI_BYTE, peer, 0, 8, MPI_BYTE, window);
      MPI_Win_flush(peer, window);
    }
    put = (MPI_Wtime() - start) / repeats;
  }
  MPI_Win_unlock_all(window);
  MPI_Win_free(&window);
  if (rank == 0) {
    std::printf("MPI_Put 8 B + MPI_Win_flush: %.3f us\n\n%-28s %10s %10s\n", 1e6 * put, "calibration", "simulated",
                "target");
    const auto row = [](const char* name, double simulated, double target) {
      if (target > 0)
        std::printf("%-28s %10.3f %10.3f  (%+.0f %%)\n", name, simulated, target, 100.0 * (simulated / target - 1));
      else
        std::printf("%-28s %10.3f %10s\n", name, simulated, "-");
    };
    row("send-recv latency 8 B [us]", 1e6 * latency, target_latency);
    row("bandwidth 2 MiB [GB/s]", bandwidth / 1e9, target_bandwidth);
    row("put 8 B + flush [us]", 1e6 * put, target_put);
  }
  MPI_Finalize();
  return 0;
}

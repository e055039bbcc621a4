// SPDX-License-Identifier: BSD-3-Clause
// domex-sim-counts: the MPS count exchange of the seed. Every rank sends one
// 64-bit count to its ~14 neighbours (6 faces and 8 corners of a periodic
// 3-D process grid) and learns the counts sent to it, four ways:
//   alltoall  MPI_Alltoall of a P-vector of counts (zeros elsewhere);
//   fence     MPI_Put into slot [sender] of the receiver's window, between
//             two MPI_Win_fence;
//   passive   MPI_Win_lock_all once; MPI_Put + MPI_Win_flush_all +
//             MPI_Barrier per call (two window halves by call parity, so a
//             half is cleared one barrier before it is written again);
//   domex     domex::exchange of 8-byte messages (nbx and automatic).
// Every call is checked (the received counts), timed as the slowest rank
// from a barrier; prints microseconds per call and the ratio to alltoall.
//
//   sim/run ib:6 36 counts --calls 20
//   sim/run ib:6 36 counts --calls 20 --partners results/mps36/count_partners.txt
// --partners: who sends to whom from a file instead (line r: the ranks rank r
// sends to; '#' lines are comments), e.g. the count_partners.txt domex-mps
// writes: the app's real pattern, replayed.

#include <domex/decompose/grid.hpp>
#include <domex/exchange/automatic.hpp>
#include <domex/exchange/exchange.hpp>

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<int> neighbours_of(int rank, int size) {
  std::array<int, 3> dims{0, 0, 0};
  MPI_Dims_create(size, 3, dims.data());
  std::set<int> found;
  for (int dx = -1; dx <= 1; ++dx)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dz = -1; dz <= 1; ++dz) {
        const int nonzero = (dx != 0) + (dy != 0) + (dz != 0);
        if (nonzero != 1 && nonzero != 3) continue;  // faces and corners: 6 + 8
        const int neighbour = domex::grid_offset(rank, {dx, dy, dz}, dims);
        if (neighbour != rank) found.insert(neighbour);
      }
  return {found.begin(), found.end()};
}

/// The pattern of a --partners file, one line per rank; empty and a message
/// on stderr if the file is missing or does not fit `size` ranks.
std::vector<std::vector<int>> partners_from(const std::string& path, int size, bool speak) {
  std::ifstream in(path);
  std::vector<std::vector<int>> all;
  std::string line;
  while (in && std::getline(in, line)) {
    if (!line.empty() && line[0] == '#') continue;
    std::istringstream words(line);
    std::vector<int> mine;
    for (int r; words >> r;) {
      if (r < 0 || r >= size || r == static_cast<int>(all.size())) {
        if (speak) std::fprintf(stderr, "domex-sim-counts: --partners %s: line %zu names rank %d\n", path.c_str(),
                                all.size() + 1, r);
        return {};
      }
      mine.push_back(r);
    }
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    all.push_back(std::move(mine));
  }
  if (static_cast<int>(all.size()) != size) {
    if (speak)
      std::fprintf(stderr, "domex-sim-counts: --partners %s: %zu ranks' lines for a run of %d ranks%s\n", path.c_str(),
                   all.size(), size, in.is_open() || !all.empty() ? "" : " (cannot read it)");
    return {};
  }
  return all;
}

std::int64_t count_of(int from, int to) { return 1000 * static_cast<std::int64_t>(from) + to + 1; }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int calls = 20;
  std::string partners_file;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--partners") == 0) partners_file = argv[i + 1];
  }
  std::vector<std::vector<int>> pattern;  // line r: the ranks rank r sends to
  if (partners_file.empty()) {
    for (int r = 0; r < size; ++r) pattern.push_back(neighbours_of(r, size));
  } else if ((pattern = partners_from(partners_file, size, rank == 0)).empty()) {
    MPI_Finalize();  // every rank read the same file: all stop here
    return 2;
  }
  const auto& neighbours = pattern[static_cast<std::size_t>(rank)];
  // Who sends to me: the same relation seen from the other side.
  std::vector<int> senders;
  for (int r = 0; r < size; ++r) {
    const auto& theirs = pattern[static_cast<std::size_t>(r)];
    if (std::binary_search(theirs.begin(), theirs.end(), rank)) senders.push_back(r);
  }
  long wrong = 0;
  const auto check = [&](const std::vector<std::int64_t>& by_source) {
    for (int s = 0; s < size; ++s) {
      const bool sends = std::binary_search(senders.begin(), senders.end(), s);
      if (by_source[static_cast<std::size_t>(s)] != (sends ? count_of(s, rank) : 0)) ++wrong;
    }
  };
  std::vector<std::int64_t> received(static_cast<std::size_t>(size));

  // alltoall
  std::vector<std::int64_t> outgoing(static_cast<std::size_t>(size), 0);
  for (int n : neighbours) outgoing[static_cast<std::size_t>(n)] = count_of(rank, n);
  const auto alltoall = [&] {
    MPI_Alltoall(outgoing.data(), 1, MPI_INT64_T, received.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
    check(received);
  };
  // fence
  std::int64_t* slots = nullptr;
  MPI_Win fence_window;
  MPI_Win_allocate(static_cast<MPI_Aint>(sizeof(std::int64_t)) * size, sizeof(std::int64_t), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &slots, &fence_window);
  std::fill(slots, slots + size, 0);
  std::vector<std::int64_t> mine(neighbours.size());
  for (std::size_t k = 0; k < neighbours.size(); ++k) mine[k] = count_of(rank, neighbours[k]);
  const auto fence = [&] {
    MPI_Win_fence(MPI_MODE_NOPRECEDE, fence_window);
    for (std::size_t k = 0; k < neighbours.size(); ++k)
      MPI_Put(&mine[k], 1, MPI_INT64_T, neighbours[k], rank, 1, MPI_INT64_T, fence_window);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, fence_window);
    received.assign(slots, slots + size);
    std::fill(slots, slots + size, 0);
    check(received);
  };
  // passive target
  std::int64_t* halves = nullptr;
  MPI_Win passive_window;
  MPI_Win_allocate(static_cast<MPI_Aint>(sizeof(std::int64_t)) * 2 * size, sizeof(std::int64_t), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &halves, &passive_window);
  std::fill(halves, halves + 2 * size, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, passive_window);
  int parity = 0;
  const auto passive = [&] {
    for (std::size_t k = 0; k < neighbours.size(); ++k)
      MPI_Put(&mine[k], 1, MPI_INT64_T, neighbours[k], parity * size + rank, 1, MPI_INT64_T, passive_window);
    MPI_Win_flush_all(passive_window);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(passive_window);
    std::int64_t* half = halves + parity * size;
    received.assign(half, half + size);
    std::fill(half, half + size, 0);
    parity ^= 1;
    check(received);
  };
  // domex
  domex::Comm comm{MPI_COMM_WORLD};
  domex::Outbox<std::int64_t> outbox;
  for (std::size_t k = 0; k < neighbours.size(); ++k) outbox.add(neighbours[k], mine[k]);
  domex::Inbox<std::int64_t> inbox;
  const auto domex_with = [&](domex::Algorithm algorithm) {
    return [&, algorithm] {
      domex::exchange(comm, outbox, inbox, {.algorithm = algorithm});
      std::fill(received.begin(), received.end(), 0);
      for (auto [source, items] : inbox) received[static_cast<std::size_t>(source)] = items[0];
      check(received);
    };
  };

  struct Method {
    std::string name;
    std::function<void()> run;
  };
  std::vector<Method> methods{{"MPI_Alltoall", alltoall},
                              {"fence + MPI_Put", fence},
                              {"passive (lock_all, Put, flush, barrier)", passive},
                              {"domex nbx", domex_with(domex::Algorithm::nbx)},
                              {"domex automatic", domex_with(domex::Algorithm::automatic)}};
  std::vector<double> seconds;
  for (auto& method : methods) {
    for (int warm = 0; warm < 3; ++warm) method.run();
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int call = 0; call < calls; ++call) method.run();
    double elapsed = (MPI_Wtime() - start) / calls;
    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    seconds.push_back(elapsed);
  }
  MPI_Win_unlock_all(passive_window);
  MPI_Win_free(&passive_window);
  MPI_Win_free(&fence_window);
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  int most = static_cast<int>(neighbours.size());
  MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  const auto report = domex::automatic_report(comm);
  if (rank == 0) {
    std::printf("count exchange, %d ranks, %d neighbours at most, 8 B each, %d calls (time per call, slowest rank)\n",
                size, most, calls);
    std::printf("pattern: %s\n", partners_file.empty() ? "faces and corners of a periodic 3-D process grid"
                                                        : partners_file.c_str());
    std::printf("%-40s %12s %14s\n", "method", "per call[us]", "alltoall / it");
    for (std::size_t m = 0; m < methods.size(); ++m)
      std::printf("%-40s %12.2f %14.2f\n", methods[m].name.c_str(), 1e6 * seconds[m], seconds[0] / seconds[m]);
    for (const auto& c : report.classes)
      std::printf("automatic chose %s (%s)\n", std::string(domex::to_string(c.chosen)).c_str(), c.how.c_str());
    std::printf("received counts: %s\n", wrong == 0 ? "all correct" : "WRONG");
  }
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}

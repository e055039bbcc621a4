// SPDX-License-Identifier: BSD-3-Clause
// Tutorial 3: halo (ghost-layer) exchange on a structured grid.
//
// domex::CartesianGrid splits a global grid of cells into one block per rank;
// domex::HaloPlan, built once, knows the neighbours (faces, edges and
// corners: 26 in 3-D), the regions to send and receive, and keeps buffers and
// persistent requests. One exchange() call fills the ghost layer of several
// fields, of different types, with ONE message per neighbour (not one per
// field).
//
// Each owned cell holds a value computed from its global coordinates, so
// every ghost cell can be checked against the value its owner must have sent.
//
//   scripts/run -n 2 build/03-halo-exchange/halo_exchange

#include <domex/halo/halo.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

// The value of global cell (x, y, z): distinct for every cell.
double value_of(std::size_t x, std::size_t y, std::size_t z) { return static_cast<double>(x + 100 * y + 10000 * z); }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int wrong = 0;
  {
    domex::Comm comm{MPI_COMM_WORLD};
    // 16 x 12 x 8 cells, periodic on every axis; the process grid (dims) is
    // chosen by domex to minimise the halo surface.
    const std::array<std::size_t, 3> cells{16, 12, 8};
    domex::CartesianGrid grid(comm, cells, {.periodic = {true, true, true}});
    domex::HaloPlan halo(grid, {.depth = 1});  // one ghost layer, 26 neighbours

    // Fields cover the owned cells plus the ghosts: halo.cells() elements,
    // cell (i, j, k) at halo.index(i, j, k), owned cells at [0, n) per axis.
    std::vector<double> density(halo.cells(), -1.0);    // ghosts start wrong
    std::vector<std::int32_t> tag(halo.cells(), -1);
    const auto offset = grid.offset();
    const auto n = [&](int axis) { return static_cast<long>(grid.local_cells()[axis]); };
    for (long k = 0; k < n(2); ++k)
      for (long j = 0; j < n(1); ++j)
        for (long i = 0; i < n(0); ++i) {
          const std::size_t at = halo.index(i, j, k);
          density[at] = value_of(offset[0] + i, offset[1] + j, offset[2] + k);
          tag[at] = static_cast<std::int32_t>(comm.rank());
        }

    // Both fields, one message per neighbour.
    halo.exchange(density, tag);

    // Check every ghost cell (all axes periodic, so every ghost has an owner).
    const auto wrap = [&](long global, int axis) {
      const auto size = static_cast<long>(cells[axis]);
      return static_cast<std::size_t>((global % size + size) % size);
    };
    long ghosts = 0;
    for (long k = -1; k <= n(2); ++k)
      for (long j = -1; j <= n(1); ++j)
        for (long i = -1; i <= n(0); ++i) {
          const bool owned = i >= 0 && i < n(0) && j >= 0 && j < n(1) && k >= 0 && k < n(2);
          if (owned) continue;
          const std::size_t at = halo.index(i, j, k);
          const double expected = value_of(wrap(static_cast<long>(offset[0]) + i, 0),
                                           wrap(static_cast<long>(offset[1]) + j, 1),
                                           wrap(static_cast<long>(offset[2]) + k, 2));
          // The owner of a ghost is the neighbour in that direction.
          const int owner = grid.neighbour({i < 0 ? -1 : i >= n(0) ? 1 : 0, j < 0 ? -1 : j >= n(1) ? 1 : 0,
                                            k < 0 ? -1 : k >= n(2) ? 1 : 0});
          if (density[at] != expected || tag[at] != owner) wrong = 1;
          ++ghosts;
        }

    wrong = comm.allreduce(wrong, MPI_MAX);
    ghosts = comm.allreduce(ghosts, MPI_SUM);
    const auto dims = grid.dims();
    if (comm.rank() == 0) {
      if (wrong)
        std::printf("WRONG: 03-halo-exchange: some ghost cell holds a wrong value\n");
      else
        std::printf("ok: 03-halo-exchange: %ld ghosts correct on %d ranks (process grid %dx%dx%d), "
                    "2 fields, %zu neighbour directions in %zu MPI messages per rank per exchange\n",
                    ghosts, comm.size(), dims[0], dims[1], dims[2], halo.messages_per_exchange(2),
                    halo.mpi_messages_per_exchange(2));
    }
  }
  MPI_Finalize();
  return wrong;
}

// SPDX-License-Identifier: BSD-3-Clause
// Tutorial 4: deep halos — exchange k ghost layers once every k steps.
//
// A radius-1 stencil needs one ghost layer per step. With k layers, a rank
// can run k steps between exchanges: step s updates its owned cells plus the
// k - s ghost layers that are still valid (the region shrinks by one layer
// per step), at the price of some redundant work on the ghosts. On networks
// where a message costs much more than a cell update, that wins; see
// domex::choose_depth, which picks k from a latency/bandwidth model.
//
// Here a 7-point diffusion runs 6 steps with depth 2 (3 exchanges instead of
// 6), and every rank compares its cells with a serial run of the same
// stencil on the whole grid.
//
//   scripts/run -n 2 build/04-deep-halo/deep_halo

#include <domex/halo/halo.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

namespace {

constexpr int steps = 6;
constexpr int depth = 2;

double initial(long x, long y, long z) { return static_cast<double>((x * 7 + y * 13 + z * 29) % 17); }

// One diffusion update from a cell and its six face neighbours.
double update(double c, double xm, double xp, double ym, double yp, double zm, double zp) {
  return c + 0.1 * (xm + xp + ym + yp + zm + zp - 6.0 * c);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int wrong = 0;
  {
    domex::Comm comm{MPI_COMM_WORLD};
    const std::array<std::size_t, 3> cells{12, 12, 12};
    domex::CartesianGrid grid(comm, cells, {.periodic = {true, true, true}});
    domex::HaloPlan halo(grid, {.depth = depth});  // `depth` ghost layers on every side
    const long nx = static_cast<long>(grid.local_cells()[0]);
    const long ny = static_cast<long>(grid.local_cells()[1]);
    const long nz = static_cast<long>(grid.local_cells()[2]);
    // Global index of this rank's first owned cell per axis.
    const long ox = static_cast<long>(grid.offset()[0]);
    const long oy = static_cast<long>(grid.offset()[1]);
    const long oz = static_cast<long>(grid.offset()[2]);

    std::vector<double> u(halo.cells(), 0.0), next(halo.cells(), 0.0);
    for (long k = 0; k < nz; ++k)
      for (long j = 0; j < ny; ++j)
        for (long i = 0; i < nx; ++i)
          u[halo.index(i, j, k)] = initial(ox + i, oy + j, oz + k);

    int exchanges = 0;
    for (int step = 0; step < steps; ++step) {
      const int since = step % depth;  // steps since the last exchange
      if (since == 0) {
        halo.exchange(u);              // all `depth` ghost layers valid again
        ++exchanges;
      }
      // Valid after this step: owned cells plus depth - since - 1 ghost layers.
      const long g = depth - since - 1;
      for (long k = -g; k < nz + g; ++k)
        for (long j = -g; j < ny + g; ++j)
          for (long i = -g; i < nx + g; ++i)
            next[halo.index(i, j, k)] =
                update(u[halo.index(i, j, k)], u[halo.index(i - 1, j, k)], u[halo.index(i + 1, j, k)],
                       u[halo.index(i, j - 1, k)], u[halo.index(i, j + 1, k)], u[halo.index(i, j, k - 1)],
                       u[halo.index(i, j, k + 1)]);
      u.swap(next);
    }

    // The serial reference: the same steps on the whole periodic grid.
    const long gx = static_cast<long>(cells[0]), gy = static_cast<long>(cells[1]), gz = static_cast<long>(cells[2]);
    const auto at = [&](long x, long y, long z) {
      return static_cast<std::size_t>(((x + gx) % gx) + gx * (((y + gy) % gy) + gy * ((z + gz) % gz)));
    };
    std::vector<double> ref(static_cast<std::size_t>(gx * gy * gz)), ref_next(ref.size());
    for (long z = 0; z < gz; ++z)
      for (long y = 0; y < gy; ++y)
        for (long x = 0; x < gx; ++x) ref[at(x, y, z)] = initial(x, y, z);
    for (int step = 0; step < steps; ++step) {
      for (long z = 0; z < gz; ++z)
        for (long y = 0; y < gy; ++y)
          for (long x = 0; x < gx; ++x)
            ref_next[at(x, y, z)] = update(ref[at(x, y, z)], ref[at(x - 1, y, z)], ref[at(x + 1, y, z)],
                                           ref[at(x, y - 1, z)], ref[at(x, y + 1, z)], ref[at(x, y, z - 1)],
                                           ref[at(x, y, z + 1)]);
      ref.swap(ref_next);
    }

    long matching = 0;
    for (long k = 0; k < nz; ++k)
      for (long j = 0; j < ny; ++j)
        for (long i = 0; i < nx; ++i) {
          const double expected = ref[at(ox + i, oy + j, oz + k)];
          if (std::abs(u[halo.index(i, j, k)] - expected) > 1e-12 * (1.0 + std::abs(expected))) wrong = 1;
          else ++matching;
        }

    wrong = comm.allreduce(wrong, MPI_MAX);
    matching = comm.allreduce(matching, MPI_SUM);
    if (comm.rank() == 0) {
      if (wrong)
        std::printf("WRONG: 04-deep-halo: cells differ from the serial reference\n");
      else
        std::printf("ok: 04-deep-halo: depth %d, %d steps with %d exchanges instead of %d, "
                    "%ld cells match the serial reference\n",
                    depth, steps, exchanges, steps, matching);
    }
  }
  MPI_Finalize();
  return wrong;
}

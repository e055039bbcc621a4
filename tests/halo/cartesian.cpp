// SPDX-License-Identifier: BSD-3-Clause
#include <domex/halo/cartesian.hpp>

#include <gtest/gtest.h>

namespace {

TEST(CartesianGrid, BlocksCoverTheGlobalGridExactlyOnce) {
  domex::Comm comm{MPI_COMM_WORLD};
  for (std::array<int, 3> dims : {std::array<int, 3>{0, 0, 0}, {comm.size(), 1, 1}, {1, 0, 1}}) {
    domex::CartesianGrid grid(comm, {17, 13, 11}, {.dims = dims});
    const auto d = grid.dims();
    EXPECT_EQ(d[0] * d[1] * d[2], comm.size());
    for (int a = 0; a < 3; ++a)
      if (dims[a]) {
        EXPECT_EQ(d[a], dims[a]);
      }
    // Owned cells add up to the global count, and this rank's block is the
    // one block() gives for its coordinates.
    const auto owned = comm.allreduce(static_cast<unsigned long long>(grid.owned_cells()), MPI_SUM);
    EXPECT_EQ(owned, 17ull * 13 * 11);
    for (int a = 0; a < 3; ++a) {
      const auto [first, count] = domex::CartesianGrid::block(grid.global_cells()[a], d[a], grid.coords()[a]);
      EXPECT_EQ(grid.offset()[a], first);
      EXPECT_EQ(grid.local_cells()[a], count);
    }
    EXPECT_EQ(grid.rank_at(grid.coords()), comm.rank());
  }
}

TEST(CartesianGrid, AutomaticDimsMinimiseTheSurface) {
  domex::Comm comm{MPI_COMM_WORLD};
  // A long thin grid: cut along the long axis only.
  domex::CartesianGrid slab(comm, {64 * 8, 4, 4});
  EXPECT_EQ(slab.dims()[0], comm.size());
  if (comm.size() == 8) {
    domex::CartesianGrid cube(comm, {32, 32, 32});
    EXPECT_EQ(cube.dims(), (std::array<int, 3>{2, 2, 2}));
  }
}

TEST(CartesianGrid, NeighboursAreSymmetricAndRespectPeriodicity) {
  domex::Comm comm{MPI_COMM_WORLD};
  for (bool periodic : {false, true}) {
    domex::CartesianGrid grid(comm, {9, 8, 7}, {.periodic = {periodic, periodic, periodic}});
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int there = grid.neighbour({dx, dy, dz});
          if (periodic) {
            EXPECT_GE(there, 0);
          }
          // The neighbour's coordinates are ours shifted: going back lands here.
          std::array<int, 3> c = grid.coords();
          c[0] += dx, c[1] += dy, c[2] += dz;
          bool inside = true;
          for (int a = 0; a < 3; ++a) inside = inside && c[a] >= 0 && c[a] < grid.dims()[a];
          if (!periodic) {
            EXPECT_EQ(there >= 0, inside);
          }
          int coords[3];
          if (there >= 0) {
            MPI_Cart_coords(grid.comm().get(), there, 3, coords);
            for (int a = 0; a < 3; ++a)
              EXPECT_EQ(coords[a], ((c[a] % grid.dims()[a]) + grid.dims()[a]) % grid.dims()[a]);
          }
        }
  }
}

TEST(CartesianGrid, RejectsImpossibleShapes) {
  domex::Comm comm{MPI_COMM_WORLD};
  EXPECT_THROW(domex::CartesianGrid(comm, {8, 8, 0}), domex::Error);
  EXPECT_THROW(domex::CartesianGrid(comm, {8, 8, 8}, {.dims = {comm.size() + 1, 1, 1}}), domex::Error);
  EXPECT_THROW(domex::CartesianGrid(comm, {8, 8, 8}, {.dims = {-1, 0, 0}}), domex::Error);
  if (comm.size() > 1) {
    try {
      domex::CartesianGrid too_few(comm, {static_cast<std::size_t>(comm.size()) - 1, 1, 1}, {.dims = {0, 1, 1}});
      ADD_FAILURE() << "no error for fewer cells than ranks";
    } catch (const domex::Error& error) {
      EXPECT_NE(std::string(error.what()).find("fits"), std::string::npos) << error.what();
    }
  }
}

TEST(CartesianGrid, OneRanksBadOrDifferentArgumentsAreAnErrorOnEveryRank) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto error_of = [](auto&& make) {
    try {
      make();
    } catch (const domex::Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  for (int bad : {0, comm.size() - 1, comm.size() / 2}) {
    // A bad value on one rank: every rank throws, naming that rank.
    const std::string zero = error_of([&] {
      const std::size_t nz = comm.rank() == bad ? 0 : 8;
      domex::CartesianGrid grid(comm, {8, 8, nz});
    });
    EXPECT_NE(zero.find("rank " + std::to_string(bad) + ": CartesianGrid: global_cells[2] is 0"), std::string::npos)
        << zero;
    // A different but valid value on one rank: every rank throws.
    if (comm.size() > 1) {
      const std::string differ = error_of([&] {
        const std::size_t nx = comm.rank() == bad ? 9 : 8;
        domex::CartesianGrid grid(comm, {nx, 8, 8}, {.periodic = {comm.rank() == bad, false, false}});
      });
      EXPECT_NE(differ.find("ranks passed different"), std::string::npos) << differ;
    }
  }
  // The communicator is still usable.
  domex::CartesianGrid grid(comm, {8, 8, 8});
  EXPECT_EQ(grid.comm().allreduce(1, MPI_SUM), comm.size());
}

}  // namespace

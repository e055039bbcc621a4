// SPDX-License-Identifier: BSD-3-Clause
// domex-lattice's operator and solver: the same results on any number of
// ranks, any process grid and any halo path as on one rank.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include <domex/comm/reduce.hpp>

#include "wilson.hpp"

namespace {

using domex::LatticePath;
using namespace domex::lattice;

constexpr std::uint64_t seed = 20261123;  // fixed, printed by the failure messages below
constexpr double kappa = 0.12;
constexpr LatticePath paths[] = {LatticePath::pack, LatticePath::datatype, LatticePath::contiguous};

std::vector<std::array<int, 4>> process_grids(int ranks) {
  std::vector<std::array<int, 4>> grids{{0, 0, 0, 0}};
  for (int axis = 0; axis < 4; ++axis) {
    std::array<int, 4> one{1, 1, 1, 1};
    one[static_cast<std::size_t>(axis)] = ranks;
    grids.push_back(one);
  }
  if (ranks == 4) grids.insert(grids.end(), {{2, 2, 1, 1}, {1, 1, 2, 2}});
  if (ranks == 8) grids.insert(grids.end(), {{2, 2, 2, 1}, {1, 2, 2, 2}});
  return grids;
}

/// The field on one rank (MPI_COMM_SELF), indexed by global site.
struct Serial {
  domex::Comm self{MPI_COMM_SELF};
  domex::LatticeGrid grid;
  Wilson op;
  Serial(std::array<std::size_t, 4> global) : grid(self, global, {.dims = {1, 1, 1, 1}}), op(grid, kappa, seed, LatticePath::pack) {}
};

TEST(Wilson, OperatorOnPRanksEqualsOneRankBitwise) {
  domex::Comm comm{MPI_COMM_WORLD};
  const std::array<std::size_t, 4> global{8, 8, 8, 8};
  Serial serial(global);
  auto b1 = serial.op.random_field(seed);
  std::vector<Spinor> d1(b1.size());
  serial.op.apply(b1, d1);  // on one rank, global index == local index
  // Every path on the automatic grid; the other grids take the paths in turn
  // (the ghost test of <domex/halo/lattice.hpp> covers every path on every grid).
  const auto grids = process_grids(comm.size());
  for (std::size_t g = 0; g < grids.size(); ++g)
    for (const auto path : paths) {
      if (g > 0 && path != paths[g % 3]) continue;
      const auto& dims = grids[g];
      SCOPED_TRACE(testing::Message() << "seed " << seed << " path " << domex::to_string(path) << " dims " << dims[0]
                                      << "x" << dims[1] << "x" << dims[2] << "x" << dims[3]);
      domex::LatticeGrid grid(comm, global, {.dims = dims});
      Wilson op(grid, kappa, seed, path);
      auto b = op.random_field(seed);
      std::vector<Spinor> d(b.size());
      op.apply(b, d);
      std::size_t differ = 0;
      for (std::size_t site = 0; site < op.volume(); ++site)
        differ += std::memcmp(&d[site], &d1[op.global_index(site)], sizeof(Spinor)) != 0 ? 1 : 0;
      EXPECT_EQ(differ, 0u) << "sites whose D psi differs (bitwise) from the one-rank result";
    }
}

TEST(Wilson, NormalOperatorIsHermitian) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::LatticeGrid grid(comm, {8, 4, 4, 4});
  Wilson op(grid, kappa, seed, LatticePath::datatype);
  auto x = op.random_field(seed), y = op.random_field(seed + 1);
  std::vector<Spinor> ax(x.size()), ay(x.size()), scratch(x.size());
  op.apply_normal(x, ax, scratch);
  op.apply_normal(y, ay, scratch);
  const auto n = op.volume();
  std::array<Complex, 3> dots{local_dot({y.data(), n}, {ax.data(), n}), local_dot({ay.data(), n}, {x.data(), n}),
                              local_dot({x.data(), n}, {ax.data(), n})};
  domex::allreduce(comm, dots);
  EXPECT_NEAR(std::abs(dots[0] - dots[1]) / std::abs(dots[0]), 0.0, 1e-13);  // <y, A x> = <A y, x>
  EXPECT_GT(dots[2].real(), 0.0);                                             // positive definite
  EXPECT_NEAR(dots[2].imag() / dots[2].real(), 0.0, 1e-13);
}

TEST(Wilson, CgConvergesToTheOneRankSolutionOnEveryPath) {
  domex::Comm comm{MPI_COMM_WORLD};
  const std::array<std::size_t, 4> global{8, 4, 4, 8};
  Serial serial(global);
  const auto b1 = serial.op.random_field(seed);
  std::vector<Spinor> x1;
  const auto reference = cg(serial.op, b1, x1, {.tolerance = 1e-12});
  ASSERT_TRUE(reference.converged);
  const std::array<std::array<int, 4>, 2> grids{{{0, 0, 0, 0}, {1, 1, 1, comm.size()}}};
  for (const auto& dims : grids)
    for (const auto path : paths)
      for (const bool overlap : {true, false}) {
        // Overlap changes no number: once is enough; the t-split grid once per path.
        if (overlap && (path != LatticePath::pack || dims[3] > 1)) continue;
        SCOPED_TRACE(testing::Message() << "seed " << seed << " path " << domex::to_string(path) << " overlap "
                                        << overlap << " dims " << dims[0] << "x" << dims[1] << "x" << dims[2] << "x"
                                        << dims[3]);
        domex::LatticeGrid grid(comm, global, {.dims = dims});
        Wilson op(grid, kappa, seed, path);
        const auto b = op.random_field(seed);
        std::vector<Spinor> x;
        const auto result = cg(op, b, x, {.tolerance = 1e-12, .overlap = overlap});
        EXPECT_TRUE(result.converged);
        EXPECT_LE(result.true_residual, 1e-10);
        EXPECT_NEAR(result.iterations, reference.iterations, 2);
        std::array<Complex, 2> norms{};
        for (std::size_t site = 0; site < op.volume(); ++site)
          for (int s = 0; s < 4; ++s)
            for (int c = 0; c < 3; ++c) {
              const Complex mine = x[site].c[s][c], one = x1[op.global_index(site)].c[s][c];
              norms[0] += std::norm(mine - one);
              norms[1] += std::norm(one);
            }
        domex::allreduce(comm, norms);
        EXPECT_LE(std::sqrt(norms[0].real() / norms[1].real()), 1e-10);
      }
}

TEST(Wilson, WrongFieldSizeIsAnErrorNotAHang) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::LatticeGrid grid(comm, {8, 4, 4, 4}, {.dims = {comm.size(), 1, 1, 1}});
  Wilson op(grid, kappa, seed, LatticePath::contiguous);
  auto in = op.random_field(seed);
  std::vector<Spinor> out(in.size());
  const bool bad = comm.rank() == 0;
  if (bad) in.pop_back();
  bool threw = false;
  try {
    op.apply(in, out);
  } catch (const domex::Error&) {
    threw = true;
  }
  // Rank 0 and its two x neighbours are concerned (all ranks for P <= 3).
  const bool concerned = bad || grid.neighbour(0, -1) == 0 || grid.neighbour(0, 1) == 0;
  EXPECT_EQ(threw, concerned);
}

}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/collective.hpp>
#include <domex/halo/cartesian.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <span>
#include <string>

namespace domex {
namespace {

/// Dims with product P that respect the fixed ones and minimise the surface
/// of the largest block (what its halo costs). Deterministic on every rank.
std::array<int, 3> choose_dims(int ranks, std::array<int, 3> fixed, std::array<std::size_t, 3> cells) {
  std::array<int, 3> best{0, 0, 0};
  double best_surface = std::numeric_limits<double>::infinity();
  for (int a = 1; a <= ranks; ++a) {
    if (ranks % a || (fixed[0] && fixed[0] != a)) continue;
    for (int b = 1; b <= ranks / a; ++b) {
      if ((ranks / a) % b || (fixed[1] && fixed[1] != b)) continue;
      const int c = ranks / a / b;
      if (fixed[2] && fixed[2] != c) continue;
      const std::array<int, 3> dims{a, b, c};
      std::array<double, 3> block{};
      bool fits = true;
      for (int axis = 0; axis < 3; ++axis) {
        fits = fits && cells[axis] >= static_cast<std::size_t>(dims[axis]);
        block[axis] = static_cast<double>((cells[axis] + dims[axis] - 1) / dims[axis]);
      }
      if (!fits) continue;
      const double surface = block[0] * block[1] + block[1] * block[2] + block[0] * block[2];
      if (surface < best_surface) {
        best_surface = surface;
        best = dims;
      }
    }
  }
  return best;
}

}  // namespace

std::pair<std::size_t, std::size_t> CartesianGrid::block(std::size_t cells, int parts, int index) noexcept {
  const auto p = static_cast<std::size_t>(parts), i = static_cast<std::size_t>(index);
  const std::size_t base = cells / p, extra = cells % p;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

/// The Cartesian communicator for the checked and completed dims. Collective:
/// every rank checks its own arguments and that they equal every other rank's
/// (two small allreduces), so one rank's bad or different input is the same
/// domex::Error on every rank instead of a hang in MPI_Cart_create.
static MPI_Comm create_cartesian(const Comm& comm, std::array<std::size_t, 3> global_cells, const CartesianOptions& options) {
  std::string problem;
  for (int axis = 0; axis < 3 && problem.empty(); ++axis) {
    if (global_cells[axis] == 0)
      problem = fmt::format("global_cells[{}] is 0: every axis needs at least one cell", axis);
    else if (global_cells[axis] > static_cast<std::size_t>(std::numeric_limits<long long>::max()))
      problem = fmt::format("global_cells[{}] = {} is too large", axis, global_cells[axis]);
    else if (options.dims[axis] < 0)
      problem = fmt::format("dims[{}] = {} is negative", axis, options.dims[axis]);
  }
  agree(comm, "CartesianGrid", problem);
  // Every argument as (value, -value), reduced with MAX: min == max on every axis iff all ranks agree.
  std::array<long long, 18> extremes{};
  for (int axis = 0; axis < 3; ++axis) {
    const long long values[3] = {static_cast<long long>(global_cells[axis]), options.dims[axis],
                                 options.periodic[axis] ? 1 : 0};
    for (int k = 0; k < 3; ++k) {
      extremes[static_cast<std::size_t>(6 * axis + 2 * k)] = values[k];
      extremes[static_cast<std::size_t>(6 * axis + 2 * k + 1)] = -values[k];
    }
  }
  comm.allreduce_in_place(std::span<long long>(extremes), MPI_MAX);
  for (std::size_t i = 0; i < extremes.size(); i += 2)
    if (extremes[i] != -extremes[i + 1])
      fail("CartesianGrid", fmt::format("ranks passed different {} on axis {} (from {} to {}): every rank must pass the "
                                        "same global cells, dims and periodicity",
                                        std::array{"global_cells", "dims", "periodic"}[(i / 2) % 3], "xyz"[i / 6],
                                        -extremes[i + 1], extremes[i]));
  std::array<int, 3> dims = choose_dims(comm.size(), options.dims, global_cells);
  if (dims[0] == 0)
    fail("CartesianGrid",
         fmt::format("no process grid of {} ranks with dims {{{}, {}, {}}} (0 = free) fits {}x{}x{} cells", comm.size(),
                     options.dims[0], options.dims[1], options.dims[2], global_cells[0], global_cells[1],
                     global_cells[2]));
  const int periods[3] = {options.periodic[0], options.periodic[1], options.periodic[2]};
  MPI_Comm cart = MPI_COMM_NULL;
  // reorder = 0: rank numbers stay those of the user's communicator.
  check_mpi(MPI_Cart_create(comm.get(), 3, dims.data(), periods, 0, &cart), "MPI_Cart_create");
  return cart;
}

CartesianGrid::CartesianGrid(const Comm& comm, std::array<std::size_t, 3> global_cells, CartesianOptions options)
    : comm_(Comm::adopt(create_cartesian(comm, global_cells, options))),
      periodic_(options.periodic),
      global_(global_cells) {
  int periods[3];
  check_mpi(MPI_Cart_get(comm_.get(), 3, dims_.data(), periods, coords_.data()), "MPI_Cart_get");
  for (int axis = 0; axis < 3; ++axis) {
    const auto [first, count] = block(global_[axis], dims_[axis], coords_[axis]);
    offset_[axis] = first;
    local_[axis] = count;
  }
}

int CartesianGrid::rank_at(std::array<int, 3> coords) const noexcept {
  // Row-major, as MPI_Cart_create numbers ranks (reorder = 0): z fastest.
  int rank = 0;
  for (int axis = 0; axis < 3; ++axis) {
    int c = coords[axis];
    if (c < 0 || c >= dims_[axis]) {
      if (!periodic_[axis]) return -1;
      c = ((c % dims_[axis]) + dims_[axis]) % dims_[axis];
    }
    rank = rank * dims_[axis] + c;
  }
  return rank;
}

int CartesianGrid::neighbour(std::array<int, 3> direction) const noexcept {
  return rank_at({coords_[0] + direction[0], coords_[1] + direction[1], coords_[2] + direction[2]});
}

}  // namespace domex

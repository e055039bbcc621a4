// SPDX-License-Identifier: BSD-3-Clause
#include "solver.hpp"

#include "files.hpp"  // fail_app

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <numbers>
#include <span>

namespace domex::mhd {
namespace {

// Per-sample quantities of the 2x2x2 stencil: the 8 fields, then the mass
// flux rho v and the motional field w = v x B (flux form: product first,
// derivative second, so that the continuity update telescopes).
constexpr int q_mx = 8, q_my = 9, q_mz = 10, q_wx = 11, q_wy = 12, q_wz = 13, q_count = 14;

/// Offsets of the 8 samples of a 2x2x2 box: bit 0 = +x, bit 1 = +y, bit 2 = +z.
using Offsets = std::array<std::size_t, 8>;

struct Sources {
  std::array<const double*, field::count> u;
  std::array<const double*, 3> dipole;  // B_dipole at the samples (B = B_dipole + b)
};

/// Mean `avg` and time derivative `rhs` of the 8 fields at the centre of the
/// 2x2x2 box of samples at base + offset[n]. Derivatives along x are the mean
/// of the 4 x-differences, and so on; the operation order is fixed, so a
/// point's result depends only on its inputs (bitwise reproducibility).
void evaluate(const Sources& src, std::size_t base, const Offsets& offset, const std::array<double, 3>& dipole,
              const std::array<double, 3>& gravity, const std::array<double, 3>& quarter_inv_h, double gamma,
              State& avg, State& rhs) {
  double s[8][q_count];
  for (int n = 0; n < 8; ++n) {
    const std::size_t at = base + offset[n];
    for (std::size_t f = 0; f < field::count; ++f) s[n][f] = src.u[f][at];
    const double vx = s[n][field::vx], vy = s[n][field::vy], vz = s[n][field::vz];
    const double bx = src.dipole[0][at] + s[n][field::bx], by = src.dipole[1][at] + s[n][field::by],
                 bz = src.dipole[2][at] + s[n][field::bz];
    s[n][q_mx] = s[n][field::rho] * vx;
    s[n][q_my] = s[n][field::rho] * vy;
    s[n][q_mz] = s[n][field::rho] * vz;
    s[n][q_wx] = vy * bz - vz * by;
    s[n][q_wy] = vz * bx - vx * bz;
    s[n][q_wz] = vx * by - vy * bx;
  }
  const auto mean = [&](std::size_t q) {
    return 0.125 * (((s[0][q] + s[1][q]) + (s[2][q] + s[3][q])) + ((s[4][q] + s[5][q]) + (s[6][q] + s[7][q])));
  };
  const auto d_x = [&](std::size_t q) {
    return quarter_inv_h[0] *
           (((s[1][q] - s[0][q]) + (s[3][q] - s[2][q])) + ((s[5][q] - s[4][q]) + (s[7][q] - s[6][q])));
  };
  const auto d_y = [&](std::size_t q) {
    return quarter_inv_h[1] *
           (((s[2][q] - s[0][q]) + (s[3][q] - s[1][q])) + ((s[6][q] - s[4][q]) + (s[7][q] - s[5][q])));
  };
  const auto d_z = [&](std::size_t q) {
    return quarter_inv_h[2] *
           (((s[4][q] - s[0][q]) + (s[5][q] - s[1][q])) + ((s[6][q] - s[2][q]) + (s[7][q] - s[3][q])));
  };
  for (std::size_t f = 0; f < field::count; ++f) avg[f] = mean(f);

  const double density = avg[field::rho], pressure = avg[field::p];
  const std::array<double, 3> v{avg[field::vx], avg[field::vy], avg[field::vz]};
  const std::array<double, 3> b{dipole[0] + avg[field::bx], dipole[1] + avg[field::by], dipole[2] + avg[field::bz]};
  // J = curl b (curl B_dipole = 0); force = J x B - grad p.
  const std::array<double, 3> j{d_y(field::bz) - d_z(field::by), d_z(field::bx) - d_x(field::bz),
                                d_x(field::by) - d_y(field::bx)};
  const std::array<double, 3> grad_p{d_x(field::p), d_y(field::p), d_z(field::p)};
  const std::array<double, 3> force{j[1] * b[2] - j[2] * b[1] - grad_p[0], j[2] * b[0] - j[0] * b[2] - grad_p[1],
                                    j[0] * b[1] - j[1] * b[0] - grad_p[2]};

  rhs[field::rho] = -(d_x(q_mx) + d_y(q_my) + d_z(q_mz));
  for (std::size_t c = 0; c < 3; ++c) {
    const std::size_t q = field::vx + c;
    rhs[q] = -(v[0] * d_x(q) + v[1] * d_y(q) + v[2] * d_z(q)) + force[c] / density + gravity[c];
  }
  const double div_v = d_x(field::vx) + d_y(field::vy) + d_z(field::vz);
  rhs[field::p] = -(v[0] * grad_p[0] + v[1] * grad_p[1] + v[2] * grad_p[2]) - gamma * pressure * div_v;
  rhs[field::bx] = d_y(q_wz) - d_z(q_wy);
  rhs[field::by] = d_z(q_wx) - d_x(q_wz);
  rhs[field::bz] = d_x(q_wy) - d_y(q_wx);
}

std::array<double, 3> at(const std::array<std::vector<double>, 3>& vectors, std::size_t index) {
  return {vectors[0][index], vectors[1][index], vectors[2][index]};
}

/// splitmix64 finaliser: a cheap, well-mixing 64-bit hash.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

Solver::Solver(const Comm& comm, const Config& config) : config_(config), problem_(parse_problem(config.problem)) {
  const bool periodic = problem_ == Problem::periodic_wave;
  const std::array<std::size_t, 3> cells{static_cast<std::size_t>(config.cells[0]),
                                         static_cast<std::size_t>(config.cells[1]),
                                         static_cast<std::size_t>(config.cells[2])};
  grid_ = std::make_unique<CartesianGrid>(
      comm, cells, CartesianOptions{.dims = config.dims, .periodic = {periodic, periodic, periodic}});
  lower_ = {config.x_min, -config.half_width, -config.half_width};
  const std::array<double, 3> upper{config.x_max, config.half_width, config.half_width};
  for (int axis = 0; axis < 3; ++axis) h_[axis] = (upper[axis] - lower_[axis]) / static_cast<double>(cells[axis]);

  // The initial state and dt do not depend on the depth: build the final
  // layout at once unless the depth is to be chosen from a measured step.
  build(config.depth > 0 ? config.depth : 1);
  if (config.dt > 0) {
    dt_ = config.dt;
  } else {
    // Fastest signal |v| + c_fast of the initial state outside the inner
    // boundary (inside, the state is reset). MPI_MAX is exact: same dt on any np.
    double fastest = 0;
    const auto [nx, ny, nz] = grid_->local_cells();
    for (long k = 0; k < static_cast<long>(nz); ++k)
      for (long j = 0; j < static_cast<long>(ny); ++j)
        for (long i = 0; i < static_cast<long>(nx); ++i) {
          const std::size_t c = halo_->index(i, j, k);
          if (std::binary_search(inner_cells_.begin(), inner_cells_.end(), c)) continue;
          const auto b0 = at(dipole_cell_, c);
          double v2 = 0, b2 = 0;
          for (int a = 0; a < 3; ++a) {
            v2 += u_[field::vx + a][c] * u_[field::vx + a][c];
            b2 += (b0[a] + u_[field::bx + a][c]) * (b0[a] + u_[field::bx + a][c]);
          }
          const double fast = std::sqrt((config.gamma * u_[field::p][c] + b2) / u_[field::rho][c]);
          fastest = std::max(fastest, std::sqrt(v2) + fast);
        }
    const State sw = inflow();
    fastest = std::max(fastest,
                       std::abs(sw[field::vx]) +
                           std::sqrt((config.gamma * sw[field::p] + sw[field::bz] * sw[field::bz]) / sw[field::rho]));
    fastest = comm.allreduce(fastest, MPI_MAX);
    const double h_min = std::min({h_[0], h_[1], h_[2]});
    dt_ = config.cfl * h_min / fastest;
    // Explicit diffusion on the 7-point Laplacian is stable for D dt / h^2 <= 1/6.
    const double diffusion = std::max({config.d_rho, config.nu, config.d_p, config.eta});
    if (diffusion > 0) dt_ = std::min(dt_, 0.125 * h_min * h_min / diffusion);
  }

  if (config.depth == 0) {
    // Measure a step on the owned cells (depth 1), take the slowest rank's
    // time per cell so that every rank chooses the same depth.
    const double start = MPI_Wtime();
    update(0);
    update(0);
    const double per_cell = (MPI_Wtime() - start) / (2.0 * static_cast<double>(grid_->owned_cells()));
    int max_depth = 4;
    for (int axis = 0; axis < 3; ++axis)
      if (grid_->dims()[axis] > 1 || periodic)
        max_depth =
            std::min<int>(max_depth, static_cast<int>(cells[axis] / static_cast<std::size_t>(grid_->dims()[axis])));
    int depth = choose_depth(*grid_, Stencil::full,
                             {.bytes_per_cell = field::count * sizeof(double),
                              .seconds_per_cell_update = comm.allreduce(per_cell, MPI_MAX),
                              .max_depth = max_depth});
    depth = comm.allreduce(depth, MPI_MIN);  // the model sees local sizes: agree explicitly
    build(depth);  // also undoes the two measured steps
  }
}

double Solver::centre(int axis, long index) const noexcept {
  return lower_[axis] + (static_cast<double>(index) + 0.5) * h_[axis];
}

State Solver::inflow() const { return {config_.rho_sw, config_.v_sw, 0, 0, config_.p_sw, 0, 0, config_.bz_imf}; }

State Solver::initial(const std::array<double, 3>& x) const {
  if (problem_ == Problem::magnetosphere) {
    // Solar wind with b = 0 (B = dipole) outside, dense static plasma inside.
    // The wind starts at rest near the planet (speed ramping up over one
    // r_inner): a wind already leaving the night side would tear a vacuum
    // behind the planet in the first steps.
    const double r = std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    if (r < config_.r_inner) return {config_.rho_inner, 0, 0, 0, config_.p_inner, 0, 0, 0};
    const double ramp = (r - config_.r_inner) / std::max(config_.r_inner, 1e-300);
    return {config_.rho_sw, config_.v_sw * (1 - std::exp(-ramp * ramp)), 0, 0, config_.p_sw, 0, 0, 0};
  }
  // One wavelength per box side on each axis.
  std::array<double, 3> s{}, c{};
  for (int a = 0; a < 3; ++a) {
    const double k = 2 * std::numbers::pi / (h_[a] * static_cast<double>(config_.cells[a]));
    s[a] = std::sin(k * (x[a] - lower_[a]));
    c[a] = std::cos(k * (x[a] - lower_[a]));
  }
  const double v = 0.2 * config_.v_sw, b = 0.1;
  return {config_.rho_sw * (1 + 0.2 * s[0] * c[1]), v * s[1], v * s[2], v * s[0],
          config_.p_sw * (1 + 0.2 * c[2]),          b * c[2], b * c[0], config_.bz_imf + b * c[1]};
}

void Solver::build(int depth) {
  halo_.emplace(*grid_, HaloOptions{.depth = depth, .stencil = Stencil::full});
  const std::size_t cells = halo_->cells();
  for (std::size_t f = 0; f < field::count; ++f) {
    u_[f].assign(cells, 0.0);
    next_[f].assign(cells, 0.0);
    corner_[f].assign(cells, 0.0);
  }
  for (auto* vectors : {&dipole_cell_, &gravity_cell_, &dipole_corner_, &gravity_corner_})
    for (auto& component : *vectors) component.assign(cells, 0.0);
  inner_cells_.clear();
  copy_ghosts_.clear();
  inflow_ghosts_.clear();
  steps_ = exchanges_ = 0;
  since_exchange_ = depth;  // exchange before the first step
  first_bad_ = -1;
  profile_.clear();

  const auto n = grid_->local_cells(), offset = grid_->offset(), global = grid_->global_cells();
  const auto periodic = grid_->periodic();
  const bool planet = problem_ == Problem::magnetosphere;
  // Softened (inside the planet, r < 1) dipole along -z and gravity.
  const auto planet_fields = [&](const std::array<double, 3>& x, std::size_t c, Vectors& dipole, Vectors& gravity) {
    const double r2 = std::max(x[0] * x[0] + x[1] * x[1] + x[2] * x[2], 1.0);
    const double inv_r3 = 1 / (r2 * std::sqrt(r2));
    const double m_dot_x = -config_.dipole * x[2];
    for (int a = 0; a < 3; ++a) {
      dipole[a][c] = (3 * m_dot_x * x[a] / r2 + (a == 2 ? config_.dipole : 0.0)) * inv_r3;
      gravity[a][c] = -config_.gm * x[a] * inv_r3;
    }
  };
  for (long k = -depth; k < static_cast<long>(n[2]) + depth; ++k)
    for (long j = -depth; j < static_cast<long>(n[1]) + depth; ++j)
      for (long i = -depth; i < static_cast<long>(n[0]) + depth; ++i) {
        const std::size_t c = halo_->index(i, j, k);
        const std::array<long, 3> g{static_cast<long>(offset[0]) + i, static_cast<long>(offset[1]) + j,
                                    static_cast<long>(offset[2]) + k};
        std::array<double, 3> x{}, corner{};
        for (int a = 0; a < 3; ++a) {
          x[a] = centre(a, g[a]);
          corner[a] = lower_[a] + static_cast<double>(g[a] + 1) * h_[a];
        }
        const State state = initial(x);
        for (std::size_t f = 0; f < field::count; ++f) u_[f][c] = next_[f][c] = state[f];
        if (planet) {
          planet_fields(x, c, dipole_cell_, gravity_cell_);
          planet_fields(corner, c, dipole_corner_, gravity_corner_);
          if (std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]) < config_.r_inner) inner_cells_.push_back(c);
        }
        // Ghosts beyond a non-periodic global face belong to the boundary
        // condition: inflow at x-min, else a copy of the clamped cell.
        std::array<long, 3> clamped = g;
        bool outside = false;
        for (int a = 0; a < 3; ++a)
          if (!periodic[a] && (g[a] < 0 || g[a] >= static_cast<long>(global[a]))) {
            outside = true;
            clamped[a] = std::clamp(g[a], 0L, static_cast<long>(global[a]) - 1);
          }
        if (!outside) continue;
        if (g[0] < 0 && !periodic[0]) {
          inflow_ghosts_.push_back(c);
        } else {
          copy_ghosts_.emplace_back(
              c, halo_->index(clamped[0] - static_cast<long>(offset[0]), clamped[1] - static_cast<long>(offset[1]),
                              clamped[2] - static_cast<long>(offset[2])));
        }
      }
  apply_boundary();
}

Solver::Box Solver::region(int layers) const {
  Box box{};
  const auto n = grid_->local_cells();
  for (int a = 0; a < 3; ++a) {
    std::array<int, 3> direction{0, 0, 0};
    direction[a] = -1;
    box.lo[a] = grid_->neighbour(direction) >= 0 ? -layers : 0;
    direction[a] = 1;
    box.hi[a] = static_cast<long>(n[a]) + (grid_->neighbour(direction) >= 0 ? layers : 0);
  }
  return box;
}

void Solver::update(int layers) {
  const HaloPlan& halo = *halo_;
  const Box cells = region(layers);
  const std::size_t sy = halo.index(0, 1, 0) - halo.index(0, 0, 0), sz = halo.index(0, 0, 1) - halo.index(0, 0, 0);
  const Offsets offset{0, 1, sy, 1 + sy, sz, 1 + sz, sy + sz, 1 + sy + sz};
  const std::array<double, 3> quarter_inv_h{0.25 / h_[0], 0.25 / h_[1], 0.25 / h_[2]};
  const std::array<double, 3> inv_h2{1 / (h_[0] * h_[0]), 1 / (h_[1] * h_[1]), 1 / (h_[2] * h_[2])};
  const State diffusion{config_.d_rho, config_.nu,  config_.nu,  config_.nu,
                        config_.d_p,   config_.eta, config_.eta, config_.eta};
  Sources from_cells{{}, {dipole_cell_[0].data(), dipole_cell_[1].data(), dipole_cell_[2].data()}};
  Sources from_corners{{}, {dipole_corner_[0].data(), dipole_corner_[1].data(), dipole_corner_[2].data()}};
  for (std::size_t f = 0; f < field::count; ++f) {
    from_cells.u[f] = u_[f].data();
    from_corners.u[f] = corner_[f].data();
  }
  State avg{}, rhs{};

  // Stage 1: half step on the corners between the cells of the region; corner
  // (i, j, k) sits at (i + 1/2, j + 1/2, k + 1/2).
  const double half_dt = 0.5 * dt_;
  for (long k = cells.lo[2] - 1; k < cells.hi[2]; ++k)
    for (long j = cells.lo[1] - 1; j < cells.hi[1]; ++j)
      for (long i = cells.lo[0] - 1; i < cells.hi[0]; ++i) {
        const std::size_t c = halo.index(i, j, k);
        evaluate(from_cells, c, offset, at(dipole_corner_, c), at(gravity_corner_, c), quarter_inv_h, config_.gamma,
                 avg, rhs);
        for (std::size_t f = 0; f < field::count; ++f) corner_[f][c] = avg[f] + half_dt * rhs[f];
      }
  // Stage 2: full step on the cells from their 8 corners, plus diffusion at time n.
  for (long k = cells.lo[2]; k < cells.hi[2]; ++k)
    for (long j = cells.lo[1]; j < cells.hi[1]; ++j)
      for (long i = cells.lo[0]; i < cells.hi[0]; ++i) {
        const std::size_t c = halo.index(i, j, k);
        evaluate(from_corners, c - offset[7], offset, at(dipole_cell_, c), at(gravity_cell_, c), quarter_inv_h,
                 config_.gamma, avg, rhs);
        for (std::size_t f = 0; f < field::count; ++f) {
          const double* q = u_[f].data();
          const double laplacian = (q[c + 1] - 2 * q[c] + q[c - 1]) * inv_h2[0] +
                                   (q[c + sy] - 2 * q[c] + q[c - sy]) * inv_h2[1] +
                                   (q[c + sz] - 2 * q[c] + q[c - sz]) * inv_h2[2];
          next_[f][c] = q[c] + dt_ * (rhs[f] + diffusion[f] * laplacian);
        }
      }
  // Cells outside the region are stale in next_, but none is read before
  // the next exchange or boundary fill overwrites it.
  std::swap(u_, next_);
  const State inner{config_.rho_inner, 0, 0, 0, config_.p_inner, 0, 0, 0};
  for (std::size_t f = 0; f < field::count; ++f)
    for (const std::size_t c : inner_cells_) u_[f][c] = inner[f];
}

void Solver::apply_boundary() {
  const State sw = inflow();
  for (std::size_t f = 0; f < field::count; ++f) {
    auto& q = u_[f];
    for (const auto& [ghost, cell] : copy_ghosts_) q[ghost] = q[cell];
    for (const std::size_t ghost : inflow_ghosts_) q[ghost] = sw[f];
  }
}

void Solver::exchange() {
  {
    auto timer = profile_.phase("halo");
    check_state();  // collective anyway: stop all ranks together on a bad state
    halo_->exchange(u_[0], u_[1], u_[2], u_[3], u_[4], u_[5], u_[6], u_[7]);
  }
  ++exchanges_;
  since_exchange_ = 0;
  auto timer = profile_.phase("boundary");
  apply_boundary();
}

void Solver::restore(long steps, double dt, const std::array<std::vector<double>, field::count>& fields) {
  const auto n = grid_->local_cells();
  for (std::size_t f = 0; f < field::count; ++f)
    for (long k = 0; k < static_cast<long>(n[2]); ++k)
      for (long j = 0; j < static_cast<long>(n[1]); ++j)
        for (long i = 0; i < static_cast<long>(n[0]); ++i) {
          const std::size_t c = halo_->index(i, j, k);
          u_[f][c] = fields[f][c];
        }
  steps_ = steps;
  dt_ = dt;
  since_exchange_ = depth();  // exchange (and apply the boundary) before the next step
  first_bad_ = -1;
}

void Solver::step() {
  if (since_exchange_ == depth()) exchange();
  ++since_exchange_;
  {
    auto timer = profile_.phase("compute");
    update(depth() - since_exchange_);
    ++steps_;
    scan_owned();
  }
  auto timer = profile_.phase("boundary");
  apply_boundary();
}

void Solver::scan_owned() {
  if (first_bad_ >= 0) return;
  const auto n = grid_->local_cells(), global = grid_->global_cells();
  for (long k = 0; k < static_cast<long>(n[2]); ++k)
    for (long j = 0; j < static_cast<long>(n[1]); ++j)
      for (long i = 0; i < static_cast<long>(n[0]); ++i) {
        const std::size_t c = halo_->index(i, j, k);
        bool finite = true;
        for (std::size_t f = 0; f < field::count; ++f) finite = finite && std::isfinite(u_[f][c]);
        if (finite && u_[field::rho][c] > 0 && u_[field::p][c] > 0) continue;
        const auto cell = static_cast<long long>(
            global_index(static_cast<std::size_t>(i), static_cast<std::size_t>(j), static_cast<std::size_t>(k)));
        const long long key = steps_ * static_cast<long long>(global[0] * global[1] * global[2]) + cell;
        if (first_bad_ < 0 || key < first_bad_) {
          first_bad_ = key;
          bad_values_ = {u_[field::rho][c], u_[field::p][c]};
        }
      }
}

void Solver::check_state() const {
  const Comm& comm = grid_->comm();
  const long long first = comm.allreduce(first_bad_ >= 0 ? first_bad_ : LLONG_MAX, MPI_MIN);
  if (first == LLONG_MAX) return;
  std::array<double, 2> values{};
  if (first_bad_ == first) values = bad_values_;
  comm.allreduce_in_place(std::span<double>(values), MPI_SUM);
  const auto global = grid_->global_cells();
  const auto total = static_cast<long long>(global[0] * global[1] * global[2]);
  const long long step = first / total, cell = first % total;
  const std::array<long, 3> g{
      static_cast<long>(cell % static_cast<long long>(global[0])),
      static_cast<long>(cell / static_cast<long long>(global[0]) % static_cast<long long>(global[1])),
      static_cast<long>(cell / static_cast<long long>(global[0] * global[1]))};
  apps::fail_app("domex-mhd",
       fmt::format("step {}: cell ({}, {}, {}) at x = ({:.3g}, {:.3g}, {:.3g}) has rho = {:.6g}, p = {:.6g} "
                   "(non-finite or non-positive); try a smaller --cfl or larger diffusion",
                   step, g[0], g[1], g[2], centre(0, g[0]), centre(1, g[1]), centre(2, g[2]), values[0], values[1]));
}

double Solver::mass() const {
  const auto n = grid_->local_cells();
  double sum = 0;
  for (long k = 0; k < static_cast<long>(n[2]); ++k)
    for (long j = 0; j < static_cast<long>(n[1]); ++j)
      for (long i = 0; i < static_cast<long>(n[0]); ++i) sum += u_[field::rho][halo_->index(i, j, k)];
  return grid_->comm().allreduce(sum * h_[0] * h_[1] * h_[2], MPI_SUM);
}

std::size_t Solver::global_index(std::size_t i, std::size_t j, std::size_t k) const noexcept {
  const auto offset = grid_->offset(), global = grid_->global_cells();
  return ((offset[2] + k) * global[1] + offset[1] + j) * global[0] + offset[0] + i;
}

std::uint64_t Solver::checksum() const {
  const auto n = grid_->local_cells();
  std::uint64_t sum = 0;  // unsigned: wraps mod 2^64, so the sum is exact in any order
  for (std::size_t k = 0; k < n[2]; ++k)
    for (std::size_t j = 0; j < n[1]; ++j)
      for (std::size_t i = 0; i < n[0]; ++i) {
        const std::size_t c = halo_->index(static_cast<long>(i), static_cast<long>(j), static_cast<long>(k));
        std::uint64_t hash = mix(global_index(i, j, k));
        for (std::size_t f = 0; f < field::count; ++f) hash = mix(hash ^ std::bit_cast<std::uint64_t>(u_[f][c]));
        sum += hash;
      }
  return grid_->comm().allreduce(static_cast<unsigned long long>(sum), MPI_SUM);
}

}  // namespace domex::mhd

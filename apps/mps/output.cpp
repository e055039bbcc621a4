// SPDX-License-Identifier: BSD-3-Clause
#include "output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "particles.hpp"

namespace domex::mps {

std::vector<FrontRow> compare_front(const std::vector<std::array<double, 2>>& series) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto at = [&](double T) {
    if (series.empty() || T < series.front()[0] || T > series.back()[0]) return nan;
    const auto after = std::lower_bound(series.begin(), series.end(), T,
                                        [](const std::array<double, 2>& s, double t) { return s[0] < t; });
    if (after == series.begin()) return (*after)[1];
    const auto before = after - 1;
    const double f = ((*after)[0] - (*before)[0]) > 0 ? (T - (*before)[0]) / ((*after)[0] - (*before)[0]) : 0.0;
    return (*before)[1] + f * ((*after)[1] - (*before)[1]);
  };
  std::vector<FrontRow> rows;
  for (std::size_t k = 0; k < martin_moyce_T.size(); ++k) {
    const double T = martin_moyce_T[k], Z_exp = martin_moyce_Z[k];
    const double Z = at(T), Z_shifted = at(T - 0.175);
    rows.push_back({T, Z_exp, Z, (Z - Z_exp) / Z_exp, Z_shifted, (Z_shifted - Z_exp) / Z_exp});
  }
  return rows;
}

apps::Picture front_picture(const std::vector<std::array<double, 2>>& series, const std::string& title) {
  constexpr std::size_t nx = 320, ny = 240;
  constexpr double T_lo = 0, T_hi = 3.2, Z_lo = 0.8, Z_hi = 4.2;
  std::vector<double> field(nx * ny, 0.0);
  const auto plot = [&](double T, double Z, double value, int half) {
    const long i = std::lround((T - T_lo) / (T_hi - T_lo) * static_cast<double>(nx - 1));
    const long j = std::lround((Z - Z_lo) / (Z_hi - Z_lo) * static_cast<double>(ny - 1));
    for (long dj = -half; dj <= half; ++dj)
      for (long di = -half; di <= half; ++di) {
        const long x = i + di, y = j + dj;
        if (x >= 0 && y >= 0 && x < static_cast<long>(nx) && y < static_cast<long>(ny))
          field[static_cast<std::size_t>(y) * nx + static_cast<std::size_t>(x)] = value;
      }
  };
  // Dense enough that the line has no gaps: interpolate between steps.
  for (std::size_t k = 1; k < series.size(); ++k)
    for (int s = 0; s <= 8; ++s) {
      const double f = s / 8.0;
      const double T = series[k - 1][0] + f * (series[k][0] - series[k - 1][0]);
      const double Z = series[k - 1][1] + f * (series[k][1] - series[k - 1][1]);
      plot(T + 0.175, Z, 0.35, 0);
      plot(T, Z, 0.6, 0);
    }
  for (std::size_t k = 0; k < martin_moyce_T.size(); ++k) plot(martin_moyce_T[k], martin_moyce_Z[k], 1.0, 1);
  return apps::render_field(nx, ny, field,
                            {.lo = 0,
                             .hi = 1,
                             .title = title,
                             .x_label = "T = t sqrt(2g/a)",
                             .y_label = "Z = x/a",
                             .colorbar_label = "0.6 MPS, 0.35 MPS T+0.175, 1 M&M",
                             .x_range = {T_lo, T_hi},
                             .y_range = {Z_lo, Z_hi},
                             .pixels_per_cell = 2});
}

apps::Picture flow_picture(const Solver& solver) {
  const State state = solver.gather();
  const Config& config = solver.config();
  const double l0 = solver.spacing(), a = config.width;
  const double x_lo = -3.5 * l0, x_hi = 4 * a + 4.5 * l0, y_lo = -3.5 * l0, y_hi = 2.75 * a;
  const auto nx = static_cast<std::size_t>(std::lround((x_hi - x_lo) / l0));
  const auto ny = static_cast<std::size_t>(std::lround((y_hi - y_lo) / l0));
  constexpr double air = -0.5;  // darker than any fluid particle
  std::vector<double> field(nx * ny, air);
  const double scale = config.density * config.gravity * 2 * a;
  for (std::size_t k = 0; k < state.id.size(); ++k) {
    const double fx = (state.x[k][0] - x_lo) / l0, fy = (state.x[k][1] - y_lo) / l0;
    if (!(fx >= 0 && fy >= 0 && fx < static_cast<double>(nx) && fy < static_cast<double>(ny))) continue;
    const std::size_t cell = static_cast<std::size_t>(fy) * nx + static_cast<std::size_t>(fx);
    field[cell] = state.kind[k] == fluid ? state.p[k] / scale : std::numeric_limits<double>::quiet_NaN();
  }
  const double Z = solver.front();  // collective
  if (solver.comm().rank() != 0) return {};
  return apps::render_field(nx, ny, field,
                            {.lo = air,
                             .hi = 1.0,
                             .title = fmt::format("MPS dam break  T = {:.2f}  Z = {:.2f}  (colour: p / rho g 2a)",
                                                  solver.dimensionless_time(), Z),
                             .x_label = "x (m)",
                             .y_label = "y (m)",
                             .colorbar_label = "p / rho g 2a",
                             .x_range = {x_lo, x_hi},
                             .y_range = {y_lo, y_hi},
                             .pixels_per_cell = nx < 200 ? 4u : 2u});
}

void write_snapshot(const Solver& solver, const std::filesystem::path& path) {
  const std::size_t n = solver.ids().size();
  std::vector<double> pressure(n), kind(n);
  std::vector<std::uint64_t> id(n);
  for (std::size_t i = 0; i < n; ++i) {
    pressure[i] = solver.pressure(i);
    kind[i] = solver.kinds()[i];
    id[i] = static_cast<std::uint64_t>(solver.ids()[i]);
  }
  const std::vector<double> velocity = apps::components(solver.velocities());
  const std::array<apps::ParticleField, 3> fields{
      apps::ParticleField{.name = "velocity", .components = 3, .values = velocity},
      apps::ParticleField{.name = "pressure", .components = 1, .values = pressure},
      apps::ParticleField{.name = "kind", .components = 1, .values = kind}};
  const apps::ParticleSnapshot snapshot{
      .title = fmt::format("domex-mps step {} T {:.6g}", solver.steps(), solver.dimensionless_time()),
      .time = solver.time(), .position = solver.positions(), .id = id, .fields = fields};
  if (solver.config().snapshot_format == "hdf5") apps::write_particles_hdf5(solver.comm(), "domex-mps", path, snapshot);
  else apps::write_particles_vtk(solver.comm(), "domex-mps", path, snapshot);
}

std::array<double, 5> quartiles(std::vector<double> values) {
  if (values.empty()) return {0, 0, 0, 0, 0};
  std::sort(values.begin(), values.end());
  const auto rank = [&](double q) {
    return values[static_cast<std::size_t>(std::lround(q * static_cast<double>(values.size() - 1)))];
  };
  return {values.front(), rank(0.25), rank(0.5), rank(0.75), values.back()};
}

}  // namespace domex::mps

// SPDX-License-Identifier: BSD-3-Clause
#include "output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "particles.hpp"

namespace domex::mps {

namespace {

using Rgb = std::array<std::uint8_t, 3>;
constexpr Rgb white{255, 255, 255}, black{0, 0, 0};

/// A rectangle of pixels: columns [x, x + width), rows [y, y + height).
struct PixelBox {
  long x = 0, y = 0, width = 0, height = 0;
};

void set(apps::Picture& picture, long x, long y, const Rgb& colour) {
  if (x < 0 || y < 0 || x >= static_cast<long>(picture.width) || y >= static_cast<long>(picture.height)) return;
  std::copy(colour.begin(), colour.end(), picture.rgb.begin() + 3 * (y * static_cast<long>(picture.width) + x));
}

Rgb at(const apps::Picture& picture, long x, long y) {
  const auto k = static_cast<std::size_t>(3 * (y * static_cast<long>(picture.width) + x));
  return {picture.rgb[k], picture.rgb[k + 1], picture.rgb[k + 2]};
}

/// Two renders of one layout that differ only in some cells' values: where
/// they differ (the bounding box), and those pixels of `a` set to `colour`
/// if given. render_field has one colour off its scale (NaN); this gives a
/// second one, and finds the plot inside the picture, without knowing the
/// renderer's layout.
PixelBox differences(apps::Picture& a, const apps::Picture& b, const Rgb* colour) {
  long x0 = static_cast<long>(a.width), y0 = static_cast<long>(a.height), x1 = -1, y1 = -1;
  for (long y = 0; y < static_cast<long>(a.height); ++y)
    for (long x = 0; x < static_cast<long>(a.width); ++x) {
      if (at(a, x, y) == at(b, x, y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
      if (colour) set(a, x, y, *colour);
    }
  return x1 < 0 ? PixelBox{} : PixelBox{x0, y0, x1 - x0 + 1, y1 - y0 + 1};
}

/// `text` in the applications' bitmap font, black on white, cropped to its
/// ink: render_field's title, cut out above the plot (apps/common/image.hpp
/// has no call that draws text alone).
apps::Picture text_picture(const std::string& text) {
  // A plot wider than any line of text, so that the title's ink is the only
  // ink above it and between its left and right ends.
  constexpr std::size_t cells = 16, per_cell = 256, plot = cells * per_cell;
  const apps::Picture page =
      apps::render_field(cells, 1, std::vector<double>(cells, 0.0), {.title = text, .pixels_per_cell = per_cell});
  long frame = -1, left = 0;  // the plot's top frame line: the first row with a black run as wide as the plot
  for (long y = 0; y < static_cast<long>(page.height) && frame < 0; ++y)
    for (long x = 0, run = 0; x < static_cast<long>(page.width); ++x) {
      run = at(page, x, y) == black ? run + 1 : 0;
      if (run >= static_cast<long>(plot)) {
        frame = y, left = x - run + 1;
        break;
      }
    }
  long x0 = static_cast<long>(page.width), y0 = frame, x1 = -1, y1 = -1;
  for (long y = 0; y < frame; ++y)
    for (long x = left; x < left + static_cast<long>(plot); ++x)
      if (at(page, x, y) != white) {
        x0 = std::min(x0, x), x1 = std::max(x1, x);
        y0 = std::min(y0, y), y1 = std::max(y1, y);
      }
  apps::Picture ink;
  if (x1 < 0) return ink;
  ink.width = static_cast<std::size_t>(x1 - x0 + 1);
  ink.height = static_cast<std::size_t>(y1 - y0 + 1);
  ink.rgb.resize(3 * ink.width * ink.height);
  for (long y = 0; y < static_cast<long>(ink.height); ++y)
    for (long x = 0; x < static_cast<long>(ink.width); ++x) set(ink, x, y, at(page, x0 + x, y0 + y));
  return ink;
}

/// `picture` turned a quarter to the left (text then reads upwards).
apps::Picture turned_left(const apps::Picture& picture) {
  apps::Picture turned{picture.height, picture.width, std::vector<std::uint8_t>(picture.rgb.size())};
  for (long y = 0; y < static_cast<long>(picture.height); ++y)
    for (long x = 0; x < static_cast<long>(picture.width); ++x)
      set(turned, y, static_cast<long>(picture.width) - 1 - x, at(picture, x, y));
  return turned;
}

/// Copies `sprite` onto `picture` with its top-left corner at (x, y), white pixels left out.
void paste(apps::Picture& picture, const apps::Picture& sprite, long x, long y) {
  for (long r = 0; r < static_cast<long>(sprite.height); ++r)
    for (long c = 0; c < static_cast<long>(sprite.width); ++c)
      if (const Rgb colour = at(sprite, c, r); colour != white) set(picture, x + c, y + r, colour);
}

/// The columns [first, first + width) of `picture`, white where it has none
/// (a negative `first` adds white columns on the left).
apps::Picture columns(const apps::Picture& picture, long first, long width) {
  apps::Picture out{static_cast<std::size_t>(width), picture.height,
                    std::vector<std::uint8_t>(3 * static_cast<std::size_t>(width) * picture.height, 255)};
  for (long y = 0; y < static_cast<long>(picture.height); ++y)
    for (long x = std::max(0L, first); x < std::min(first + width, static_cast<long>(picture.width)); ++x)
      set(out, x - first, y, at(picture, x, y));
  return out;
}

/// A disc of `radius` pixels around (x, y).
void dot(apps::Picture& picture, double x, double y, double radius, const Rgb& colour) {
  for (long r = std::lround(std::floor(y - radius)); r <= std::lround(std::ceil(y + radius)); ++r)
    for (long c = std::lround(std::floor(x - radius)); c <= std::lround(std::ceil(x + radius)); ++c) {
      const double dx = static_cast<double>(c) + 0.5 - x, dy = static_cast<double>(r) + 0.5 - y;
      if (dx * dx + dy * dy <= radius * radius) set(picture, c, r, colour);
    }
}

/// A line `width` pixels thick from (x0, y0) to (x1, y1).
void line(apps::Picture& picture, double x0, double y0, double x1, double y1, double width, const Rgb& colour) {
  const double length = std::hypot(x1 - x0, y1 - y0);
  const long steps = std::max(1L, static_cast<long>(std::ceil(2 * length)));
  for (long s = 0; s <= steps; ++s) {
    const double f = static_cast<double>(s) / static_cast<double>(steps);
    dot(picture, x0 + f * (x1 - x0), y0 + f * (y1 - y0), width / 2, colour);
  }
}

void rectangle(apps::Picture& picture, const PixelBox& box, const Rgb& colour) {
  for (long y = box.y; y < box.y + box.height; ++y)
    for (long x = box.x; x < box.x + box.width; ++x) set(picture, x, y, colour);
}

/// Martin & Moyce's (T, Z) at or past T - shift = impact_T are not compared.
double deviation_before(double Z, double Z_experiment, double T, double impact_T) {
  return T < impact_T ? (Z - Z_experiment) / Z_experiment : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

double far_wall_front(const Config& config) { return 4.0 - 0.5 / static_cast<double>(config.resolution); }

FrontComparison compare_front(const std::vector<std::array<double, 2>>& series, double impact_Z) {
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
  FrontComparison comparison{.rows = {}, .impact_Z = impact_Z, .impact_T = nan};
  for (const auto& [T, Z] : series)
    if (Z >= impact_Z) {
      comparison.impact_T = T;
      break;
    }
  // No impact in the run: every T it reached compares (NaN < x is false, so use +inf).
  const double impact_T =
      std::isnan(comparison.impact_T) ? std::numeric_limits<double>::infinity() : comparison.impact_T;
  for (std::size_t k = 0; k < martin_moyce_T.size(); ++k) {
    const double T = martin_moyce_T[k], Z_exp = martin_moyce_Z[k];
    const double Z = at(T), Z_shifted = at(T - 0.175);
    comparison.rows.push_back({T, Z_exp, Z, deviation_before(Z, Z_exp, T, impact_T), Z_shifted,
                               deviation_before(Z_shifted, Z_exp, T - 0.175, impact_T)});
  }
  return comparison;
}

std::string front_csv(const std::vector<std::array<double, 2>>& series, long first_step,
                      const FrontComparison& comparison) {
  const auto number = [](double value) { return std::isnan(value) ? std::string() : fmt::format("{:.6f}", value); };
  const auto flag = [&](double T) { return !std::isnan(comparison.impact_T) && T >= comparison.impact_T ? 1 : 0; };
  std::string csv = "step,T,Z,Z_experiment,deviation,Z_shifted_0.175,deviation_shifted_0.175,at_far_wall\n";
  std::size_t next = 0;  // the next tabulated row
  const auto table_rows_until = [&](double T) {
    for (; next < comparison.rows.size() && comparison.rows[next].T <= T; ++next) {
      const FrontRow& row = comparison.rows[next];
      if (std::isnan(row.Z) && std::isnan(row.Z_shifted)) continue;  // not reached by this run
      csv += fmt::format(",{:.6f},{},{:.2f},{},{},{},{}\n", row.T, number(row.Z), row.Z_experiment,
                         number(row.deviation), number(row.Z_shifted), number(row.deviation_shifted), flag(row.T));
    }
  };
  for (std::size_t k = 0; k < series.size(); ++k) {
    table_rows_until(series[k][0]);
    csv += fmt::format("{},{:.6f},{:.6f},,,,,{}\n", first_step + static_cast<long>(k), series[k][0], series[k][1],
                       flag(series[k][0]));
  }
  table_rows_until(std::numeric_limits<double>::infinity());
  return csv;
}

apps::Picture front_picture(const std::vector<std::array<double, 2>>& series, double far_wall_Z,
                            const std::string& run_name, const std::string& title) {
  constexpr std::size_t nx = 640, ny = 480;
  constexpr double T_lo = 0, T_hi = 3.2, Z_lo = 0.8, Z_hi = 4.2;
  const apps::FieldStyle style{.lo = 0,
                               .hi = 1,
                               .title = title,
                               .x_label = "T = t sqrt(2g/a)",
                               .y_label = "Z = x/a",
                               .x_range = {T_lo, T_hi},
                               .y_range = {Z_lo, Z_hi},
                               .pixels_per_cell = 1};
  // The axes from the renderer; the plot (found where two renders differ) drawn here.
  apps::Picture picture = apps::render_field(nx, ny, std::vector<double>(nx * ny, 0.0), style);
  const PixelBox plot =
      differences(picture, apps::render_field(nx, ny, std::vector<double>(nx * ny, 1.0), style), &white);
  const auto px = [&](double T) {
    return static_cast<double>(plot.x) + (T - T_lo) / (T_hi - T_lo) * static_cast<double>(plot.width);
  };
  const auto py = [&](double Z) {
    return static_cast<double>(plot.y) + (Z_hi - Z) / (Z_hi - Z_lo) * static_cast<double>(plot.height);
  };
  // Colours a reader can tell apart, also in grey and with colour-blindness (blue, orange, black).
  constexpr Rgb run = run_colour, shifted = shifted_colour, wall{150, 150, 150};
  apps::Picture plotted = picture;
  for (double x = static_cast<double>(plot.x); x < static_cast<double>(plot.x + plot.width); x += 8)  // dashed
    line(plotted, x, py(far_wall_Z), std::min(x + 4, static_cast<double>(plot.x + plot.width - 1)), py(far_wall_Z), 1.5,
         wall);
  for (std::size_t k = 1; k < series.size(); ++k) {
    line(plotted, px(series[k - 1][0] + 0.175), py(series[k - 1][1]), px(series[k][0] + 0.175), py(series[k][1]), 3,
         shifted);
    line(plotted, px(series[k - 1][0]), py(series[k - 1][1]), px(series[k][0]), py(series[k][1]), 3, run);
  }
  for (std::size_t k = 0; k < martin_moyce_T.size(); ++k) {
    const double x = px(martin_moyce_T[k]), y = py(martin_moyce_Z[k]);
    rectangle(plotted, {std::lround(x) - 4, std::lround(y) - 4, 9, 9}, black);
  }
  // Nothing drawn outside the plot (its frame, the axes) but what was there.
  for (long y = 0; y < static_cast<long>(picture.height); ++y)
    for (long x = 0; x < static_cast<long>(picture.width); ++x)
      if (x < plot.x || y < plot.y || x >= plot.x + plot.width || y >= plot.y + plot.height)
        set(plotted, x, y, at(picture, x, y));
  // The legend, top left inside the plot: a sample of each mark and its name.
  const std::array<std::string, 4> names{run_name, run_name + ", T + 0.175", "Martin & Moyce (1952)", "far wall"};
  std::array<apps::Picture, 4> texts;
  long text_width = 0, row_height = 0;
  for (std::size_t k = 0; k < names.size(); ++k) {
    texts[k] = text_picture(names[k]);
    text_width = std::max(text_width, static_cast<long>(texts[k].width));
    row_height = std::max(row_height, static_cast<long>(texts[k].height));
  }
  row_height += 8;
  constexpr long pad = 8, sample = 28;
  // Bottom right, where the curves (rising from the bottom left) are not.
  const long legend_width = pad + sample + pad + text_width + pad,
             legend_height = pad + row_height * static_cast<long>(names.size()) - 8 + pad;
  const PixelBox legend{plot.x + plot.width - 12 - legend_width, plot.y + plot.height - 12 - legend_height,
                        legend_width, legend_height};
  rectangle(plotted, {legend.x - 1, legend.y - 1, legend.width + 2, legend.height + 2}, black);
  rectangle(plotted, legend, white);
  for (std::size_t k = 0; k < names.size(); ++k) {
    const long top = legend.y + pad + static_cast<long>(k) * row_height;
    const double middle = static_cast<double>(top) + 6.5;  // the middle of a capital
    const double x0 = static_cast<double>(legend.x + pad), x1 = x0 + sample;
    if (k == 0) line(plotted, x0, middle, x1, middle, 3, run);
    if (k == 1) line(plotted, x0, middle, x1, middle, 3, shifted);
    if (k == 2) rectangle(plotted, {std::lround((x0 + x1) / 2) - 4, std::lround(middle) - 4, 9, 9}, black);
    if (k == 3)
      for (double x = x0; x < x1; x += 8) line(plotted, x, middle, std::min(x + 4, x1), middle, 1.5, wall);
    paste(plotted, texts[k], legend.x + pad + sample + pad, top);
  }
  // The renderer's colour bar means nothing here: cut off right of the plot
  // (the last tick label and the title kept; a title wider than the plot starts at its left edge).
  const long right =
      std::max(plot.x + plot.width + 1, plot.x + static_cast<long>(text_picture(title).width)) + 16;
  return columns(plotted, 0, std::min(right, static_cast<long>(plotted.width)));
}

std::size_t flow_pixels_per_spacing(const Config& config) {
  const long cells = 4 * config.resolution + 8;  // the tank and its walls, in l0
  return static_cast<std::size_t>(std::max(2L, (704 + cells - 1) / cells));
}

apps::Picture flow_picture(const Solver& solver) {
  const State state = solver.gather();
  const Config& config = solver.config();
  const double l0 = solver.spacing(), a = config.width;
  const long cells_x = 4 * config.resolution + 8;
  const double x_lo = -3.5 * l0, x_hi = x_lo + static_cast<double>(cells_x) * l0, y_lo = -3.5 * l0,
               y_hi = 2.75 * a;
  const std::size_t per_spacing = flow_pixels_per_spacing(config);
  const auto nx = static_cast<std::size_t>(cells_x) * per_spacing;
  const auto ny = static_cast<std::size_t>(std::lround((y_hi - y_lo) / l0 * static_cast<double>(per_spacing)));
  // Every particle a square of side l0 (so nothing of the background shows
  // through water at spacing l0), walls first; the empty cells get a value in
  // one render and NaN in the other.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> field(nx * ny, 0.0), empty(nx * ny, 1);
  const double scale = config.density * config.gravity * 2 * a;
  const double pixel = l0 / static_cast<double>(per_spacing);
  for (const bool fluid_pass : {false, true})
    for (std::size_t k = 0; k < state.id.size(); ++k) {
      if ((state.kind[k] == fluid) != fluid_pass) continue;
      // Every pixel the square touches (beyond a rounding error): particles
      // at most l0 apart leave no gap, whatever their sub-pixel positions.
      const auto first = [&](double edge) { return static_cast<long>(std::floor(edge / pixel + 1e-6)); };
      const auto end = [&](double edge) { return static_cast<long>(std::ceil(edge / pixel - 1e-6)); };
      const double left = state.x[k][0] - 0.5 * l0 - x_lo, bottom = state.x[k][1] - 0.5 * l0 - y_lo;
      const long i0 = first(left), i1 = end(left + l0), j0 = first(bottom), j1 = end(bottom + l0);
      for (long j = std::max(0L, j0); j < std::min(j1, static_cast<long>(ny)); ++j)
        for (long i = std::max(0L, i0); i < std::min(i1, static_cast<long>(nx)); ++i) {
          const std::size_t cell = static_cast<std::size_t>(j) * nx + static_cast<std::size_t>(i);
          field[cell] = fluid_pass ? state.p[k] / scale : nan;
          empty[cell] = 0;
        }
    }
  const double Z = solver.front();  // collective
  if (solver.comm().rank() != 0) return {};
  const apps::FieldStyle style{.lo = 0,
                               .hi = 1.0,
                               .title = fmt::format("MPS dam break  T = {:.2f}  Z = {:.2f}  (colour: p / rho g 2a)",
                                                    solver.dimensionless_time(), Z),
                               .x_label = "x / a",
                               .colorbar_label = "p / rho g 2a",
                               .x_range = {x_lo / a, x_hi / a},
                               .y_range = {y_lo / a, y_hi / a},
                               .pixels_per_cell = 1};
  apps::Picture picture = apps::render_field(nx, ny, field, style);
  for (std::size_t cell = 0; cell < field.size(); ++cell)
    if (empty[cell] != 0) field[cell] = nan;
  differences(picture, apps::render_field(nx, ny, field, style), &tank_colour);  // grey: off viridis
  apps::Picture zeros = apps::render_field(nx, ny, std::vector<double>(nx * ny, 0.0), style);
  const PixelBox plot =
      differences(zeros, apps::render_field(nx, ny, std::vector<double>(nx * ny, 1.0), style), nullptr);
  // The y axis's name, read upwards, in a column of its own left of the
  // tick labels: the renderer centres its y label beside them, where it can
  // meet one. (Axes in units of a: ticks 0.5 or 1 apart at any resolution,
  // where metres gave 0.05 at some plot widths, labels touching.)
  const apps::Picture name = turned_left(text_picture("y / a"));
  constexpr long margin = 10, gap = 12;
  const long extra = static_cast<long>(name.width) + gap;
  apps::Picture labelled = columns(picture, -extra, static_cast<long>(picture.width) + extra);
  paste(labelled, name, margin, plot.y + (plot.height - static_cast<long>(name.height)) / 2);
  return labelled;
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

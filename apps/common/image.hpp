// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// PNG images of 2-D scalar fields for the applications: a colour range fixed
// by the caller (viridis), axes with tick labels, a colour bar and a title,
// drawn with a built-in 5x7 bitmap font and compressed by libpng.
//
//   domex::apps::write_png_field("rho.png", nx, ny, rho,
//       {.lo = 0.1, .hi = 10, .log_scale = true, .title = "rho  t = 2.5",
//        .x_label = "x", .y_label = "y", .colorbar_label = "rho",
//        .x_range = {-24, 40}, .y_range = {-24, 24}});

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace domex::apps {

/// 8-bit RGB picture, rows top to bottom.
struct Picture {
  std::size_t width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  ///< 3 * width * height bytes
};

/// How render_field draws a field. The colour range is the caller's and
/// fixed, not the data's minimum and maximum, so that the frames of a run
/// (or two runs) compare by eye.
struct FieldStyle {
  double lo = 0, hi = 1;   ///< values at the ends of the colour map (lo < hi); values beyond are clamped
  bool log_scale = false;  ///< colour by log10(value); lo and hi (> 0) are still values, not logarithms
  std::string title{};     ///< line above the plot, e.g. "rho  t = 12.5  step 400"
  std::string x_label{}, y_label{}, colorbar_label{};
  std::array<double, 2> x_range{0, 1};  ///< x at the left and right edges of the field
  std::array<double, 2> y_range{0, 1};  ///< y at the bottom and top edges
  std::size_t pixels_per_cell = 0;      ///< 0: automatic (the longer side 384 pixels or more; 1 past 384 cells)
};

/// The picture of a `width` x `height` field: values[j * width + i] is the
/// cell in column i (x increasing to the right) and row j, row 0 at the
/// BOTTOM (y increasing upwards, as in a plot). NaN cells are drawn grey (a
/// mask, e.g. inside a planet). Throws domex::Error on a size mismatch, an
/// empty field, lo >= hi, or lo <= 0 with log_scale.
[[nodiscard]] Picture render_field(std::size_t width, std::size_t height, std::span<const double> values,
                                   const FieldStyle& style);

/// The pictures left to right on white, 16 pixels apart, tops aligned.
[[nodiscard]] Picture side_by_side(std::span<const Picture> pictures);

/// The bytes of a PNG file of `picture` (libpng, deflate-compressed).
/// Throws domex::Error with libpng's message on failure.
[[nodiscard]] std::string encode_png(const Picture& picture);

/// Writes `picture` as a PNG, all or nothing (write_file in files.hpp).
void write_png(const std::filesystem::path& path, const Picture& picture);

/// render_field + write_png: one field, one file.
void write_png_field(const std::filesystem::path& path, std::size_t width, std::size_t height,
                     std::span<const double> values, const FieldStyle& style);

}  // namespace domex::apps

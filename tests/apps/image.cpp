// SPDX-License-Identifier: BSD-3-Clause
// Tests of apps/common/image.hpp: the PNG decodes (libpng) to the picture's
// bytes; a field's row 0 is at the bottom; lo, hi and NaN take the colour
// map's ends and grey; bad sizes and ranges are refused.

#include <gtest/gtest.h>
#include <png.h>

#include <domex/comm/error.hpp>

#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "image.hpp"

namespace {

using domex::apps::Picture;
using Colour = std::array<std::uint8_t, 3>;

Colour pixel(const Picture& picture, std::size_t x, std::size_t y) {
  const std::size_t at = 3 * (y * picture.width + x);
  return {picture.rgb[at], picture.rgb[at + 1], picture.rgb[at + 2]};
}

TEST(Image, PngDecodesToThePicture) {
  Picture picture{7, 5, {}};
  for (std::size_t i = 0; i < 3 * 7 * 5; ++i) picture.rgb.push_back(static_cast<std::uint8_t>(i * 37 % 256));
  const std::string bytes = domex::apps::encode_png(picture);
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) << image.message;
  EXPECT_EQ(image.width, 7u);
  EXPECT_EQ(image.height, 5u);
  image.format = PNG_FORMAT_RGB;
  std::vector<std::uint8_t> decoded(PNG_IMAGE_SIZE(image));
  ASSERT_TRUE(png_image_finish_read(&image, nullptr, decoded.data(), 0, nullptr)) << image.message;
  EXPECT_EQ(decoded, picture.rgb);
}

TEST(Image, FieldRowZeroAtTheBottomAndFixedColours) {
  // 2 x 2 cells, 10 pixels each: (0,0) NaN, (1,0) lo, (0,1) hi, (1,1) beyond hi (clamped).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> values{nan, 1.0, 100.0, 1e9};
  const Picture picture = domex::apps::render_field(
      2, 2, values,
      {.lo = 1, .hi = 100, .log_scale = true, .title = "t = 1.5", .x_label = "x", .y_label = "y",
       .colorbar_label = "rho", .x_range = {-1, 1}, .y_range = {0, 2}, .pixels_per_cell = 10});
  ASSERT_EQ(picture.rgb.size(), 3 * picture.width * picture.height);
  // The grey NaN cell: exactly 10 x 10 pixels, nothing else is that grey.
  const Colour grey{190, 190, 190}, low{68, 1, 84}, high{253, 231, 37};  // viridis[0], viridis[255]
  std::size_t count = 0, gx = 0, gy = 0;
  for (std::size_t y = 0; y < picture.height; ++y)
    for (std::size_t x = 0; x < picture.width; ++x)
      if (pixel(picture, x, y) == grey && count++ == 0) gx = x, gy = y;
  ASSERT_EQ(count, 100u);
  ASSERT_GE(gy, 10u);
  EXPECT_EQ(pixel(picture, gx + 10, gy), low);       // (1, 0): right of it
  EXPECT_EQ(pixel(picture, gx, gy - 10), high);      // (0, 1): above it
  EXPECT_EQ(pixel(picture, gx + 19, gy - 1), high);  // (1, 1): clamped to hi
  EXPECT_GT(domex::apps::encode_png(picture).size(), 100u);
}

TEST(Image, RefusesBadInput) {
  const std::vector<double> four(4, 1.0);
  EXPECT_THROW((void)domex::apps::render_field(3, 2, four, {}), domex::Error);
  EXPECT_THROW((void)domex::apps::render_field(2, 2, four, {.lo = 1, .hi = 1}), domex::Error);
  EXPECT_THROW((void)domex::apps::render_field(2, 2, four, {.lo = 0, .hi = 1, .log_scale = true}), domex::Error);
  EXPECT_THROW((void)domex::apps::encode_png(Picture{2, 2, std::vector<std::uint8_t>(5)}), domex::Error);
}

}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
#include "image.hpp"

#include <domex/comm/error.hpp>
#include <fmt/format.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "files.hpp"

namespace domex::apps {
namespace {

using Colour = std::array<std::uint8_t, 3>;
constexpr Colour black{0, 0, 0}, masked{190, 190, 190};

/// Viridis (Stefan van der Walt and Nathaniel Smith, CC0): perceptually
/// uniform and readable in grey and by colour-blind readers; matplotlib's
/// 256 entries rounded to 8 bits.
constexpr std::uint8_t viridis[256][3] = {
    {68,1,84}, {68,2,86}, {69,4,87}, {69,5,89}, {70,7,90}, {70,8,92}, {70,10,93}, {70,11,94}, {71,13,96}, {71,14,97},
    {71,16,99}, {71,17,100}, {71,19,101}, {72,20,103}, {72,22,104}, {72,23,105}, {72,24,106}, {72,26,108},
    {72,27,109}, {72,28,110}, {72,29,111}, {72,31,112}, {72,32,113}, {72,33,115}, {72,35,116}, {72,36,117},
    {72,37,118}, {72,38,119}, {72,40,120}, {72,41,121}, {71,42,122}, {71,44,122}, {71,45,123}, {71,46,124},
    {71,47,125}, {70,48,126}, {70,50,126}, {70,51,127}, {70,52,128}, {69,53,129}, {69,55,129}, {69,56,130},
    {68,57,131}, {68,58,131}, {68,59,132}, {67,61,132}, {67,62,133}, {66,63,133}, {66,64,134}, {66,65,134},
    {65,66,135}, {65,68,135}, {64,69,136}, {64,70,136}, {63,71,136}, {63,72,137}, {62,73,137}, {62,74,137},
    {62,76,138}, {61,77,138}, {61,78,138}, {60,79,138}, {60,80,139}, {59,81,139}, {59,82,139}, {58,83,139},
    {58,84,140}, {57,85,140}, {57,86,140}, {56,88,140}, {56,89,140}, {55,90,140}, {55,91,141}, {54,92,141},
    {54,93,141}, {53,94,141}, {53,95,141}, {52,96,141}, {52,97,141}, {51,98,141}, {51,99,141}, {50,100,142},
    {50,101,142}, {49,102,142}, {49,103,142}, {49,104,142}, {48,105,142}, {48,106,142}, {47,107,142}, {47,108,142},
    {46,109,142}, {46,110,142}, {46,111,142}, {45,112,142}, {45,113,142}, {44,113,142}, {44,114,142}, {44,115,142},
    {43,116,142}, {43,117,142}, {42,118,142}, {42,119,142}, {42,120,142}, {41,121,142}, {41,122,142}, {41,123,142},
    {40,124,142}, {40,125,142}, {39,126,142}, {39,127,142}, {39,128,142}, {38,129,142}, {38,130,142}, {38,130,142},
    {37,131,142}, {37,132,142}, {37,133,142}, {36,134,142}, {36,135,142}, {35,136,142}, {35,137,142}, {35,138,141},
    {34,139,141}, {34,140,141}, {34,141,141}, {33,142,141}, {33,143,141}, {33,144,141}, {33,145,140}, {32,146,140},
    {32,146,140}, {32,147,140}, {31,148,140}, {31,149,139}, {31,150,139}, {31,151,139}, {31,152,139}, {31,153,138},
    {31,154,138}, {30,155,138}, {30,156,137}, {30,157,137}, {31,158,137}, {31,159,136}, {31,160,136}, {31,161,136},
    {31,161,135}, {31,162,135}, {32,163,134}, {32,164,134}, {33,165,133}, {33,166,133}, {34,167,133}, {34,168,132},
    {35,169,131}, {36,170,131}, {37,171,130}, {37,172,130}, {38,173,129}, {39,173,129}, {40,174,128}, {41,175,127},
    {42,176,127}, {44,177,126}, {45,178,125}, {46,179,124}, {47,180,124}, {49,181,123}, {50,182,122}, {52,182,121},
    {53,183,121}, {55,184,120}, {56,185,119}, {58,186,118}, {59,187,117}, {61,188,116}, {63,188,115}, {64,189,114},
    {66,190,113}, {68,191,112}, {70,192,111}, {72,193,110}, {74,193,109}, {76,194,108}, {78,195,107}, {80,196,106},
    {82,197,105}, {84,197,104}, {86,198,103}, {88,199,101}, {90,200,100}, {92,200,99}, {94,201,98}, {96,202,96},
    {99,203,95}, {101,203,94}, {103,204,92}, {105,205,91}, {108,205,90}, {110,206,88}, {112,207,87}, {115,208,86},
    {117,208,84}, {119,209,83}, {122,209,81}, {124,210,80}, {127,211,78}, {129,211,77}, {132,212,75}, {134,213,73},
    {137,213,72}, {139,214,70}, {142,214,69}, {144,215,67}, {147,215,65}, {149,216,64}, {152,216,62}, {155,217,60},
    {157,217,59}, {160,218,57}, {162,218,55}, {165,219,54}, {168,219,52}, {170,220,50}, {173,220,48}, {176,221,47},
    {178,221,45}, {181,222,43}, {184,222,41}, {186,222,40}, {189,223,38}, {192,223,37}, {194,223,35}, {197,224,33},
    {200,224,32}, {202,225,31}, {205,225,29}, {208,225,28}, {210,226,27}, {213,226,26}, {216,226,25}, {218,227,25},
    {221,227,24}, {223,227,24}, {226,228,24}, {229,228,25}, {231,228,25}, {234,229,26}, {236,229,27}, {239,229,28},
    {241,229,29}, {244,230,30}, {246,230,32}, {248,230,33}, {251,231,35}, {253,231,37},
};

/// 5x7 glyphs of ASCII 32..126 (lower-case descenders in an eighth row):
/// rows top to bottom, bit 4 the leftmost pixel.
constexpr std::uint8_t font[95][8] = {
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // space
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04, 0x00},  // !
    {0x0A, 0x0A, 0x0A, 0x00, 0x00, 0x00, 0x00, 0x00},  // "
    {0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A, 0x00},  // #
    {0x04, 0x0F, 0x14, 0x0E, 0x05, 0x1E, 0x04, 0x00},  // $
    {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03, 0x00},  // %
    {0x0C, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0D, 0x00},  // &
    {0x0C, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00},  // quote
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02, 0x00},  // (
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08, 0x00},  // )
    {0x00, 0x04, 0x15, 0x0E, 0x15, 0x04, 0x00, 0x00},  // *
    {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00, 0x00},  // +
    {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08, 0x00},  // ,
    {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00, 0x00},  // -
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C, 0x00},  // .
    {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00, 0x00},  // /
    {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E, 0x00},  // 0
    {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E, 0x00},  // 1
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F, 0x00},  // 2
    {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E, 0x00},  // 3
    {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02, 0x00},  // 4
    {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E, 0x00},  // 5
    {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E, 0x00},  // 6
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08, 0x00},  // 7
    {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E, 0x00},  // 8
    {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C, 0x00},  // 9
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00, 0x00},  // :
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x04, 0x08, 0x00},  // ;
    {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02, 0x00},  // <
    {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00, 0x00},  // =
    {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08, 0x00},  // >
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04, 0x00},  // ?
    {0x0E, 0x11, 0x01, 0x0D, 0x15, 0x15, 0x0E, 0x00},  // @
    {0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x00},  // A
    {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E, 0x00},  // B
    {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E, 0x00},  // C
    {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C, 0x00},  // D
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F, 0x00},  // E
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10, 0x00},  // F
    {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F, 0x00},  // G
    {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11, 0x00},  // H
    {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E, 0x00},  // I
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C, 0x00},  // J
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11, 0x00},  // K
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F, 0x00},  // L
    {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11, 0x00},  // M
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11, 0x00},  // N
    {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E, 0x00},  // O
    {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10, 0x00},  // P
    {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D, 0x00},  // Q
    {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11, 0x00},  // R
    {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E, 0x00},  // S
    {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x00},  // T
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E, 0x00},  // U
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04, 0x00},  // V
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A, 0x00},  // W
    {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11, 0x00},  // X
    {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0x00},  // Y
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F, 0x00},  // Z
    {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E, 0x00},  // [
    {0x00, 0x10, 0x08, 0x04, 0x02, 0x01, 0x00, 0x00},  // backslash
    {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E, 0x00},  // ]
    {0x04, 0x0A, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00},  // ^
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F, 0x00},  // _
    {0x08, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00},  // `
    {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F, 0x00},  // a
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E, 0x00},  // b
    {0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E, 0x00},  // c
    {0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F, 0x00},  // d
    {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E, 0x00},  // e
    {0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08, 0x00},  // f
    {0x00, 0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E},  // g
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11, 0x00},  // h
    {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E, 0x00},  // i
    {0x02, 0x00, 0x06, 0x02, 0x02, 0x02, 0x12, 0x0C},  // j
    {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12, 0x00},  // k
    {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E, 0x00},  // l
    {0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11, 0x00},  // m
    {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11, 0x00},  // n
    {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E, 0x00},  // o
    {0x00, 0x00, 0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10},  // p
    {0x00, 0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x01},  // q
    {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10, 0x00},  // r
    {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E, 0x00},  // s
    {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06, 0x00},  // t
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D, 0x00},  // u
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04, 0x00},  // v
    {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A, 0x00},  // w
    {0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x00},  // x
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x0E},  // y
    {0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F, 0x00},  // z
    {0x02, 0x04, 0x04, 0x08, 0x04, 0x04, 0x02, 0x00},  // {
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x00},  // |
    {0x08, 0x04, 0x04, 0x02, 0x04, 0x04, 0x08, 0x00},  // }
    {0x00, 0x00, 0x08, 0x15, 0x02, 0x00, 0x00, 0x00},  // ~
};

constexpr long text_scale = 2;                     // picture pixels per font pixel
constexpr long advance = 6 * text_scale;          // 5 columns and a space
constexpr long cap_height = 7 * text_scale;       // digits and capitals
constexpr long line_height = 9 * text_scale;      // descenders and a space
constexpr long margin = 10, gap = 4, tick = 5;

long text_width(std::string_view text) {
  return text.empty() ? 0 : static_cast<long>(text.size()) * advance - text_scale;
}

class Canvas {
 public:
  Canvas(long width, long height)
      : width_(width), height_(height), rgb_(static_cast<std::size_t>(3 * width * height), 255) {}

  void fill(long x, long y, long w, long h, Colour colour) {
    for (long row = std::max(y, 0L); row < std::min(y + h, height_); ++row)
      for (long col = std::max(x, 0L); col < std::min(x + w, width_); ++col)
        std::copy(colour.begin(), colour.end(), rgb_.begin() + 3 * (row * width_ + col));
  }

  void frame(long x, long y, long w, long h) {  // one pixel wide, around (x, y, w, h)
    fill(x - 1, y - 1, w + 2, 1, black);
    fill(x - 1, y + h, w + 2, 1, black);
    fill(x - 1, y, 1, h, black);
    fill(x + w, y, 1, h, black);
  }

  /// Black text; horizontal with its top-left corner at (x, y), or vertical
  /// (turned a quarter left, read upwards) with its bottom-left corner there.
  void text(long x, long y, std::string_view text, bool vertical = false) {
    for (std::size_t k = 0; k < text.size(); ++k) {
      const auto code = static_cast<unsigned char>(text[k]);
      const std::uint8_t* glyph = font[code >= 32 && code < 127 ? code - 32 : '?' - 32];
      const long along = static_cast<long>(k) * advance;
      for (long row = 0; row < 8; ++row)
        for (long col = 0; col < 5; ++col) {
          if (!(glyph[row] & (0x10 >> col))) continue;
          if (vertical)
            fill(x + row * text_scale, y - along - (col + 1) * text_scale, text_scale, text_scale, black);
          else
            fill(x + along + col * text_scale, y + row * text_scale, text_scale, text_scale, black);
        }
    }
  }

  Picture take() && {
    return {static_cast<std::size_t>(width_), static_cast<std::size_t>(height_), std::move(rgb_)};
  }

 private:
  long width_, height_;
  std::vector<std::uint8_t> rgb_;
};

Colour colour_at(double t) {  // t in [0, 1]
  const auto index = static_cast<std::size_t>(std::clamp(t, 0.0, 1.0) * 255.0 + 0.5);
  return {viridis[index][0], viridis[index][1], viridis[index][2]};
}

/// "1e6" and "1.5e-5" rather than printf's "1e+06", "1.5e-05".
std::string short_exponent(const std::string& text) {
  const auto e = text.find('e');
  if (e == std::string::npos) return text;
  return text.substr(0, e) + "e" + std::to_string(std::stoi(text.substr(e + 1)));
}

/// A tick label of `value` on ticks `step` apart: as many decimals as the
/// step needs, exponent form for very large or small values.
std::string tick_label(double value, double step) {
  const double size = std::abs(value);
  if (size < 1e-9 * step) return "0";
  if (size >= 1e-3 && size < 1e5) {
    const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
    return fmt::format("{:.{}f}", value, decimals);
  }
  return short_exponent(fmt::format("{:.3g}", value));
}

struct Ticks {
  std::vector<double> values;
  std::vector<std::string> labels;
};

/// About `most` ticks (at least two when the range allows) at 1, 2 or 5
/// times a power of ten in [a, b].
Ticks linear_ticks(double a, double b, long most) {
  const double lo = std::min(a, b), hi = std::max(a, b);
  Ticks ticks;
  if (!(hi > lo) || !std::isfinite(hi - lo)) return ticks;
  const double raw = (hi - lo) / static_cast<double>(std::max(most, 1L));
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  std::size_t m = 0;  // the step is steps[m] * power
  constexpr double steps[] = {1.0, 2.0, 5.0};
  while (m < 2 && steps[m] * power < raw) ++m;
  const auto first = [&](double step) { return static_cast<long>(std::ceil(lo / step - 1e-9)); };
  const auto count = [&](double step) { return static_cast<long>(std::floor(hi / step + 1e-9)) - first(step) + 1; };
  for (int finer = 0; finer < 3 && count(steps[m] * power) < 2; ++finer) {  // 5 -> 2 -> 1 -> 0.5 ...
    if (m == 0) power /= 10, m = 2;
    else --m;
  }
  const double step = steps[m] * power;
  for (long k = first(step), n = count(step); n > 0; ++k, --n) {
    const double value = static_cast<double>(k) * step;
    ticks.values.push_back(value);
    ticks.labels.push_back(tick_label(value, step));
  }
  return ticks;
}

/// Ticks of a log10 colour scale: 1, 2 and 5 times the powers of ten in
/// [lo, hi] when it spans three decades or less, else whole decades (every
/// second or more past seven); linear ticks when not even one tick fits.
Ticks log_ticks(double lo, double hi) {
  const double low = std::log10(lo), high = std::log10(hi);
  const bool fine = high - low <= 3;
  const long stride = fine ? 1 : std::max(1L, static_cast<long>(std::ceil((high - low + 1) / 7)));
  Ticks ticks;
  for (auto k = static_cast<long>(std::floor(low)); k <= static_cast<long>(std::ceil(high)); k += stride)
    for (const int mantissa : {1, 2, 5}) {
      if (mantissa > 1 && !fine) break;
      const double value = mantissa * std::pow(10.0, static_cast<double>(k));
      if (value < lo * (1 - 1e-9) || value > hi * (1 + 1e-9)) continue;
      ticks.values.push_back(value);
      ticks.labels.push_back(k >= -3 && k <= 4 ? tick_label(value, std::pow(10.0, static_cast<double>(std::min(k, 0L))))
                                               : fmt::format("{}e{}", mantissa, k));
    }
  if (ticks.values.size() < 2) return linear_ticks(lo, hi, 4);
  return ticks;
}

long widest(const Ticks& ticks) {
  long width = 0;
  for (const auto& label : ticks.labels) width = std::max(width, text_width(label));
  return width;
}

}  // namespace

Picture render_field(std::size_t width, std::size_t height, std::span<const double> values, const FieldStyle& style) {
  if (width == 0 || height == 0 || values.size() != width * height)
    fail("render_field", fmt::format("{} values for a {} x {} field", values.size(), width, height));
  if (!(style.lo < style.hi)) fail("render_field", fmt::format("colour range [{}, {}]: need lo < hi", style.lo, style.hi));
  if (style.log_scale && !(style.lo > 0))
    fail("render_field", fmt::format("colour range [{}, {}]: a log scale needs lo > 0", style.lo, style.hi));
  const auto scaled = [&](double value) { return style.log_scale ? std::log10(value) : value; };
  const double low = scaled(style.lo), span = scaled(style.hi) - low;
  const auto fraction = [&](double value) {  // of the colour range
    if (style.log_scale && !(value > 0)) return 0.0;
    return (scaled(value) - low) / span;
  };

  const std::size_t longer = std::max(width, height);
  const auto cell = static_cast<long>(style.pixels_per_cell > 0 ? style.pixels_per_cell
                                                                : std::max<std::size_t>(1, (384 + longer - 1) / longer));
  const long plot_w = cell * static_cast<long>(width), plot_h = cell * static_cast<long>(height);
  const auto [x0, x1] = style.x_range;
  const auto [y0, y1] = style.y_range;
  const Ticks x_ticks = linear_ticks(x0, x1, std::max(3L, plot_w / 80));
  const Ticks y_ticks = linear_ticks(y0, y1, std::max(3L, plot_h / 60));
  const Ticks c_ticks = style.log_scale ? log_ticks(style.lo, style.hi) : linear_ticks(style.lo, style.hi, std::max(3L, plot_h / 60));

  // Layout, left to right: y label, y tick labels, plot, colour bar, its tick labels, its label.
  const long left = margin + (style.y_label.empty() ? 0 : line_height + gap) + widest(y_ticks) + gap + tick + 1;
  const long top = margin + (style.title.empty() ? 0 : line_height + 2 * gap);
  const long bar_x = left + plot_w + 1 + 5 * gap, bar_w = 16;
  const long bar_labels_x = bar_x + bar_w + 1 + tick + gap;
  const long bar_label_x = bar_labels_x + widest(c_ticks) + 3 * gap;
  long total_w = bar_label_x + (style.colorbar_label.empty() ? 0 : line_height) + margin;
  total_w = std::max(total_w, left + text_width(style.title) + margin);
  const long total_h = top + plot_h + 1 + tick + gap + line_height + (style.x_label.empty() ? 0 : gap + line_height) + margin;
  Canvas canvas(total_w, total_h);

  for (long row = 0; row < plot_h; ++row) {
    const std::size_t j = height - 1 - static_cast<std::size_t>(row / cell);  // row 0 of the field at the bottom
    for (long col = 0; col < plot_w; ++col) {
      const double value = values[j * width + static_cast<std::size_t>(col / cell)];
      canvas.fill(left + col, top + row, 1, 1, std::isnan(value) ? masked : colour_at(fraction(value)));
    }
  }
  canvas.frame(left, top, plot_w, plot_h);
  for (long row = 0; row < plot_h; ++row)
    canvas.fill(bar_x, top + row, bar_w, 1, colour_at(1.0 - (static_cast<double>(row) + 0.5) / static_cast<double>(plot_h)));
  canvas.frame(bar_x, top, bar_w, plot_h);

  // Pixel of a fraction f along a length, f = 0 at `start`, clamped inside.
  const auto at = [](long start, long length, double f) {
    return start + std::clamp(static_cast<long>(std::floor(f * static_cast<double>(length))), 0L, length - 1);
  };
  for (std::size_t t = 0; t < x_ticks.values.size(); ++t) {
    const long x = at(left, plot_w, (x_ticks.values[t] - x0) / (x1 - x0));
    canvas.fill(x, top + plot_h + 1, 1, tick, black);
    const long w = text_width(x_ticks.labels[t]);
    canvas.text(std::clamp(x - w / 2, 0L, total_w - w), top + plot_h + 1 + tick + gap, x_ticks.labels[t]);
  }
  for (std::size_t t = 0; t < y_ticks.values.size(); ++t) {
    const long y = at(top, plot_h, 1.0 - (y_ticks.values[t] - y0) / (y1 - y0));
    canvas.fill(left - 1 - tick, y, tick, 1, black);
    canvas.text(left - 1 - tick - gap - text_width(y_ticks.labels[t]), y - cap_height / 2, y_ticks.labels[t]);
  }
  for (std::size_t t = 0; t < c_ticks.values.size(); ++t) {
    const long y = at(top, plot_h, 1.0 - fraction(c_ticks.values[t]));
    canvas.fill(bar_x + bar_w + 1, y, tick, 1, black);
    canvas.text(bar_labels_x, y - cap_height / 2, c_ticks.labels[t]);
  }
  if (!style.title.empty()) canvas.text(left + std::max(0L, (plot_w - text_width(style.title)) / 2), margin, style.title);
  if (!style.x_label.empty())
    canvas.text(left + (plot_w - text_width(style.x_label)) / 2, top + plot_h + 1 + tick + gap + line_height + gap,
                style.x_label);
  if (!style.y_label.empty())
    canvas.text(margin, top + (plot_h + text_width(style.y_label)) / 2, style.y_label, true);
  if (!style.colorbar_label.empty())
    canvas.text(bar_label_x, top + (plot_h + text_width(style.colorbar_label)) / 2, style.colorbar_label, true);
  return std::move(canvas).take();
}

Picture side_by_side(std::span<const Picture> pictures) {
  constexpr std::size_t between = 16;
  Picture result;
  for (const Picture& picture : pictures) {
    result.width += (result.width > 0 ? between : 0) + picture.width;
    result.height = std::max(result.height, picture.height);
  }
  result.rgb.assign(3 * result.width * result.height, 255);
  std::size_t x = 0;
  for (const Picture& picture : pictures) {
    for (std::size_t row = 0; row < picture.height; ++row)
      std::copy_n(picture.rgb.begin() + static_cast<std::ptrdiff_t>(3 * row * picture.width), 3 * picture.width,
                  result.rgb.begin() + static_cast<std::ptrdiff_t>(3 * (row * result.width + x)));
    x += picture.width + between;
  }
  return result;
}

std::string encode_png(const Picture& picture) {
  if (picture.width == 0 || picture.height == 0 || picture.rgb.size() != 3 * picture.width * picture.height ||
      picture.width > 0x7fffffffu / 3 || picture.height > 0x7fffffffu)
    fail("encode_png", fmt::format("{} bytes for a {} x {} RGB picture", picture.rgb.size(), picture.width, picture.height));
  // libpng's simplified API: errors come back as a message, no setjmp here.
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(picture.width);
  image.height = static_cast<png_uint_32>(picture.height);
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = PNG_IMAGE_PNG_SIZE_MAX(image);
  std::string bytes(size, '\0');
  const bool done = png_image_write_to_memory(&image, bytes.data(), &size, 0, picture.rgb.data(), 0, nullptr) != 0;
  const std::string message = image.message;
  png_image_free(&image);
  if (!done) fail("encode_png", fmt::format("libpng: {}", message));
  bytes.resize(size);
  return bytes;
}

void write_png(const std::filesystem::path& path, const Picture& picture) { write_file(path, encode_png(picture)); }

void write_png_field(const std::filesystem::path& path, std::size_t width, std::size_t height,
                     std::span<const double> values, const FieldStyle& style) {
  write_png(path, render_field(width, height, values, style));
}

}  // namespace domex::apps

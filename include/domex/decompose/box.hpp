#pragma once
// Axis-aligned boxes and points in the coordinates a decomposition cuts.

#include <array>

namespace domex {

using Point = std::array<double, 3>;

/// [lo, hi) on each axis.
struct Box {
  Point lo{0, 0, 0};
  Point hi{1, 1, 1};
  [[nodiscard]] bool contains(const Point& p) const noexcept {
    for (int a = 0; a < 3; ++a)
      if (!(p[a] >= lo[a] && p[a] < hi[a])) return false;
    return true;
  }
  [[nodiscard]] double extent(int axis) const noexcept { return hi[axis] - lo[axis]; }
};

/// The coordinates a decomposition cuts: Cartesian (x, y, z), or cylindrical
/// (r, phi, z) for rings and discs, phi in [0, 2 pi) and periodic.
enum class Geometry { cartesian, cylindrical };

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Axis-aligned boxes and points in the coordinates a decomposition cuts.

#include <domex/comm/scratch.hpp>

#include <array>
#include <concepts>
#include <functional>
#include <span>
#include <vector>

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

/// How a position is read from a user's particle: a member pointer
/// (`&Particle::position`, a Point member) or any callable returning a Point,
/// as Cabana slices and FDPS's getPos() let codes keep their own structs.
template <class Projection, class Particle>
concept PositionOf = requires(const Projection& projection, const Particle& particle) {
  { std::invoke(projection, particle) } -> std::convertible_to<Point>;
};

/// The positions of `particles` read through `position`, into `out` (reused:
/// no allocation once it has grown).
template <class Particle, PositionOf<Particle> Projection>
void gather_positions(std::span<const Particle> particles, const Projection& position, std::vector<Point>& out) {
  out.resize(particles.size());
  for (std::size_t i = 0; i < particles.size(); ++i) out[i] = std::invoke(position, particles[i]);
}

namespace detail {
/// gather_positions() into a per-thread array (for constructors that take
/// the user's particles and delegate to the span-of-Points form).
template <class Particle, PositionOf<Particle> Projection>
const std::vector<Point>& positions_of(std::span<const Particle> particles, const Projection& position) {
  struct Positions;
  auto& positions = detail::scratch<std::vector<Point>, Positions>();
  gather_positions(particles, position, positions);
  return positions;
}
}  // namespace detail

}  // namespace domex

#pragma once
// Multisection domain decomposition (as in FDPS): an nx x ny x nz grid of
// domains whose boundaries come from sampled particle coordinates, sampled in
// proportion to measured cost so that domains equalise compute time.

#include <domex/comm/comm.hpp>
#include <domex/decompose/box.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace domex {

struct MultisectionOptions {
  /// Domains per axis, product = P; 0 entries are chosen (MPI_Dims_create,
  /// largest count on x).
  std::array<int, 3> divisions{0, 0, 0};
  /// Periodic axes. In cylindrical geometry phi (axis 1) is always periodic.
  std::array<bool, 3> periodic{false, false, false};
  Geometry geometry = Geometry::cartesian;
  /// Total samples gathered over all ranks per rebalance (each rank sends its
  /// share in proportion to its cost). If the ranks hold fewer particles,
  /// all of them are used and the cut is exact.
  std::size_t samples = 65536;
  /// 0: new boundaries as measured; s in (0, 1): each boundary moves only
  /// (1 - s) of the way, damping oscillation between steps.
  double smoothing = 0.0;
  std::uint64_t seed = 12345;  ///< sampling seed (printed by tests)
  /// Neighbours are the domains within this distance of a rank's box (in the
  /// geometry's coordinates; 0: those that touch it). A particle that moves
  /// less than this from inside its box lands in a neighbour's domain, so
  /// migration never needs more than the neighbour list.
  double neighbour_margin = 0.0;
};

/// The decomposition every rank holds identically: boundaries computed by all
/// ranks from the same gathered samples (no broadcast from a root).
class Multisection {
 public:
  /// Collective. Starts with equal-volume domains of `domain` (in the
  /// geometry's coordinates: (r, phi, z) for cylindrical, phi in [0, 2 pi)).
  Multisection(const Comm& comm, Box domain, MultisectionOptions options = {});

  /// Collective: new boundaries from this rank's particles at `positions`
  /// (Cartesian x, y, z always; converted for cylindrical) with optional cost
  /// `weights` per particle (empty: cost 1 each). Cost O(S log S) for S samples.
  void rebalance(std::span<const Point> positions, std::span<const double> weights = {});

  /// The rank owning a position (Cartesian x, y, z), O(log n) per axis.
  /// Periodic axes wrap; throws domex::Error for NaN, or outside the domain
  /// on a non-periodic axis (naming the position).
  [[nodiscard]] int owner(const Point& position) const;
  /// Same, without the checks: -1 if NaN or outside a non-periodic axis.
  [[nodiscard]] int try_owner(const Point& position) const noexcept;

  /// Box of a rank's domain in the geometry's coordinates.
  [[nodiscard]] Box box(int rank) const;
  /// Ranks whose domains touch or overlap `rank`'s (periodic wrap included),
  /// ascending, without `rank` itself.
  [[nodiscard]] const std::vector<int>& neighbours() const noexcept { return neighbours_; }
  [[nodiscard]] std::vector<int> neighbours_of(int rank) const;
  [[nodiscard]] std::array<int, 3> divisions() const noexcept { return divisions_; }
  [[nodiscard]] const Box& domain() const noexcept { return domain_; }
  [[nodiscard]] Geometry geometry() const noexcept { return options_.geometry; }
  /// Coordinates that the decomposition cuts for a Cartesian position.
  [[nodiscard]] Point coordinates(const Point& position) const noexcept;
  /// Wraps periodic axes into the domain.
  [[nodiscard]] Point wrap(const Point& coordinates) const noexcept;

 private:
  void compute_neighbours();
  const Comm* comm_;
  Box domain_;
  MultisectionOptions options_;
  std::array<int, 3> divisions_{};
  // x cuts: nx+1; y cuts per x slab: nx * (ny+1); z cuts per column: nx*ny*(nz+1).
  std::vector<double> x_cuts_, y_cuts_, z_cuts_;
  std::vector<int> neighbours_;
};

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-mhd solver: 3-D resistive MHD on a block-distributed Cartesian grid
// with deep halos (k ghost layers, k steps per exchange).
//
// Scheme: two-step Lax-Wendroff (Richtmyer). Stage 1 puts the half-step state
// on cell corners from the 8 surrounding cells, stage 2 updates cells from
// the 8 surrounding corners, plus explicit diffusion on cells at time n. The
// stencil is the 3x3x3 box, so k ghost layers allow k steps; every cell is
// computed by the same operations from the same inputs on any number of
// ranks, dims and depth, so results are bitwise identical to a 1-rank run.

#include <array>
#include <cstdint>
#include <domex/comm/profile.hpp>
#include <domex/halo/cartesian.hpp>
#include <domex/halo/halo.hpp>
#include <memory>
#include <optional>
#include <vector>

#include "config.hpp"

namespace domex::mhd {

/// Index of each field in Solver::field(); b = B - B_dipole.
namespace field {
inline constexpr std::size_t rho = 0, vx = 1, vy = 2, vz = 3, p = 4, bx = 5, by = 6, bz = 7, count = 8;
}  // namespace field

using State = std::array<double, field::count>;

class Solver {
 public:
  /// Collective over `comm`. Builds the grid, the deep halo (depth 0: measures
  /// the compute time per cell, reduces it with MPI_MAX and asks
  /// domex::choose_depth), the initial state and dt. Expects a validated config.
  Solver(const Comm& comm, const Config& config);

  /// One time step. Collective every `depth()` steps, when it first exchanges
  /// the ghosts (after checking the state, see check_state()).
  void step();
  /// Collective: throws domex::Error on every rank if a rank has seen a
  /// non-finite or non-positive density or pressure in an owned cell, naming
  /// the first such step and global cell.
  void check_state() const;
  /// Collective: total mass in the box (sum over the owned cells).
  [[nodiscard]] double mass() const;
  /// Collective: sum over owned cells of a 64-bit hash of (global index, bits
  /// of the 8 fields), mod 2^64. Order-independent, so equal on every np iff
  /// the states agree (up to hash collisions).
  [[nodiscard]] std::uint64_t checksum() const;

  [[nodiscard]] const Config& config() const noexcept { return config_; }
  [[nodiscard]] Problem problem() const noexcept { return problem_; }
  [[nodiscard]] const CartesianGrid& grid() const noexcept { return *grid_; }
  [[nodiscard]] const HaloPlan& halo() const noexcept { return *halo_; }
  [[nodiscard]] int depth() const noexcept { return halo_->depth(); }
  [[nodiscard]] double dt() const noexcept { return dt_; }
  [[nodiscard]] long steps() const noexcept { return steps_; }
  [[nodiscard]] double time() const noexcept { return static_cast<double>(steps_) * dt_; }
  [[nodiscard]] long exchanges() const noexcept { return exchanges_; }
  /// Phases "compute", "halo" (exchange and the state check), "boundary".
  [[nodiscard]] Profile& profile() noexcept { return profile_; }
  [[nodiscard]] const Profile& profile() const noexcept { return profile_; }

  /// Restart (read_checkpoint): the owned cells of every field from `fields`
  /// (on the halo layout; ghosts ignored), the step count and dt. The next
  /// step exchanges the ghosts first, so the run goes on bitwise as if it had
  /// never stopped, whatever np, dims or depth. Local.
  void restore(long steps, double dt, const std::array<std::vector<double>, field::count>& fields);

  /// Field `f` (field::rho ...) on the halo layout: halo().index(i, j, k).
  [[nodiscard]] const std::vector<double>& field(std::size_t f) const noexcept { return u_[f]; }
  /// The dipole field B_dipole component `axis` on the halo layout.
  [[nodiscard]] const std::vector<double>& dipole(int axis) const noexcept { return dipole_cell_[axis]; }
  /// Cell size per axis.
  [[nodiscard]] std::array<double, 3> spacing() const noexcept { return h_; }
  /// Centre of global cell `index` along `axis`.
  [[nodiscard]] double centre(int axis, long index) const noexcept;
  /// Row-major (x fastest) index in the global grid of owned cell (i, j, k).
  [[nodiscard]] std::size_t global_index(std::size_t i, std::size_t j, std::size_t k) const noexcept;

 private:
  using Fields = std::array<std::vector<double>, field::count>;
  using Vectors = std::array<std::vector<double>, 3>;

 public:
  /// Memory per cell (ghosts included): three sets of fields and four
  /// vectors, plus a margin for the halo buffers and index lists.
  static constexpr double bytes_per_cell = (3.0 * field::count + 4 * 3 + 4) * sizeof(double);

 private:
  struct Box {
    std::array<long, 3> lo, hi;
  };

  void build(int depth);
  [[nodiscard]] State initial(const std::array<double, 3>& x) const;
  [[nodiscard]] State inflow() const;
  void exchange();
  void update(int layers);
  void apply_boundary();
  void scan_owned();
  [[nodiscard]] Box region(int layers) const;

  Config config_;
  Problem problem_;
  std::unique_ptr<CartesianGrid> grid_;  // heap: HaloPlan keeps its address
  std::optional<HaloPlan> halo_;
  std::array<double, 3> h_{}, lower_{};
  double dt_ = 0;
  long steps_ = 0, exchanges_ = 0;
  int since_exchange_ = 0;

  Fields u_, next_, corner_;
  Vectors dipole_cell_, gravity_cell_, dipole_corner_, gravity_corner_;
  std::vector<std::size_t> inner_cells_;                          // reset to the inner state every step
  std::vector<std::pair<std::size_t, std::size_t>> copy_ghosts_;  // outflow: (ghost, clamped cell)
  std::vector<std::size_t> inflow_ghosts_;                        // x < x_min: solar wind

  long long first_bad_ = -1;            // step * global cells + global cell index; -1: none
  std::array<double, 2> bad_values_{};  // rho, p there
  Profile profile_;
};

}  // namespace domex::mhd

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The moving-particle semi-implicit method (Koshizuka & Oka 1996, Nucl. Sci.
// Eng. 123, 421) on domex, distributed: particles migrate to the rank owning
// their bucket every step, ghosts within r_e + skin come from domex::GhostPlan,
// and the pressure Poisson equation is solved by conjugate gradients
// (preconditioned by a modified incomplete Cholesky factor of each rank's
// rows, started from the last step's pressure) with one ghost update of the
// search direction and two allreduces per iteration, never gathered.
//
// One step (the order of Koshizuka's sample code):
//   rebalance, migrate (positions wrapped in z), sort owned by id, ghost
//   build, count exchange (timed), full neighbour lists (domex::NeighborList,
//   r_e of the Laplacian + skin) put in id order
//   explicit: v* = v + dt (g + nu lap v); x* = x + dt v*      (fluid)
//   collision: approaching pairs closer than 0.5 l0 bounce (restitution 0.2)
//   n*; free surface n* < beta n0 (p = 0); PPE  -lap p / rho + C p / dt^2
//       = gamma (n* - n0) / (n0 dt^2) on the other fluid and wall particles
//   p < 0 -> 0; v += -dt grad p / rho, x += -dt^2 grad p / rho (min-pressure form)
//
// Determinism: owned particles are kept in id order and every neighbour sum
// runs over the neighbours in id order (the library's lists, in bin order,
// are reordered by id after each build), so a step on a given set of owned
// particles is bitwise the same whatever their previous ranks or order
// (restart at the same np is bitwise: the checkpoint holds CG's first
// guess); across np the preconditioner's blocks (one per rank) and the
// allreduce order of CG's dot products differ (agreement to the CG tolerance).

#include <domex/comm/comm.hpp>
#include <domex/comm/profile.hpp>
#include <domex/decompose/buckets.hpp>
#include <domex/decompose/multisection.hpp>
#include <domex/ghost/ghost.hpp>
#include <domex/neighbor/neighbor.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "config.hpp"

namespace domex::mps {

/// Particle kinds: fluid moves; wall is fixed but in the Poisson equation;
/// dummy is fixed, only completes the number density of the walls.
enum Kind : std::int32_t { fluid = 0, wall = 1, dummy = 2 };

/// Every particle, sorted by id (gathered on every rank: output, tests, checkpoints).
struct State {
  std::vector<std::int64_t> id;
  std::vector<std::int32_t> kind;
  std::vector<Point> x, v;
  std::vector<double> p;
};

/// The number of ranks a rank exchanged counts with in one step, and the
/// time of that exchange (barrier first, as the study times it).
struct CountExchangeSample {
  double seconds = 0;
  int partners = 0;
};

class Solver {
 public:
  /// Collective: the dam break's particles at t = 0 (step 0), spread over the ranks.
  Solver(Comm& comm, const Config& config);
  ~Solver();
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  /// Collective: one time step. Throws domex::Error on every rank if a
  /// particle leaves the box, CG does not converge, or a particle moved
  /// more than half the skin in one step.
  void step();

  [[nodiscard]] long steps() const noexcept { return step_; }
  [[nodiscard]] double dt() const noexcept { return dt_; }
  [[nodiscard]] double time() const noexcept { return static_cast<double>(step_) * dt_; }
  /// T = t sqrt(2 g / a).
  [[nodiscard]] double dimensionless_time() const noexcept;
  /// Steps until T reaches config.end_time (or config.steps if set).
  [[nodiscard]] long total_steps() const noexcept;
  [[nodiscard]] double spacing() const noexcept { return l0_; }
  [[nodiscard]] const Config& config() const noexcept { return config_; }
  [[nodiscard]] Comm& comm() const noexcept { return comm_; }

  /// Collective: Z = (max x of the fluid particles) / a, x from the back wall.
  [[nodiscard]] double front() const;
  /// Collective: particles on all ranks (of each kind: fluid, wall, dummy).
  [[nodiscard]] std::array<long, 3> counts() const;
  /// Collective: every particle on every rank, sorted by id.
  [[nodiscard]] State gather() const;
  /// Collective: FNV-1a of the gathered ids, positions and velocities.
  [[nodiscard]] std::uint64_t checksum() const;

  /// Owned particles (for tests): ids, in id order after a step.
  [[nodiscard]] std::span<const std::int64_t> ids() const noexcept { return {id_.data(), owned_}; }
  /// Owned particles (for output), in the order of ids().
  [[nodiscard]] std::span<const Point> positions() const noexcept { return {x_.data(), owned_}; }
  [[nodiscard]] std::span<const Point> velocities() const noexcept { return {v_.data(), owned_}; }
  [[nodiscard]] std::span<const std::int32_t> kinds() const noexcept { return {kind_.data(), owned_}; }
  /// Ghost entries on this rank at the last step (copies within r_e + skin of its domain).
  [[nodiscard]] std::size_t ghost_count() const noexcept { return x_.size() - owned_; }
  /// The pressure of owned particle i at the last step (0 before the first).
  [[nodiscard]] double pressure(std::size_t i) const noexcept { return i < p_.size() ? p_[i] : 0.0; }

  /// The pressure Poisson equation of the last step on this rank's rows, one
  /// per inner owned particle (tests: a direct solve of the same system).
  struct PoissonRows {
    std::vector<std::int64_t> id;      ///< the particle of each row
    std::vector<std::size_t> first;    ///< row k's entries: [first[k], first[k + 1])
    std::vector<std::int64_t> column;  ///< the particle of each entry (the row's own: the diagonal)
    std::vector<double> value;
    std::vector<double> rhs, solution;  ///< b and CG's p (before negative pressures are clamped) per row
  };
  [[nodiscard]] PoissonRows poisson_rows() const;

  /// Collective: writes every particle (sorted by id, with CG's last
  /// solution, the next step's first guess) and the step to `path` (all or
  /// nothing); readable at any np.
  void write_checkpoint(const std::filesystem::path& path) const;
  /// Collective: the state of a checkpoint written by a run of the same
  /// width, resolution and physics. Throws domex::Error on every rank naming
  /// the file and what does not match.
  void read_checkpoint(const std::filesystem::path& path);

  [[nodiscard]] Profile& profile() noexcept { return profile_; }
  /// CG iterations of the last step and of all steps of this run.
  [[nodiscard]] long last_cg_iterations() const noexcept { return last_cg_iterations_; }
  [[nodiscard]] long total_cg_iterations() const noexcept { return total_cg_iterations_; }
  [[nodiscard]] long solved_steps() const noexcept { return solved_steps_; }
  [[nodiscard]] double last_cg_residual() const noexcept { return last_cg_residual_; }
  /// This rank's count-exchange samples, one per step of this run.
  [[nodiscard]] const std::vector<CountExchangeSample>& count_exchange() const noexcept { return count_samples_; }
  /// The ranks this rank sent counts to at the last step (its ghost plan's
  /// destinations but itself), ascending; none before the first step.
  [[nodiscard]] std::vector<int> count_partners() const;

 private:
  void rebalance_and_migrate();
  void build_ghosts_and_neighbours();
  void order_neighbours_by_id();
  void exchange_counts();
  void explicit_step();
  void collide();
  void solve_pressure();
  void correct();
  void assemble_poisson();
  long conjugate_gradients();
  template <class... Fields>
  void update(Fields&&... fields);

  Comm& comm_;
  Config config_;
  double l0_, dt_, re_n_, re_lap_, n0_, n0_lap_, lambda_;
  long step_ = 0;
  Box box_;
  std::unique_ptr<BucketDecomposition> buckets_;
  std::unique_ptr<Multisection> multisection_;
  std::optional<GhostPlan> ghosts_;
  Profile profile_;

  // Owned particles, then ghosts (after the build).
  std::vector<Point> x_, v_;
  std::vector<std::int64_t> id_;
  std::vector<std::int32_t> kind_;
  std::size_t owned_ = 0;
  /// Full lists within r_e (Laplacian) + skin of the build (in bin order);
  /// also the build's positions for the skin check.
  std::optional<NeighborList> list_;
  // The same neighbours of each owned particle in id order (CSR, offsets as
  // list_'s), and the scratch of the reordering.
  std::vector<std::size_t> first_;
  std::vector<std::uint32_t> neighbour_;
  struct Reorder {
    std::vector<std::uint32_t> ghosts;       ///< ghost entries in id order
    std::vector<std::uint32_t> ghost_rank;   ///< per ghost entry: its place in `ghosts`
    std::vector<std::size_t> owned_first;    ///< per owned particle: its owned neighbours in id order (CSR)
    std::vector<std::uint32_t> owned;
    std::vector<std::size_t> fill;
    std::vector<std::uint32_t> ranks;        ///< one list's ghost neighbours (their places in `ghosts`)
  } reorder_;
  // Pressure step.
  std::vector<double> n_, p_;
  std::vector<double> previous_;  ///< CG's solution of the last step per owned particle (the first guess); 0: none
  /// The Poisson equation of this step, a row per inner owned particle (see assemble_poisson()).
  struct PoissonMatrix {
    std::vector<std::uint32_t> row;                 ///< the owned particle of each row, ascending
    std::vector<std::size_t> first, upper, ghost;   ///< a row's entries: [first, upper) rows before it,
                                                    ///< [upper, ghost) rows after it, [ghost, first + 1) ghosts
    std::vector<std::uint32_t> column;              ///< a row number, or an owned + ghost index for ghosts
    std::vector<double> value, diagonal, rhs;
    std::vector<double> inverse;                    ///< the preconditioner's diagonal, inverted
    std::vector<double> solution;                   ///< CG's, before negative pressures are clamped
  } poisson_;
  std::vector<std::int8_t> inner_;  ///< 1: unknown of the PPE; 0: p = 0 (surface) or not solved (dummy)

  long last_cg_iterations_ = 0, total_cg_iterations_ = 0, solved_steps_ = 0;
  double last_cg_residual_ = 0;
  std::vector<CountExchangeSample> count_samples_;
  struct Window;  // MPI_Put count exchange
  std::unique_ptr<Window> window_;
};

}  // namespace domex::mps

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// LAMMPS's bench/in.lj on domex's public API: an fcc Lennard-Jones melt in a
// periodic cube, velocity Verlet (fix nve), neighbour lists rebuilt every few
// steps. One step, as LAMMPS's Verlet::run reads:
//
//   v += dt/2 f; x += dt v                                   Modify
//   at a rebuild: migrate(wrapped(x), v, id), sort by bins   Comm
//                 GhostPlan::rebuild                         Comm
//                 NeighborList::build                        Neigh
//   else:         GhostPlan::update(shifted(x))              Comm
//   f = LJ over the half list (newton on)                    Pair
//   GhostPlan::reverse_sum(f)                                Comm
//   v += dt/2 f                                              Modify
//
// With --overlap on (the default) the owned-owned pairs of half the atoms
// run while the positions travel, and of the other half while the ghosts'
// forces travel back. Nothing on this path is a global collective but the
// skin check (--neigh-check yes) and the thermo steps' sums.

#include <domex/comm/comm.hpp>
#include <domex/comm/profile.hpp>
#include <domex/decompose/multisection.hpp>
#include <domex/ghost/ghost.hpp>
#include <domex/neighbor/neighbor.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "config.hpp"
#include "lj.hpp"

namespace domex::md {

/// One thermo line (LAMMPS's default: Step Temp E_pair E_mol TotEng Press;
/// energies per atom, as thermo_modify norm yes in LJ units).
struct Thermo {
  long step = 0;
  double temperature = 0, e_pair = 0, e_mol = 0, total_energy = 0, pressure = 0;
};

/// Every atom sorted by id (tests, data files, checkpoints).
struct Atoms {
  std::vector<std::int64_t> id;
  std::vector<Point> x, v;
};

/// What the ghost communication of the run moved and cost (this rank).
struct CommStats {
  long rebuilds = 0;               ///< ghost and list builds in the loop (setup excluded)
  std::size_t sent = 0;            ///< ghost copies sent at the last build
  std::size_t update_bytes = 0;    ///< bytes an update(shifted(x)) sends to other ranks
  std::size_t reverse_bytes = 0;   ///< bytes a reverse_sum(f) sends to other ranks
};

class System {
 public:
  /// Collective: the fcc lattice (each rank creates the atoms in its box)
  /// with velocities at `temperature` (zero total momentum), or nothing
  /// where read_checkpoint() follows.
  System(Comm& comm, const Config& config, bool create = true);
  System(const System&) = delete;
  System& operator=(const System&) = delete;
  ~System();

  /// Collective: the state of a checkpoint (same np: each rank its own atoms
  /// in their order, so that the run goes on bitwise; another np: atoms to
  /// their owners, lists built anew). Throws domex::Error (on every rank) for
  /// a file that does not fit this run.
  void read_checkpoint(const std::filesystem::path& path);
  /// Collective: every atom's id, position, velocity and position at the
  /// last list build, per rank in its order.
  void write_checkpoint(const std::filesystem::path& path) const;
  /// Collective: the state as a LAMMPS data file (atom_style atomic, with
  /// Velocities; positions wrapped, image flags set), for read_data.
  void write_data(const std::filesystem::path& path) const;

  /// Collective: the first ghost and list build and forces of the run
  /// (LAMMPS's Verlet::setup); thermo is then that of the current step.
  void setup();
  /// Collective: one velocity-Verlet step.
  void step();
  /// Collective: the thermo line of the current step (its energy and virial
  /// were summed by the last force pass: setup() or a step() that ended on a
  /// thermo step, see thermo_due()).
  [[nodiscard]] Thermo thermo();
  /// Whether step `n` prints thermo (computes energy): --thermo N, the
  /// first and the last step.
  [[nodiscard]] bool thermo_due(long n) const noexcept;

  [[nodiscard]] long steps() const noexcept { return step_; }
  [[nodiscard]] long first_step() const noexcept { return first_step_; }
  [[nodiscard]] std::int64_t atoms() const noexcept { return total_; }
  [[nodiscard]] double side() const noexcept { return side_; }
  [[nodiscard]] Profile& profile() noexcept { return profile_; }
  [[nodiscard]] const GhostPlan& ghosts() const noexcept { return *ghosts_; }
  [[nodiscard]] const NeighborList& list() const noexcept { return list_; }
  [[nodiscard]] const CommStats& comm_stats() const noexcept { return stats_; }
  /// This rank's sums of the last force pass that computed energy.
  [[nodiscard]] const PairSums& pair_sums() const noexcept { return sums_; }
  /// Owned entries (local_count()), then ghosts: positions, velocities
  /// (owned only), forces after the last step, ids.
  [[nodiscard]] std::span<const Point> positions() const noexcept { return x_; }
  [[nodiscard]] std::span<const Point> forces() const noexcept { return f_; }
  [[nodiscard]] std::span<const std::int64_t> ids() const noexcept { return id_; }
  [[nodiscard]] std::size_t local_count() const noexcept { return v_.size(); }
  /// Collective: every atom, sorted by id.
  [[nodiscard]] Atoms gather() const;
  /// Collective: a hash of every atom's position and velocity bits, in id order.
  [[nodiscard]] std::uint64_t checksum() const;

  /// Moves atom `id` by `delta` (tests: forces off the lattice). Local.
  void displace(std::int64_t id, const Point& delta);

 private:
  /// A timer of `phase`; with --timer-sync a barrier first, its wait timed as Sync.
  [[nodiscard]] Profile::Timer timed(const char* phase);
  /// Migrates (positions wrapped), sorts where due, builds the ghost plan
  /// and the lists.
  void rebuild(bool migrate);
  /// Forces on the current positions: update (unless the build just sent
  /// them), the pairs, the reverse sum; energy and virial on thermo steps.
  void forces(bool update);
  void measure_bound();
  struct Bound;

  Comm& comm_;
  Config config_;
  double side_ = 0;
  std::int64_t total_ = 0;
  long step_ = 0, first_step_ = 0, next_sort_ = 0;
  Multisection domains_;
  std::unique_ptr<GhostPlan> ghosts_;
  NeighborList list_;
  std::vector<Point> x_, v_, f_;
  std::vector<std::int64_t> id_;
  std::vector<Point> restored_;  ///< a checkpoint of this np: the positions its lists were built from
  PairSums sums_;  ///< of the last force pass that computed energy
  Profile profile_;
  CommStats stats_;
  std::unique_ptr<Bound> bound_;
};

}  // namespace domex::md

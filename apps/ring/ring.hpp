// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The planetary ring: a central body of mass 1 at the origin, N equal ring
// particles with tree self-gravity and soft-sphere contacts (linear
// spring-dashpot in the normal direction, as FDPS's ring sample), advanced
// by kick-drift-kick leapfrog on a cylindrical (r, phi, z) multisection with
// neighbour-only migration.

#include <domex/comm/comm.hpp>
#include <domex/comm/profile.hpp>
#include <domex/decompose/multisection.hpp>
#include <domex/tree/tree.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "config.hpp"

namespace domex::ring {

/// This rank's particles (structure of arrays, one entry per particle).
struct Particles {
  std::vector<Point> position, velocity;
  std::vector<Point> acceleration;  ///< of the last force evaluation (the next half kick)
  std::vector<std::uint64_t> id;
  [[nodiscard]] std::size_t size() const noexcept { return id.size(); }
};

/// Collective: an order-independent hash of every particle's id, position
/// and velocity bits over all ranks: equal iff the states are bitwise equal
/// (up to hash collisions), whatever the distribution over ranks.
[[nodiscard]] std::uint64_t checksum(const Comm& comm, const Particles& particles);

struct Checkpoint;  // checkpoint.hpp

/// Energies summed over all ranks. `dissipated` is what the dashpots took
/// out since the start (tracked each step); total() + dissipated is
/// conserved up to the integration and tree errors.
struct Energy {
  double kinetic = 0, central = 0, self = 0, spring = 0, dissipated = 0;
  [[nodiscard]] double total() const noexcept { return kinetic + central + self + spring; }
  [[nodiscard]] double conserved() const noexcept { return total() + dissipated; }
};

/// The initial ring: particles on a jittered (r, phi) lattice (rows of equal
/// spacing, none in contact), Keplerian circular velocities plus dispersion.
/// A particle's state depends only on the seed and its id, not on the ranks.
class InitialRing {
 public:
  InitialRing(const Config& config, const Derived& derived);
  void state(std::uint64_t id, Point& position, Point& velocity) const;

 private:
  [[nodiscard]] double radius(std::size_t row) const noexcept;
  const Config& config_;
  const Derived& derived_;
  double row_width_ = 0;
  std::vector<std::uint64_t> row_start_;  // first id of each row, then N
};

class Ring {
 public:
  /// Collective. A new ring from `config` (each rank generates a share of
  /// the ids, then decomposes and migrates), or the state of the checkpoint
  /// folder config.restart (written by any number of ranks; config.particles
  /// must be its count). Computes the first forces.
  Ring(Comm& comm, const Config& config, const Derived& derived);
  /// Collective. The ring of a checkpoint read by read_checkpoint(): its
  /// step, particles and dissipated energy; its cuts if it has them, else
  /// the domains are rebalanced over the particles first.
  Ring(Comm& comm, const Config& config, const Derived& derived, Checkpoint checkpoint);
  /// Collective. A ring of the given particles (this rank's share, any
  /// distribution: they are decomposed and migrated first).
  Ring(Comm& comm, const Config& config, const Derived& derived, Particles initial);
  ~Ring();

  /// Collective: one kick-drift-kick step; rebalances every
  /// rebalance_every steps, migrates on every step that builds the lists.
  void step();
  /// Collective: the energies (one extra tree pass in fp64 for the
  /// self-gravity potential and the springs' energy).
  [[nodiscard]] Energy energy();
  /// Collective: an order-independent hash of every particle's id, position
  /// and velocity bits: equal iff the states are bitwise equal (up to hash
  /// collisions), whatever the distribution over ranks.
  [[nodiscard]] std::uint64_t checksum() const;
  /// Collective: the number of particles on all ranks.
  [[nodiscard]] std::uint64_t global_count() const;

  /// Collective: writes `folder` (meta.txt, the cuts, one file per rank),
  /// all or nothing (a temporary folder renamed at the end).
  void write_checkpoint(const std::filesystem::path& folder) const;
  /// Collective: the surface density seen from above on a width x width
  /// grid covering |x|, |y| <= extent (row 0 at -y, x fastest), summed over
  /// ranks on rank 0 (empty elsewhere): particles per cell.
  [[nodiscard]] std::vector<double> surface_density(int width, double extent) const;

  [[nodiscard]] long steps() const noexcept { return steps_; }
  [[nodiscard]] double time() const noexcept;
  [[nodiscard]] const Particles& particles() const noexcept { return particles_; }
  [[nodiscard]] Profile& profile() noexcept { return profile_; }
  [[nodiscard]] const TreeForce& tree() const noexcept { return *tree_; }
  [[nodiscard]] const Multisection& domains() const noexcept { return *domains_; }
  [[nodiscard]] const Derived& derived() const noexcept { return derived_; }
  /// Interactions per particle of the last force evaluation (this rank).
  [[nodiscard]] double interactions_per_particle() const noexcept { return tree_->stats().interactions_per_particle(); }
  /// Contacts (target-partner pairs) of the last force evaluation, this rank.
  [[nodiscard]] std::uint64_t contacts() const noexcept { return contacts_; }

 private:
  void setup();
  void setup_particles();
  void adopt(Checkpoint&& checkpoint);
  void start();
  void decompose();
  void migrate();
  void forces(bool track_dissipation);
  void sync();  // a barrier timed as "imbalance" before a phase
  /// The tree's OpenMP threads, which the integrator's loops share.
  [[nodiscard]] int threads() const noexcept { return tree_ ? tree_->threads() : 1; }

  Comm& comm_;
  Config config_;
  Derived derived_;
  Profile profile_;
  std::unique_ptr<Multisection> domains_;
  std::unique_ptr<TreeForce> tree_;
  Particles particles_;
  std::vector<double> masses_;
  long steps_ = 0;
  long start_step_ = 0;
  double dissipated_ = 0;  // this rank's share
  std::vector<double> restored_cuts_;  // from a checkpoint, until start() restores them
  std::uint64_t contacts_ = 0;
};

}  // namespace domex::ring

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Neighbour lists over a GhostPlan's entries (the owned particles, then the
// ghosts), as LAMMPS's Neighbor (half/bin/newton, full/bin), Cabana's
// LinkedCellList + VerletList and FDPS's short-range mode give them:
//
//   domex::NeighborList list({.cutoff = 2.5, .skin = 0.3});   // a half list
//   list.build(ghosts, x);                    // at every rebuild, after the ghost plan's
//   for (std::size_t i = 0; i < list.size(); ++i)
//     for (std::uint32_t j : list[i]) { ... }   // j >= ghosts.local_count(): a ghost entry
//   if (list.needs_rebuild(comm, x)) { ... }  // skin check: one MPI_Allreduce
//
// A half list holds every pair within cutoff + skin once, over all ranks and
// periodic images: an owned-owned pair on its rank once, an owned-ghost pair
// on exactly one of the two ranks that see it (newton on: the forces on the
// ghost go back with GhostPlan::reverse_sum). Which rank keeps it is decided
// from positions alone, with no ids and no extra message: the one where the
// ghost lies above the owned particle in (z, y, x) order, the ghost's
// position being its image's, and, for the same position, the rank whose
// ghost comes from the higher rank. That rule is exact (the two ranks never
// both keep or both drop a pair) when the owned positions lie inside the
// domain on the periodic axes at the build (migrate(plan, wrapped(x), ...)
// leaves them there): build() checks it. Both ranks then compare the same
// numbers: an axis without a shift compares the same two coordinates, an
// axis with one is decided by the shift's sign.

#include <domex/comm/comm.hpp>
#include <domex/decompose/box.hpp>
#include <domex/ghost/ghost.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace domex {

/// Which pairs a NeighborList holds.
enum class NeighborKind {
  /// Each pair within cutoff + skin once over all ranks (see the header):
  /// forces with Newton's third law, then GhostPlan::reverse_sum.
  half,
  /// For every owned particle, every owned or ghost entry within cutoff +
  /// skin (each owned-owned pair twice): sums that need both sides locally
  /// (MPS, SPH densities) and no reverse operation.
  full,
};

struct NeighborOptions {
  /// Interaction cutoff r_c (finite, > 0).
  double cutoff = 0;
  /// Verlet skin (>= 0): pairs within cutoff + skin are listed, and
  /// needs_rebuild() says when a particle has moved more than skin / 2.
  /// The ghost plan's cutoff must be at least cutoff + skin.
  double skin = 0;
  NeighborKind kind = NeighborKind::half;
  /// Edge of the bins (cells) the entries are sorted into; 0: half of
  /// cutoff + skin (LAMMPS's default), rounded up so that bins tile the
  /// entries' bounding box. Larger where the bins would outnumber the
  /// entries eight times (sparse particles over a large box).
  double bin_size = 0;
};

/// What the last build found (deterministic: for tests and benchmarks).
struct NeighborStats {
  std::size_t owned = 0;         ///< lists (owned particles)
  std::size_t entries = 0;       ///< owned + ghost entries binned
  std::size_t pairs = 0;         ///< listed pairs (all lists)
  std::size_t ghost_pairs = 0;   ///< of which with a ghost entry
  std::size_t bins = 0;          ///< bins over the bounding box
  std::size_t stencil = 0;       ///< bins within cutoff + skin of a bin (itself included)
  std::size_t candidates = 0;    ///< entries whose distance was tested
};

/// Cell-binned neighbour lists of the owned particles of a GhostPlan
/// against its owned and ghost entries. Local calls (no communication) but
/// needs_rebuild(). Lists are CSR arrays of 32-bit entry indices, each
/// particle's owned neighbours first, then its ghost ones (the split lets a
/// force loop run the owned pairs while the ghosts' positions travel).
class NeighborList {
 public:
  /// Throws domex::Error (local) for a cutoff that is not finite and > 0,
  /// a negative or infinite skin or a negative bin size.
  explicit NeighborList(NeighborOptions options);
  NeighborList(NeighborList&&) noexcept;
  NeighborList& operator=(NeighborList&&) noexcept;
  ~NeighborList();

  /// Builds the lists for the plan's last build. `positions`: the owned
  /// particles' positions (local_count() entries) or all size() entries
  /// (the ghost entries are then not read: the ghosts' positions are the
  /// plan's ghost_positions(), the build's). Throws domex::Error (local,
  /// on this rank only) for another length, a NaN or infinite position, an
  /// entry count of 2^32 or more, a plan cutoff below cutoff + skin, or (a
  /// half list) an owned position outside the domain on a periodic axis.
  /// Strong guarantee. Also keeps the owned positions for needs_rebuild().
  void build(const GhostPlan& ghosts, std::span<const Point> positions);

  /// Owned particles with a list (local_count() of the last build).
  [[nodiscard]] std::size_t size() const noexcept { return offsets_.size() - 1; }
  /// Every neighbour of owned particle i (owned entries first).
  [[nodiscard]] std::span<const std::uint32_t> operator[](std::size_t i) const noexcept {
    return {neighbors_.data() + offsets_[i], neighbors_.data() + offsets_[i + 1]};
  }
  /// The owned neighbours of i (entries < local_count()).
  [[nodiscard]] std::span<const std::uint32_t> owned_neighbors(std::size_t i) const noexcept {
    return {neighbors_.data() + offsets_[i], neighbors_.data() + ghost_begin_[i]};
  }
  /// The ghost neighbours of i (entries >= local_count()).
  [[nodiscard]] std::span<const std::uint32_t> ghost_neighbors(std::size_t i) const noexcept {
    return {neighbors_.data() + ghost_begin_[i], neighbors_.data() + offsets_[i + 1]};
  }
  /// CSR form: the neighbours of i are neighbors()[offsets()[i], offsets()[i + 1]),
  /// the ghost ones from ghost_begin()[i] on.
  [[nodiscard]] std::span<const std::size_t> offsets() const noexcept { return offsets_; }
  [[nodiscard]] std::span<const std::size_t> ghost_begin() const noexcept { return ghost_begin_; }
  [[nodiscard]] std::span<const std::uint32_t> neighbors() const noexcept { return neighbors_; }
  /// Listed pairs (the length of neighbors()).
  [[nodiscard]] std::size_t pairs() const noexcept { return neighbors_.size(); }
  [[nodiscard]] const NeighborStats& stats() const noexcept { return stats_; }
  /// The owned positions the lists were built from (LAMMPS's xhold): what
  /// needs_rebuild() measures displacements against, and what a checkpoint
  /// keeps to build the same lists again.
  [[nodiscard]] std::span<const Point> build_positions() const noexcept { return held_; }
  [[nodiscard]] const NeighborOptions& options() const noexcept { return options_; }

  /// Collective over `comm` (one MPI_Allreduce, as LAMMPS's `check yes`):
  /// true on every rank when a particle on some rank has moved more than
  /// skin / 2 since the build (a squared displacement above skin^2 / 4),
  /// or its rank's owned count is no longer the build's (`positions`: the
  /// owned entries first, as build() takes them; a longer span is read up
  /// to the build's count). False before the first build is never
  /// returned: true then.
  [[nodiscard]] bool needs_rebuild(const Comm& comm, std::span<const Point> positions) const;
  /// The largest squared displacement on this rank since the build (local).
  [[nodiscard]] double max_displacement2(std::span<const Point> positions) const noexcept;

 private:
  NeighborOptions options_;
  NeighborStats stats_;
  std::vector<std::size_t> offsets_{0}, ghost_begin_;
  std::vector<std::uint32_t> neighbors_;
  std::vector<Point> held_;  ///< the owned positions at the build (skin check)
  bool built_ = false;
  /// The build's working arrays and the previous lists, kept for the next
  /// build (a rebuild every few steps maps no new pages).
  struct Scratch;
  std::unique_ptr<Scratch> scratch_;
};

/// English spelling, for users who look for it.
using NeighbourList = NeighborList;

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Particle migration: move every particle to the rank that owns its position,
// talking only to the ranks that are involved.
//
//   domex::MigrationPlan plan(comm, decomposition, positions);  // who goes where
//   domex::migrate(plan, particles);                            // do it (AoS)
//   domex::migrate(plan, x, v, mass, id);                       // or SoA: arrays moved together

#include <domex/comm/comm.hpp>
#include <domex/comm/collective.hpp>
#include <domex/decompose/multisection.hpp>
#include <domex/exchange/exchange.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace domex {

struct MigrationOptions {
  /// Algorithm of the general path (when some particle left the neighbourhood).
  Algorithm algorithm = Algorithm::automatic;
  /// Use the neighbour-only path when every particle stays among the
  /// neighbours; false forces the general exchange (for comparison).
  bool neighbour_only = true;
};

class MigrationPlan;
template <Sendable... Fields>
void migrate(MigrationPlan& plan, std::vector<Fields>&... fields);

/// Who goes where, built once per step. Collective: one MPI_Allreduce of two
/// doubles agrees on validity (invalid positions or destinations on any rank)
/// and on whether any particle on any rank jumped beyond the neighbour list.
/// A plan that throws was never built; the particles are untouched.
class MigrationPlan {
 public:
  /// Destinations from a decomposition (Multisection, BucketDecomposition:
  /// anything with try_owner(Point) and neighbours()): the owner of every
  /// particle's position. With a decomposition that offers
  /// owners(positions, out) (Multisection), a particle still inside this
  /// rank's box costs one box test. Throws domex::Error on every rank if a
  /// position is NaN or outside a non-periodic axis on some rank, naming that
  /// rank, the particle index and its position.
  template <class Decomposition>
  MigrationPlan(Comm& comm, const Decomposition& decomposition, std::span<const Point> positions,
                MigrationOptions options = {})
      : comm_(&comm), options_(options), neighbours_(decomposition.neighbours()) {
    destination_.resize(positions.size());
    if constexpr (requires { decomposition.owners(positions, std::span<int>(destination_)); })
      decomposition.owners(positions, std::span<int>(destination_));
    else
      for (std::size_t i = 0; i < positions.size(); ++i) destination_[i] = decomposition.try_owner(positions[i]);
    finish_setup([&](std::size_t i) {
      return fmt::format("particle {} has an invalid position ({}, {}, {}): NaN, infinite, or outside the domain on a "
                         "non-periodic axis",
                         i, positions[i][0], positions[i][1], positions[i][2]);
    });
  }
  /// The same, reading each position from the user's own particles through
  /// `position` (`&Particle::position` or a callable returning a Point).
  template <class Decomposition, class Particle, PositionOf<Particle> Projection>
  MigrationPlan(Comm& comm, const Decomposition& decomposition, std::span<const Particle> particles,
                const Projection& position, MigrationOptions options = {})
      : MigrationPlan(comm, decomposition, std::span<const Point>(detail::positions_of(particles, position)), options) {}

  /// Destinations given directly (rank per particle), with the ranks this
  /// rank may exchange with on the neighbour path. The neighbour relation
  /// must be symmetric. A destination outside [0, P) on any rank throws on
  /// every rank.
  MigrationPlan(Comm& comm, std::vector<int> destinations, std::vector<int> neighbours, MigrationOptions options = {});

  [[nodiscard]] std::span<const int> destinations() const noexcept { return destination_; }
  /// True if migrate() exchanges with the neighbour list only.
  [[nodiscard]] bool neighbour_path() const noexcept { return neighbour_path_; }
  /// Particles that leave this rank.
  [[nodiscard]] std::size_t leaving() const noexcept { return leavers_.size(); }
  /// Indices of the particles that leave, ascending.
  [[nodiscard]] std::span<const std::size_t> leavers() const noexcept { return leavers_; }
  /// The leavers grouped by destination (ascending rank; particle order
  /// within a destination): the order exchange_leavers() expects them in.
  [[nodiscard]] std::span<const std::size_t> send_order() const noexcept { return send_order_; }
  /// Ranks the last migrate() sent to or received from (ascending).
  [[nodiscard]] const std::vector<int>& contacted() const noexcept { return contacted_; }
  /// Messages and bytes the last migrate() sent from this rank.
  [[nodiscard]] const ExchangeStats& stats() const noexcept { return stats_; }
  [[nodiscard]] Comm& comm() const noexcept { return *comm_; }

  /// Byte-level migration: `records` holds one record of `record_bytes` per
  /// particle, in particle order. Returns the new records: the particles
  /// that stay, in their order, then the arrivals by source. Collective; a
  /// wrong size on one rank throws on every rank.
  [[nodiscard]] std::vector<std::byte> move_records(std::span<const std::byte> records, std::size_t record_bytes);
  /// The exchange behind migrate() and move_records(): `packed` holds the
  /// leavers' records in send_order(); returns the arrivals by source.
  /// Collective; a wrong size on one rank throws on every rank.
  [[nodiscard]] std::vector<std::byte> exchange_leavers(std::span<const std::byte> packed, std::size_t record_bytes);

 private:
  template <Sendable... Fields>
  friend void migrate(MigrationPlan& plan, std::vector<Fields>&... fields);
  /// exchange_leavers without the agreement (migrate() agreed already).
  [[nodiscard]] std::vector<std::byte> exchange_packed(std::span<const std::byte> packed, std::size_t record_bytes);
  void finish_setup(const std::function<std::string(std::size_t)>& describe_invalid);
  Comm* comm_;
  MigrationOptions options_;
  std::vector<int> destination_;
  std::vector<int> neighbours_;
  bool neighbour_path_ = true;
  std::vector<std::size_t> leavers_, send_order_;
  std::vector<int> ranks_;                   ///< destinations of the leavers, ascending
  std::vector<std::size_t> record_offsets_;  ///< per destination, in records (ranks_.size() + 1)
  std::vector<int> contacted_;
  ExchangeStats stats_;
};

namespace detail {
/// Removes the entries at `leavers` (ascending) from `values`, keeping order.
template <class T>
void remove_leavers(std::vector<T>& values, std::span<const std::size_t> leavers) {
  if (leavers.empty()) return;
  std::size_t write = leavers[0];
  for (std::size_t m = 0; m < leavers.size(); ++m) {
    const std::size_t begin = leavers[m] + 1, end = m + 1 < leavers.size() ? leavers[m + 1] : values.size();
    std::copy(values.begin() + static_cast<std::ptrdiff_t>(begin), values.begin() + static_cast<std::ptrdiff_t>(end),
              values.begin() + static_cast<std::ptrdiff_t>(write));
    write += end - begin;
  }
  values.resize(write);
}
}  // namespace detail

/// Moves the particles to their owners. Each field is a std::vector of one
/// trivially copyable type with one entry per particle (a single vector of
/// particle structs, or several arrays moved together); all are resized to
/// the new local count: the particles that stay, in their order, then the
/// arrivals by source. Only the leavers are copied. Collective; the field
/// sizes are agreed on first (a wrong size on one rank throws on every rank,
/// nothing moved). Basic guarantee if MPI itself fails mid-exchange.
template <Sendable... Fields>
void migrate(MigrationPlan& plan, std::vector<Fields>&... fields) {
  static_assert(sizeof...(Fields) > 0, "migrate needs at least one field");
  const std::size_t count = plan.destinations().size();
  agree(plan.comm(), "migrate", [&] {
    if (((fields.size() != count) || ...))
      fail("migrate", "every field must hold one entry per particle (" + std::to_string(count) + ")");
  });
  constexpr std::size_t record = (sizeof(Fields) + ...);
  const auto order = plan.send_order();
  std::vector<std::byte> packed(order.size() * record);
  for (std::size_t m = 0; m < order.size(); ++m) {
    std::size_t at = m * record;
    ((std::memcpy(packed.data() + at, &fields[order[m]], sizeof(Fields)), at += sizeof(Fields)), ...);
  }
  const auto arrived = plan.exchange_packed(packed, record);
  (detail::remove_leavers(fields, plan.leavers()), ...);
  const std::size_t kept = count - plan.leaving(), arrivals = arrived.size() / record;
  (fields.resize(kept + arrivals), ...);
  for (std::size_t i = 0; i < arrivals; ++i) {
    std::size_t at = i * record;
    ((std::memcpy(&fields[kept + i], arrived.data() + at, sizeof(Fields)), at += sizeof(Fields)), ...);
  }
}

}  // namespace domex

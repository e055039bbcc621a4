// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Particle migration: move every particle to the rank that owns its position,
// talking only to the ranks that are involved.
//
//   domex::MigrationPlan plan(comm, decomposition, positions);  // who goes where
//   domex::migrate(plan, particles);                            // do it (AoS)
//   domex::migrate(plan, x, v, mass, id);                       // or SoA: arrays moved together
//   domex::migrate(plan, domex::wrapped(x), v, id);             // positions wrapped on periodic axes

#include <domex/comm/comm.hpp>
#include <domex/comm/collective.hpp>
#include <domex/decompose/grid.hpp>
#include <domex/decompose/multisection.hpp>
#include <domex/exchange/exchange.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace domex {

/// Where migrate() puts the particles that stay and those that arrive.
enum class MigrationOrder {
  /// The particles that stay, in their order, then the arrivals by source:
  /// every entry after the first leaver moves (O(particles) copies).
  stable,
  /// The arrivals (by source) take the leavers' places, ascending; more
  /// arrivals go at the end; more leavers are filled by the last particles
  /// that stay: only O(leavers + arrivals) entries move. For codes that
  /// keep their particles in no particular order (or sort them anyway): at
  /// 1e5 particles per rank a migration of a few hundred is then a few
  /// hundred copies, not a pass over every array.
  fill_holes,
};

struct MigrationOptions {
  /// Algorithm of the general path (when some particle left the neighbourhood).
  Algorithm algorithm = Algorithm::automatic;
  /// Where the stayers and arrivals go (migrate()).
  MigrationOrder order = MigrationOrder::stable;
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
    if constexpr (requires { decomposition.domain(); decomposition.options().periodic; }) {
      wrap_domain_ = decomposition.domain();
      wrap_axes_ = decomposition.options().periodic;
      if constexpr (requires { decomposition.geometry(); })  // cylindrical: phi wraps by itself, only z shifts
        if (decomposition.geometry() == Geometry::cylindrical) wrap_axes_ = {false, false, wrap_axes_[2]};
    }
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
  [[nodiscard]] const MigrationOptions& options() const noexcept { return options_; }
  /// A Cartesian position wrapped into the decomposition's domain on its
  /// periodic axes (a cylindrical one's: z only), as the decomposition wraps
  /// to find an owner; unchanged for a plan built from destinations.
  [[nodiscard]] Point wrap(const Point& position) const noexcept {
    return wrap_periodic(wrap_domain_, wrap_axes_, position);
  }

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
  Box wrap_domain_;
  std::array<bool, 3> wrap_axes_{false, false, false};
};

/// A field of migrate() that holds positions (a std::vector of Points, or of
/// structs with a Point member): after the move, every entry is wrapped into
/// the domain on its periodic axes (MigrationPlan::wrap), as a rebuild of
/// ghosts and neighbour lists wants them (positions inside the domain: a
/// half list's owned-ghost rule needs it). `migrate(plan, wrapped(x), v)`.
template <class T>
struct Wrapped {
  std::vector<T>& values;
  std::ptrdiff_t offset;  ///< bytes from an element's start to its Point
};
inline Wrapped<Point> wrapped(std::vector<Point>& positions) noexcept { return {positions, 0}; }
template <class Particle>
Wrapped<Particle> wrapped(std::vector<Particle>& particles, Point Particle::*position) noexcept {
  alignas(Particle) std::byte storage[sizeof(Particle)];  // the member's offset, from a real object
  const auto* object = reinterpret_cast<const Particle*>(storage);
  return {particles, reinterpret_cast<const std::byte*>(&(object->*position)) - storage};
}

namespace detail {
template <class T>
inline constexpr bool is_wrapped = false;
template <class T>
inline constexpr bool is_wrapped<Wrapped<T>> = true;
template <class T>
std::vector<T>& vector_of(std::vector<T>& field) noexcept {
  return field;
}
template <class T>
std::vector<T>& vector_of(Wrapped<T> field) noexcept {
  return field.values;
}
}  // namespace detail

namespace detail {
/// MigrationOrder::fill_holes: where each arrival goes and which stayers
/// move into the leavers' places left over. `leavers` ascending; the new
/// size is count - leavers + arrivals.
struct Holes {
  std::vector<std::size_t> arrival_to;            ///< entry of arrival a (a leaver's place, or past the stayers)
  std::vector<std::pair<std::size_t, std::size_t>> moves;  ///< (from, to): stayers moving into holes
};
inline Holes holes_of(std::size_t count, std::span<const std::size_t> leavers, std::size_t arrivals) {
  Holes holes;
  const std::size_t filled = std::min(arrivals, leavers.size());
  holes.arrival_to.assign(leavers.begin(), leavers.begin() + static_cast<std::ptrdiff_t>(filled));
  for (std::size_t a = filled; a < arrivals; ++a) holes.arrival_to.push_back(count + (a - filled));
  if (leavers.size() > arrivals) {  // holes left: the last stayers move into those below the new end
    const std::size_t size = count - (leavers.size() - arrivals);
    const auto open = leavers.subspan(arrivals);
    std::size_t hole = 0, from = count, past = open.size();  // `past`: open holes at or above `from`
    while (hole < open.size() && open[hole] < size) {
      --from;
      while (past > 0 && open[past - 1] == from) {  // a hole itself: nothing to move
        --past;
        --from;
      }
      holes.moves.emplace_back(from, open[hole++]);
    }
  }
  return holes;
}

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
  const std::size_t kept = count - plan.leaving(), arrivals = arrived.size() / record;
  if (plan.options().order == MigrationOrder::fill_holes) {
    const detail::Holes holes = detail::holes_of(count, plan.leavers(), arrivals);
    if (arrivals > plan.leaving()) (fields.resize(kept + arrivals), ...);
    for (const auto& [from, to] : holes.moves) ((fields[to] = fields[from]), ...);
    if (arrivals < plan.leaving()) (fields.resize(kept + arrivals), ...);
    for (std::size_t i = 0; i < arrivals; ++i) {
      std::size_t at = i * record;
      const std::size_t to = holes.arrival_to[i];
      ((std::memcpy(&fields[to], arrived.data() + at, sizeof(Fields)), at += sizeof(Fields)), ...);
    }
    return;
  }
  (detail::remove_leavers(fields, plan.leavers()), ...);
  (fields.resize(kept + arrivals), ...);
  for (std::size_t i = 0; i < arrivals; ++i) {
    std::size_t at = i * record;
    ((std::memcpy(&fields[kept + i], arrived.data() + at, sizeof(Fields)), at += sizeof(Fields)), ...);
  }
}

}  // namespace domex

namespace domex {

/// migrate() with position fields marked wrapped(...): the same move, then
/// every entry of those fields wrapped on the periodic axes (a pass at each
/// migration; only positions outside the domain are changed). Collective.
template <class... Fields>
  requires(detail::is_wrapped<std::remove_cvref_t<Fields>> || ...)
void migrate(MigrationPlan& plan, Fields&&... fields) {
  migrate(plan, detail::vector_of(fields)...);
  auto wrap = [&]<class T>(const Wrapped<T>& field) {
    for (T& element : field.values) {
      auto* at = reinterpret_cast<std::byte*>(&element) + field.offset;
      Point p;
      std::memcpy(&p, at, sizeof(Point));
      p = plan.wrap(p);
      std::memcpy(at, &p, sizeof(Point));
    }
  };
  (
      [&] {
        if constexpr (detail::is_wrapped<std::remove_cvref_t<Fields>>) wrap(fields);
      }(),
      ...);
}

}  // namespace domex

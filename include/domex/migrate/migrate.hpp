#pragma once
// Particle migration: move every particle to the rank that owns its position,
// talking only to the ranks that are involved.
//
//   domex::MigrationPlan plan(comm, decomposition, positions);  // who goes where
//   domex::migrate(plan, particles);                            // do it (AoS)
//   domex::migrate(plan, x, v, mass, id);                       // or SoA: arrays moved together

#include <domex/comm/comm.hpp>
#include <domex/decompose/multisection.hpp>
#include <domex/exchange/exchange.hpp>

#include <cstddef>
#include <cstring>
#include <span>
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

/// Who goes where, built once per step. Collective (one MPI_Allreduce of two
/// flags): it detects whether any particle on any rank jumped beyond the
/// neighbour list, and invalid positions on any rank.
class MigrationPlan {
 public:
  /// Destinations from a decomposition (Multisection, BucketDecomposition:
  /// anything with try_owner(Point) and neighbours()): the owner of every
  /// particle's position. Throws domex::Error on every rank if a position is
  /// NaN or outside a non-periodic axis on some rank; the rank that holds it
  /// names the particle index and its position.
  template <class Decomposition>
  MigrationPlan(Comm& comm, const Decomposition& decomposition, std::span<const Point> positions,
                MigrationOptions options = {})
      : comm_(&comm), options_(options), neighbours_(decomposition.neighbours()) {
    destination_.resize(positions.size());
    int invalid = -1;
    for (std::size_t i = 0; i < positions.size(); ++i) {
      destination_[i] = decomposition.try_owner(positions[i]);
      if (destination_[i] < 0 && invalid < 0) {
        invalid = static_cast<int>(i);
        invalid_position_ = positions[i];
      }
    }
    finish_setup(invalid);
  }
  /// Destinations given directly (rank per particle), with the ranks this
  /// rank may exchange with on the neighbour path. The neighbour relation
  /// must be symmetric.
  MigrationPlan(Comm& comm, std::vector<int> destinations, std::vector<int> neighbours, MigrationOptions options = {});

  [[nodiscard]] std::span<const int> destinations() const noexcept { return destination_; }
  /// True if migrate() exchanges with the neighbour list only.
  [[nodiscard]] bool neighbour_path() const noexcept { return neighbour_path_; }
  /// Particles that leave this rank.
  [[nodiscard]] std::size_t leaving() const noexcept { return leaving_; }
  /// Ranks the last migrate() sent to or received from (ascending).
  [[nodiscard]] const std::vector<int>& contacted() const noexcept { return contacted_; }
  /// Messages and bytes the last migrate() sent from this rank.
  [[nodiscard]] const ExchangeStats& stats() const noexcept { return stats_; }
  [[nodiscard]] Comm& comm() const noexcept { return *comm_; }

  /// Byte-level migration behind migrate(): `records` holds one record of
  /// `record_bytes` per particle, in particle order. Returns the new records:
  /// the particles that stay, in their order, then the arrivals by source.
  [[nodiscard]] std::vector<std::byte> move_records(std::span<const std::byte> records, std::size_t record_bytes);

 private:
  void finish_setup(int invalid_index);
  Comm* comm_;
  MigrationOptions options_;
  std::vector<int> destination_;
  std::vector<int> neighbours_;
  bool neighbour_path_ = true;
  std::size_t leaving_ = 0;
  std::vector<int> contacted_;
  ExchangeStats stats_;
  Point invalid_position_{};
};

/// Moves the particles to their owners. Each field is a std::vector of one
/// trivially copyable type with one entry per particle (a single vector of
/// particle structs, or several arrays moved together); all are resized to
/// the new local count. Collective.
template <Sendable... Fields>
void migrate(MigrationPlan& plan, std::vector<Fields>&... fields) {
  static_assert(sizeof...(Fields) > 0, "migrate needs at least one field");
  const std::size_t count = plan.destinations().size();
  if (((fields.size() != count) || ...))
    fail("migrate", "every field must hold one entry per particle (" + std::to_string(count) + ")");
  constexpr std::size_t record = (sizeof(Fields) + ...);
  std::vector<std::byte> records(count * record);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t at = i * record;
    ((std::memcpy(records.data() + at, &fields[i], sizeof(Fields)), at += sizeof(Fields)), ...);
  }
  const auto moved = plan.move_records(records, record);
  const std::size_t arrived = moved.size() / record;
  (fields.resize(arrived), ...);
  for (std::size_t i = 0; i < arrived; ++i) {
    std::size_t at = i * record;
    ((std::memcpy(&fields[i], moved.data() + at, sizeof(Fields)), at += sizeof(Fields)), ...);
  }
}

}  // namespace domex

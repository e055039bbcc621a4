// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex::HaloPlan: ghost-layer exchange of fields on a CartesianGrid.
//
//   domex::CartesianGrid grid(comm, {128, 128, 128});
//   domex::HaloPlan halo(grid, {.depth = 2});          // deep halo: 2 ghost layers
//   std::vector<double> rho(halo.cells()), vx(halo.cells()), ...;
//   halo.exchange(rho, vx, vy, vz, p, bx, by, bz);     // one message per neighbour
//   // ... 2 steps on the shrinking valid region, then exchange again

#include <domex/comm/comm.hpp>
#include <domex/comm/datatype.hpp>
#include <domex/halo/cartesian.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace domex {

/// Which neighbours exchange ghosts.
enum class Stencil {
  /// 26 neighbours (faces, edges, corners) in one round: every ghost cell,
  /// corners included, arrives directly from its owner.
  full,
  /// 6 face neighbours in three rounds (x, then y, then z, each forwarding the
  /// ghosts received before): the same ghost values with 6 messages, but the
  /// rounds are sequential.
  faces,
};

/// How the messages are sent (the plan is the fast one; the others are the
/// baselines the benchmark compares with).
enum class HaloMethod {
  /// One message per neighbour rank (and round) with all fields and all
  /// directions to that rank packed, persistent requests reused every
  /// exchange; ghosts owned by this rank itself are copied in place.
  plan,
  /// MPI_Neighbor_alltoallv on a distributed-graph communicator (one packed
  /// message per neighbour, collective).
  neighbor_alltoallv,
  /// One MPI_Sendrecv per field per direction: what a code without a halo
  /// library does.
  naive,
};

/// Name of a stencil / method as used on command lines ("full", "faces",
/// "plan", "neighbor_alltoallv", "naive").
[[nodiscard]] const char* to_string(Stencil stencil) noexcept;
[[nodiscard]] const char* to_string(HaloMethod method) noexcept;

struct HaloOptions {
  /// Ghost layers k on every side. With k layers a radius-1 stencil can run k
  /// steps between exchanges on the shrinking valid region (deep halo).
  int depth = 1;
  Stencil stencil = Stencil::full;
  HaloMethod method = HaloMethod::plan;
};

/// A field handed to a halo exchange: any contiguous range of a trivially
/// copyable type (std::vector<T>, std::span<T>, std::array<T, N>).
template <class F>
concept HaloField = requires(F& field) {
  { std::data(field) };
  { std::size(field) } -> std::convertible_to<std::size_t>;
} && Sendable<std::remove_pointer_t<decltype(std::data(std::declval<F&>()))>> &&
                    !std::is_const_v<std::remove_pointer_t<decltype(std::data(std::declval<F&>()))>>;

/// The ghost-exchange pattern of one grid and depth, built once and reused:
/// neighbours, regions, buffers and persistent requests.
///
/// Field layout: every field is an array of cells() elements covering this
/// rank's cells plus `depth` ghost layers on every side, x fastest:
/// element (i, j, k), with i in [-depth, nx + depth), is at index(i, j, k).
/// Ghosts outside a non-periodic boundary are left untouched (the
/// application's boundary condition owns them).
class HaloPlan {
 public:
  /// Collective over the grid's communicator (duplicates it, so plans never
  /// match each other's messages); `grid` must outlive the plan. Throws domex::Error if depth < 1 or a rank
  /// owns fewer than `depth` cells on an axis that has neighbours.
  explicit HaloPlan(const CartesianGrid& grid, HaloOptions options = {});
  HaloPlan(HaloPlan&&) noexcept;
  HaloPlan& operator=(HaloPlan&&) noexcept;
  ~HaloPlan();

  [[nodiscard]] const CartesianGrid& grid() const noexcept { return *grid_; }
  [[nodiscard]] const HaloOptions& options() const noexcept { return options_; }
  [[nodiscard]] int depth() const noexcept { return options_.depth; }
  /// Cells per axis including ghosts: local_cells + 2 * depth.
  [[nodiscard]] std::array<std::size_t, 3> extent() const noexcept { return extent_; }
  /// Elements every field array must have.
  [[nodiscard]] std::size_t cells() const noexcept { return extent_[0] * extent_[1] * extent_[2]; }
  /// Index of cell (i, j, k) in local coordinates, owned cells at [0, n).
  [[nodiscard]] std::size_t index(long i, long j, long k) const noexcept {
    const long d = options_.depth;
    return static_cast<std::size_t>(i + d) +
           extent_[0] * (static_cast<std::size_t>(j + d) + extent_[1] * static_cast<std::size_t>(k + d));
  }

  /// Fills every ghost cell of every field with its owner's value:
  /// begin() then finish().
  template <HaloField... Fields>
  void exchange(Fields&... fields) {
    begin(fields...);
    finish();
  }
  /// Starts the exchange (packs and posts the first round); compute on owned
  /// cells away from the boundary, then call finish(). The fields must stay
  /// alive and unmodified in their send regions until finish() returns, and
  /// their ghosts must not be used in between: ghosts whose owner is this
  /// rank itself (a periodic axis with one rank) are copied within each field
  /// by begin() already (HaloMethod::plan: no message, no buffer).
  /// Invalid fields on one rank (wrong number of elements): that rank throws
  /// domex::Error here after sending empty messages in place of its ghosts,
  /// and every rank whose ghosts depend on it throws from finish() naming it;
  /// its ghosts then hold their owners' values or are unchanged (with
  /// Stencil::faces, rounds completed before the news arrived were unpacked).
  /// No rank hangs and none gets wrong ghosts silently. The plan stays usable. (The naive and neighbor_alltoallv
  /// baselines agree with one allreduce per exchange instead.)
  template <HaloField... Fields>
  void begin(Fields&... fields) {
    static_assert(sizeof...(Fields) > 0, "HaloPlan::begin: give at least one field");
    const std::array<FieldView, sizeof...(Fields)> views{view_of(fields)...};
    begin_views(views);
  }
  /// Completes the exchange started by begin() and unpacks the ghosts.
  /// Throws domex::Error if a neighbour's begin() failed (see begin()).
  void finish();

  /// Transfers this rank makes per exchange of `fields` fields: one per
  /// neighbour direction (26 with Stencil::full, 6 with faces; naive: one per
  /// field per direction), those to this rank itself included.
  [[nodiscard]] std::size_t messages_per_exchange(std::size_t fields = 1) const noexcept;
  /// MPI messages this rank sends per exchange: with HaloMethod::plan one
  /// per distinct neighbour rank and round (the transfers to one rank travel
  /// together; those to this rank itself are copies, no message); the
  /// baselines send one per transfer (messages_per_exchange()).
  [[nodiscard]] std::size_t mpi_messages_per_exchange(std::size_t fields = 1) const noexcept;
  /// Bytes this rank sends per exchange for fields totalling `bytes_per_cell`.
  [[nodiscard]] std::size_t bytes_per_exchange(std::size_t bytes_per_cell) const noexcept;
  /// Distinct ranks this rank sends to per exchange (itself included).
  [[nodiscard]] std::size_t neighbour_ranks() const noexcept;

  /// Type-erased field: the raw bytes of one array.
  struct FieldView {
    std::byte* data;
    std::size_t element_size;
    std::size_t elements;
  };
  /// begin() for fields whose number and types are known only at run time
  /// (the C API): the raw bytes of each. Errors as begin().
  void begin(std::span<const FieldView> fields) { begin_views(fields); }

 private:
  template <class F>
  static FieldView view_of(F& field) noexcept {
    using T = std::remove_pointer_t<decltype(std::data(field))>;
    return {reinterpret_cast<std::byte*>(std::data(field)), sizeof(T), static_cast<std::size_t>(std::size(field))};
  }
  void begin_views(std::span<const FieldView> fields);
  void start_round(std::size_t round);     // pack and post (naive: send and receive)
  void complete_round(std::size_t round);  // wait and unpack
  void send_empty_exchange();              // a rank with invalid fields: empty messages, drop what arrives
  void wait_empty_sends();

  struct State;  // rounds, transfers, buffers, requests (src/halo/halo.cpp)
  const CartesianGrid* grid_;
  HaloOptions options_;
  std::array<std::size_t, 3> extent_{};
  std::unique_ptr<State> state_;
};

/// Inputs of choose_depth(): what one step costs on this rank.
struct DepthModel {
  std::size_t bytes_per_cell = 8;       ///< all exchanged fields together
  double seconds_per_cell_update = 0;   ///< compute time of one cell for one step
  double seconds_per_message = 0;       ///< alpha (0: from the calibrated CostModel)
  double seconds_per_byte = 0;          ///< beta (0: from the calibrated CostModel)
  int max_depth = 4;
};

/// The depth k (1..max_depth) that minimises the modelled time per step of a
/// radius-1 stencil with deep halos,
///   T(k) = [alpha * messages + beta * bytes(k)] / k + t_cell * mean_s cells(k, s),
/// where cells(k, s) is the region updated s steps after an exchange (owned
/// cells plus k - s ghost layers on sides with neighbours). Collective over
/// the grid's communicator: T(k) is the slowest rank's (one allreduce), so
/// every rank chooses the same k; `model` must be equal on every rank.
[[nodiscard]] int choose_depth(const CartesianGrid& grid, Stencil stencil, const DepthModel& model);

}  // namespace domex

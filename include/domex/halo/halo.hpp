// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex::HaloPlan: ghost-layer exchange of fields on a CartesianGrid.
//
//   domex::CartesianGrid grid(comm, {128, 128, 128});
//   domex::HaloPlan halo(grid, {.depth = 2});          // deep halo: 2 ghost layers
//   std::vector<double> rho(halo.cells()), vx(halo.cells()), ...;
//   halo.exchange(rho, vx, vy, vz, p, bx, by, bz);     // one message per neighbour
//   // ... 2 steps on the shrinking valid region, then exchange again
//   halo.reverse_sum(charge, jx, jy, jz);              // ghosts added into their owners

#include <domex/comm/comm.hpp>
#include <domex/comm/datatype.hpp>
#include <domex/halo/cartesian.hpp>

#include <any>
#include <array>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstring>
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

namespace detail {
template <class F>
using halo_element_t = std::remove_pointer_t<decltype(std::data(std::declval<F&>()))>;
/// Element types reverse_sum() adds: arithmetic (not bool), or std::array of them.
template <class T>
inline constexpr bool ghost_summable_v = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;
template <class T, std::size_t N>
inline constexpr bool ghost_summable_v<std::array<T, N>> = ghost_summable_v<T>;
/// The operation of reverse_sum(): owner += ghost, element by element.
struct GhostSum {
  template <class T>
  void operator()(T& owner, const T& ghost) const noexcept {
    if constexpr (std::is_arithmetic_v<T>)
      owner += ghost;
    else
      for (std::size_t i = 0; i < owner.size(); ++i) (*this)(owner[i], ghost[i]);
  }
};
inline constexpr GhostSum ghost_sum{};
}  // namespace detail

/// A field reverse_sum() accepts: a HaloField of arithmetic elements or of
/// std::array of them (double, float, int, std::array<double, 3>, ...).
template <class F>
concept SummableHaloField = HaloField<F> && detail::ghost_summable_v<detail::halo_element_t<F>>;

/// An operation reverse() can apply to a field F: op(owner, ghost) folds a
/// ghost's value into its owner's, called as `const Op&` with (T&, const T&).
template <class Op, class F>
concept GhostOperation =
    HaloField<F> && std::invocable<const Op&, detail::halo_element_t<F>&, const detail::halo_element_t<F>&>;

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

  /// (The counts below hold for a reverse too: the same messages, the other
  /// way.)
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

  // ---- reverse: ghosts -> owners --------------------------------------------
  //
  // The reverse of exchange(): every ghost cell's value is folded into the
  // cell that owns it (a neighbour's, or this rank's own across a periodic
  // axis), with the same plan, the same messages in the other direction and
  // the same overlap (reverse_begin() / reverse_finish()), as LAMMPS's
  // reverse_comm. Ghosts outside a non-periodic boundary have no owner and are
  // ignored. Stencil::faces runs the rounds in reverse order (z, y, x): a
  // round adds the ghosts it receives into the ghost layers of the earlier
  // axes too, which relays edge and corner contributions to their owners.
  //
  // Fixed order (never arrival order), so the result is bitwise reproducible:
  // - Stencil::full: an owned cell becomes
  //     ((owner (+) g[d1]) (+) g[d2]) (+) ...
  //   over the directions d from the owner to the neighbour holding the
  //   ghost, in ascending direction index (dz, then dy, then dx, each -1 < 0
  //   < 1): at most one ghost per direction maps to a cell. The order does
  //   not depend on which rank holds a ghost (another rank, or this one on a
  //   periodic axis) nor on when messages arrive, so results are identical
  //   from run to run, and reverse_begin()/reverse_finish() give the bits of
  //   reverse_sum(). Across different rank counts the owned cells are
  //   identical whenever the same values arrive from the same directions:
  //   in particular a one-rank periodic run and any decomposition agree
  //   bitwise when the ghosts at internal rank boundaries (outside the owned
  //   box on an axis where they are inside the global grid) hold 0, as
  //   adding 0 is exact (up to the sign of a zero). In general they differ:
  //   a decomposition has ghosts (and hence contributions) that another
  //   lacks, and floating-point addition is not associative.
  // - Stencil::faces: per round, contributions from the lower side, then
  //   from the upper one; edges and corners are first added on the relaying
  //   rank (round z into the x/y ghost layers, round y into the x layers).
  //   As fixed, and reproducible, as full, and the same across rank counts
  //   under the condition above, but a different association: equal to
  //   full's result where the additions are exact (integers, integer-valued
  //   doubles), not bitwise in general.
  // Ghost cells are unchanged afterwards (the relayed partial sums of
  // Stencil::faces are restored). Only HaloMethod::plan has a reverse: the
  // baselines throw domex::Error on every rank (nothing is communicated).

  /// Adds every ghost cell's value into its owner: reverse_begin() then
  /// reverse_finish().
  template <SummableHaloField... Fields>
  void reverse_sum(Fields&... fields) {
    reverse_begin(fields...);
    reverse_finish();
  }
  /// reverse_sum() with `op(owner, ghost)` in place of owner += ghost (max,
  /// min, bitwise or, ...), applied in the order described above; it should be
  /// associative and commutative for the two stencils to agree.
  template <class Op, HaloField... Fields>
    requires(sizeof...(Fields) > 0 && !HaloField<Op> && (GhostOperation<Op, Fields> && ...))
  void reverse(Op op, Fields&... fields) {
    reverse_begin(std::move(op), fields...);
    reverse_finish();
  }
  /// Starts reverse_sum() (packs and posts the first round's ghosts); compute
  /// on cells whose values the reverse neither reads nor writes (owned cells
  /// farther than depth() from a side with a neighbour), then call
  /// reverse_finish(). The fields must stay alive and their ghosts and owned
  /// boundary cells unmodified until it returns.
  /// Invalid fields on one rank (wrong number of elements): that rank throws
  /// domex::Error here after sending empty messages in place of its ghosts,
  /// and every rank that expects ghosts from it throws from reverse_finish()
  /// naming a neighbour; a round is combined only when all its messages are
  /// valid, so their owned cells hold the rounds completed before the news
  /// (Stencil::full: unchanged) and their ghosts are unchanged. No rank hangs.
  /// The plan stays usable.
  template <SummableHaloField... Fields>
  void reverse_begin(Fields&... fields) {
    static_assert(sizeof...(Fields) > 0, "HaloPlan::reverse_begin: give at least one field");
    const std::array<ReverseView, sizeof...(Fields)> views{summing(std::data(fields), std::size(fields))...};
    reverse_begin_views(views);
  }
  /// reverse_begin() with an operation (see reverse()); `op` is kept (moved)
  /// until reverse_finish().
  template <class Op, HaloField... Fields>
    requires(sizeof...(Fields) > 0 && !HaloField<Op> && (GhostOperation<Op, Fields> && ...))
  void reverse_begin(Op op, Fields&... fields) {
    std::any& slot = idle_operation_slot();
    slot.emplace<Op>(std::move(op));
    const Op* kept = std::any_cast<Op>(&slot);
    const std::array<ReverseView, sizeof...(Fields)> views{applying(std::data(fields), std::size(fields), *kept)...};
    reverse_begin_views(views);
  }
  /// Completes the reverse started by reverse_begin(): waits for each round's
  /// messages, then combines them in the fixed order. Throws domex::Error if
  /// a neighbour's reverse_begin() failed (see there).
  void reverse_finish();

  /// How a reverse folds one field's ghosts into their owners: `rows` rows of
  /// `run` ghost values packed one after another at `ghosts` (not aligned)
  /// into the owners' rows starting at `owners`, `stride` elements apart.
  using Combine = void (*)(const void* op, std::byte* owners, const std::byte* ghosts, std::size_t rows,
                           std::size_t run, std::size_t stride);
  /// Type-erased field of a reverse: its bytes, and how to combine them.
  struct ReverseView {
    FieldView field;
    Combine combine;
    const void* op;  ///< handed to combine; must outlive reverse_finish()
  };
  /// The view of a field of T for `op(T& owner, const T& ghost)`.
  template <class T, class Op>
  [[nodiscard]] static ReverseView applying(T* data, std::size_t elements, const Op& op) noexcept {
    return {{reinterpret_cast<std::byte*>(data), sizeof(T), elements}, &combine_rows<T, Op>, &op};
  }
  /// The view of a field of T for reverse_sum().
  template <class T>
  [[nodiscard]] static ReverseView summing(T* data, std::size_t elements) noexcept {
    return applying(data, elements, detail::ghost_sum);
  }
  /// reverse_begin() for fields known only at run time (the C API). Errors as
  /// reverse_begin().
  void reverse_begin(std::span<const ReverseView> fields) { reverse_begin_views(fields); }

 private:
  template <class F>
  static FieldView view_of(F& field) noexcept {
    using T = std::remove_pointer_t<decltype(std::data(field))>;
    return {reinterpret_cast<std::byte*>(std::data(field)), sizeof(T), static_cast<std::size_t>(std::size(field))};
  }
  void begin_views(std::span<const FieldView> fields);
  void reverse_begin_views(std::span<const ReverseView> fields);
  /// Where reverse_begin(op, ...) keeps its op; throws if an exchange or a
  /// reverse is in progress (so the running one's op is never replaced).
  std::any& idle_operation_slot();
  template <class T, class Op>
  static void combine_rows(const void* op, std::byte* owners, const std::byte* ghosts, std::size_t rows,
                           std::size_t run, std::size_t stride) {
    const Op& apply = *static_cast<const Op*>(op);
    T* row = reinterpret_cast<T*>(owners);
    for (std::size_t j = 0; j < rows; ++j, row += stride)
      for (std::size_t i = 0; i < run; ++i, ghosts += sizeof(T)) {
        std::array<std::byte, sizeof(T)> bytes;  // packed buffers are not aligned for T
        std::memcpy(bytes.data(), ghosts, sizeof(T));
        const T ghost = std::bit_cast<T>(bytes);
        apply(row[i], ghost);
      }
  }
  void start_round(std::size_t round);     // pack and post (naive: send and receive)
  void complete_round(std::size_t round);  // wait and unpack
  void start_reverse_round(std::size_t round);     // pack the ghosts and post
  void complete_reverse_round(std::size_t round);  // wait for all, then combine in the fixed order
  void send_empty_exchange(bool reverse);          // a rank with invalid fields: empty messages, drop what arrives
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

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Ghost particles for short-range methods (MPS, SPH, molecular dynamics, DEM):
// every rank gets a copy of every particle of every rank (itself included,
// through periodic images) that lies within a cutoff of its domain, refreshed
// between neighbour-list rebuilds, and what was accumulated on the ghosts is
// summed back into their owners (LAMMPS's forward_comm / reverse_comm,
// Cabana's Halo gather / scatter).
//
//   domex::GhostPlan ghosts(comm, decomposition, positions, {.cutoff = r_c + skin});
//   x.resize(ghosts.size()); v.resize(ghosts.size()); ...   // owned, then ghosts
//   ghosts.update(domex::shifted(x), v, id);                 // one message per neighbour rank
//   ... forces on owned and ghost entries (half neighbour list) ...
//   ghosts.reverse_sum(force, density);                      // ghost parts added into owners
//
// Field layout: every field has size() entries: the local_count() owned
// particles in the order the plan was built for, then the ghost_count()
// ghosts, grouped by source rank (ascending; this rank's own periodic images
// at its place in that order) and, within a source, by blocks of 256 of the
// source's particles: in a block, by (particle index, image) or, where the
// search tests the block's candidates a domain at a time, domain by domain (a
// multisection's: by image), then by particle index. The order depends on the
// positions, decomposition and cutoff only, not on the algorithm or the SIMD
// width, so results are deterministic.

#include <domex/comm/comm.hpp>
#include <domex/decompose/box.hpp>
#include <domex/decompose/buckets.hpp>
#include <domex/decompose/multisection.hpp>
#include <domex/exchange/algorithm.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace domex {

/// How a ghost operation (update, reverse) checks its fields across ranks.
enum class GhostChecks {
  /// Each rank checks its own fields, with no collective on the per-step
  /// path. A rank whose fields are wrong (a length that is not size(), an
  /// operation still in flight) throws domex::Error naming the field; it
  /// still completes the messages its partners posted, with empty ones in
  /// place of its own, so that they throw in finish() / reverse_finish()
  /// naming it, instead of waiting forever. What it no longer catches: a rank
  /// that neither sends to nor receives from the bad one goes on and learns
  /// of the error only at its next collective call (the next rebuild).
  local,
  /// One MPI_Allreduce per operation agrees on validity first: a bad field
  /// on any rank is a domex::Error on every rank and nothing is sent. For
  /// debugging, and where every rank must fail in the same call.
  collective,
};

struct GhostOptions {
  /// Cutoff r_c: a particle is a ghost of every domain within this distance
  /// (<=, Euclidean, in Cartesian space) of its position or of a periodic
  /// image of it. Give the interaction cutoff plus the Verlet skin. Must be
  /// finite, > 0, equal on every rank, and at most half of every periodic
  /// length; it may exceed a neighbour's width (ghosts then come from every
  /// rank within reach, sent directly, not forwarded).
  double cutoff = 0;
  /// Algorithm of the build's sparse exchange (who sends ghosts to whom).
  Algorithm discovery = Algorithm::automatic;
  /// How update() and reverse() check their fields (the build always agrees
  /// on every rank).
  GhostChecks checks = GhostChecks::local;
};

namespace detail {
/// How many copies ahead update() and reverse() prefetch the owned entries.
inline constexpr std::size_t ghost_prefetch = 16;
/// A field handed to a ghost operation: raw bytes of one array; `shift_at` is
/// the byte offset of a Point inside each element that gets the periodic
/// image shift on the way (-1: none).
struct GhostFieldView {
  std::byte* data;
  std::size_t element_size;
  std::size_t elements;
  std::ptrdiff_t shift_at = -1;
};
}  // namespace detail

/// A field whose Point (a position, of the whole element or of one member)
/// is shifted by the periodic image on its way to a ghost (the shift of the
/// build: keep positions unwrapped between rebuilds, as LAMMPS does, and wrap
/// or migrate only when rebuilding):
/// `plan.update(domex::shifted(x), v)` or, for an array of structs,
/// `plan.update(domex::shifted(particles, &Particle::position))`.
template <class T>
struct Shifted {
  std::span<T> values;
  std::ptrdiff_t offset;  ///< bytes from an element's start to its Point
  std::vector<T>* vector = nullptr;  ///< the array, where given as a std::vector (GhostPlan::resize_fields)
};
/// Positions stored as Points.
inline Shifted<Point> shifted(std::span<Point> positions) noexcept { return {positions, 0}; }
inline Shifted<Point> shifted(std::vector<Point>& positions) noexcept { return {positions, 0, &positions}; }
/// Structs with a Point member.
template <class Particle>
Shifted<Particle> shifted(std::span<Particle> particles, Point Particle::*position) noexcept {
  // The member's offset, from a real object (offsetof does not take member pointers).
  alignas(Particle) std::byte storage[sizeof(Particle)];
  const auto* object = reinterpret_cast<const Particle*>(storage);
  const auto offset = reinterpret_cast<const std::byte*>(&(object->*position)) - storage;
  return {particles, offset};
}
template <class Particle>
Shifted<Particle> shifted(std::vector<Particle>& particles, Point Particle::*position) noexcept {
  auto field = shifted(std::span<Particle>(particles), position);
  field.vector = &particles;
  return field;
}

/// A field for GhostPlan::update: a contiguous range of a trivially copyable
/// type (std::vector<T>, std::span<T>), or shifted(...).
template <class F>
concept GhostField = requires(F& field) {
  { std::data(field) };
  { std::size(field) } -> std::convertible_to<std::size_t>;
} && Sendable<std::remove_pointer_t<decltype(std::data(std::declval<F&>()))>> &&
                     !std::is_const_v<std::remove_pointer_t<decltype(std::data(std::declval<F&>()))>>;

/// Statistics of one plan (deterministic: for tests and benchmarks).
struct GhostStats {
  std::size_t local = 0;          ///< owned particles the plan was built for
  std::size_t ghosts = 0;         ///< ghosts received (periodic images of own particles included)
  std::size_t sent = 0;           ///< ghost copies this rank sends (to itself included)
  std::size_t send_ranks = 0;     ///< ranks sent to, this rank excluded
  std::size_t receive_ranks = 0;  ///< ranks received from, this rank excluded
  std::size_t boundary = 0;       ///< owned particles tested against other domains (the rest are interior)
  /// Blocks of 256 owned particles whose exact tests ran domain by domain in
  /// vectors (see "Layout and order" in docs/ghost_particles.md)
  std::size_t vector_blocks = 0;
  /// Owned particles the search's first pass skipped, a vector at a time, as
  /// deep inside the domain (no candidate domain: cell order has runs of
  /// them); a count that depends on the SIMD width, unlike the ghosts
  std::size_t interior_skipped = 0;
};

/// Who sends which owned particles (and which periodic image) to whom: built
/// when neighbour lists are rebuilt, then reused by update() and
/// reverse_sum() until the next rebuild. Collective calls, in the same order
/// on every rank; one operation in flight per plan. The plan keeps a pointer
/// to `comm`, which must outlive it.
///
/// Errors: the build agrees on validity first (one MPI_Allreduce, which
/// it makes anyway): a NaN or infinite position or a bad cutoff on one rank
/// is a domex::Error on every rank, naming that rank and value; nothing is
/// sent, and the previous plan stays in place. update() and reverse() check
/// their fields as GhostOptions::checks says: by default on each rank, with
/// no collective on the per-step path (a bad field throws on its rank and,
/// through empty messages, on the ranks that exchange with it), or agreed
/// on every rank by one MPI_Allreduce. The plan stays usable after either.
class GhostPlan {
 public:
  /// Collective: the ghosts of a multisection (Cartesian: boxes; cylindrical:
  /// annular sectors in (r, phi, z), whose phi wrap needs no image) for the
  /// owned particles at `positions` (Cartesian x, y, z). Positions need not
  /// be inside this rank's domain (a particle not yet migrated is a ghost of
  /// the domain that holds it), but the usual case, after migrate(), is the
  /// fast one: only particles within the cutoff of the domain's surface are
  /// tested against other domains.
  GhostPlan(Comm& comm, const Multisection& decomposition, std::span<const Point> positions, GhostOptions options);
  /// Collective: the same for a bucket decomposition (a domain is the union
  /// of the rank's buckets).
  GhostPlan(Comm& comm, const BucketDecomposition& decomposition, std::span<const Point> positions,
            GhostOptions options);
  /// The same, reading each position from the user's own particles
  /// (`&Particle::position` or any callable returning a Point).
  template <class Decomposition, class Particle, PositionOf<Particle> Projection>
  GhostPlan(Comm& comm, const Decomposition& decomposition, std::span<const Particle> particles,
            const Projection& position, GhostOptions options)
      : GhostPlan(comm, decomposition, std::span<const Point>(detail::positions_of(particles, position)), options) {}

  GhostPlan(GhostPlan&&) noexcept;
  GhostPlan& operator=(GhostPlan&&) noexcept;
  ~GhostPlan();

  /// Collective: builds the plan again for new positions (after a migration
  /// or when the skin is used up), reusing this plan's buffers. Strong
  /// guarantee.
  void rebuild(const Multisection& decomposition, std::span<const Point> positions);
  void rebuild(const BucketDecomposition& decomposition, std::span<const Point> positions);

  [[nodiscard]] std::size_t local_count() const noexcept;
  [[nodiscard]] std::size_t ghost_count() const noexcept;
  /// Entries every field must have: local_count() + ghost_count().
  [[nodiscard]] std::size_t size() const noexcept { return local_count() + ghost_count(); }
  /// Positions of the ghosts at the build, periodic shift applied (ghost g
  /// is field entry local_count() + g).
  [[nodiscard]] std::span<const Point> ghost_positions() const noexcept;
  /// Ranks the ghosts come from (ascending, this rank included where it has
  /// periodic images of its own) and their ghost offsets (sources + 1):
  /// the ghosts of sources()[s] are [offsets[s], offsets[s+1]).
  [[nodiscard]] std::span<const int> sources() const noexcept;
  [[nodiscard]] std::span<const std::size_t> source_offsets() const noexcept;
  /// Ranks this rank sends ghosts to (ascending, itself included where it has
  /// periodic images), their offsets into send_indices(), and the owned
  /// particle and image shift of each copy sent (made on their first call
  /// after a build from the plan's compact forms: 8 and 24 bytes per copy
  /// that update() does not read).
  [[nodiscard]] std::span<const int> destinations() const noexcept;
  [[nodiscard]] std::span<const std::size_t> destination_offsets() const noexcept;
  [[nodiscard]] std::span<const std::size_t> send_indices() const;
  [[nodiscard]] std::span<const Point> send_shifts() const;
  [[nodiscard]] const GhostStats& stats() const noexcept;
  [[nodiscard]] const GhostOptions& options() const noexcept;
  /// The rank a field entry comes from: this rank for owned entries
  /// (entry < local_count()) and for its own periodic images, else the
  /// ghost's owner. O(log sources).
  [[nodiscard]] int source_of(std::size_t entry) const noexcept;
  /// The decomposition's domain at the last build, in Cartesian x, y, z on
  /// the axes that have periodic images (periodic_axes()).
  [[nodiscard]] const Box& domain() const noexcept;
  /// The axes along which ghosts are periodic images (shifted by the
  /// domain's extent): a Cartesian decomposition's periodic axes; for a
  /// cylindrical one only z (phi wraps by rotation, no shift).
  [[nodiscard]] const std::array<bool, 3>& periodic_axes() const noexcept;
  /// A position wrapped into the domain on periodic_axes(), by the formula
  /// the build uses for positions outside it (so wrap(p) == p for p inside).
  [[nodiscard]] Point wrap(const Point& position) const noexcept;

  /// Resizes every field (std::vector) to size() entries, owned then ghost
  /// entries, after a build. A shifted(x) field gets the ghosts' positions of
  /// the build in its ghost entries (what update(shifted(x)) would bring,
  /// with no message), the other fields' ghost entries are value-initialised.
  template <class... Fields>
  void resize_fields(Fields&&... fields) const {
    (resize_one(fields, size()), ...);
  }
  /// Resizes every field to its local_count() owned entries (what migrate()
  /// and a rebuild take), dropping the ghost entries.
  template <class... Fields>
  void drop_ghosts(Fields&&... fields) const {
    (resize_one(fields, local_count()), ...);
  }

  /// Collective: copies every field's owned values into the ghost entries of
  /// the ranks that need them (one message per neighbour rank with all
  /// fields, persistent requests): begin() then finish().
  template <class... Fields>
  void update(Fields&&... fields) {
    begin(fields...);
    finish();
  }
  /// Starts update(): agrees on the fields, packs and posts. Compute on owned
  /// particles, then finish(). The fields must stay alive, their owned
  /// entries unchanged and their ghost entries unused until finish() (MPI
  /// receives into them directly: persistent requests with a derived
  /// datatype over the fields' ghost blocks, kept while the same arrays come
  /// back, so nothing is unpacked).
  template <class... Fields>
  void begin(Fields&&... fields) {
    static_assert(sizeof...(Fields) > 0, "GhostPlan::begin: give at least one field");
    const std::array<detail::GhostFieldView, sizeof...(Fields)> views{view_of(fields)...};
    begin_forward(views);
  }
  /// Completes update(): waits and unpacks into the ghost entries.
  void finish();

  /// Collective: adds each field's ghost entries into their owners' entries
  /// (half neighbour lists with Newton's third law, deposition, a density
  /// summed once per pair): reverse_begin() then reverse_finish(). Ghost
  /// entries are left as they were. Contributions are added in a fixed order
  /// (by source rank, then by ghost order), never in arrival order, so
  /// results are deterministic. Element types: arithmetic, or std::array of
  /// arithmetic (added component-wise).
  template <class... Fields>
  void reverse_sum(Fields&... fields) {
    reverse(Plus{}, fields...);
  }
  /// The same with a user-given associative operation, called as
  /// `combine(owner_value&, const ghost_value&)` for every field.
  template <class Combine, class... Fields>
  void reverse(const Combine& combine, Fields&... fields) {
    reverse_begin(fields...);
    reverse_finish(combine, fields...);
  }
  /// Starts a reverse operation: agrees on the fields and posts the ghost
  /// entries to their owners (leave the ghost entries unchanged until
  /// reverse_finish(): this rank's own images are read from them there).
  template <class... Fields>
  void reverse_begin(Fields&... fields) {
    static_assert(sizeof...(Fields) > 0, "GhostPlan::reverse_begin: give at least one field");
    const std::array<detail::GhostFieldView, sizeof...(Fields)> views{view_of(fields)...};
    begin_reverse(views);
  }
  /// Completes it: waits, then combines what arrived into the owners in the
  /// fixed order. The same fields as reverse_begin(), in the same order.
  template <class Combine, class... Fields>
  void reverse_finish(const Combine& combine, Fields&... fields) {
    const Arrived arrived = finish_reverse();
    const auto offsets = destination_offsets();
    with_send_indices([&](auto indices) {
      for (std::size_t m = 0; m + 1 < offsets.size(); ++m) {
        const std::size_t begin = offsets[m], count = offsets[m + 1] - begin;
        if (const std::byte* at = arrived.at[m]) {
          (combine_into(combine, fields, indices.subspan(begin, count), at), ...);
        } else {  // this rank's own images, from their ghost entries
          auto own = [&](auto& field) {
            const auto* ghosts = reinterpret_cast<const std::byte*>(std::data(field) + arrived.self_ghost);
            combine_into(combine, field, indices.subspan(begin, count), ghosts);
          };
          (own(fields), ...);
        }
      }
    });
  }
  /// reverse_finish() with addition.
  template <class... Fields>
  void reverse_sum_finish(Fields&... fields) {
    reverse_finish(Plus{}, fields...);
  }

  /// Byte-level forms (the C API): fields as raw arrays. Errors as update().
  void begin(std::span<const detail::GhostFieldView> fields) { begin_forward(fields); }
  /// reverse_sum() of fields of doubles given as raw arrays (element_size
  /// sizeof(double), shift_at -1): the same fixed order, so the same bits as
  /// reverse_sum(std::span<double>...) on the same fields. Errors as reverse_sum().
  void reverse_sum_doubles(std::span<const detail::GhostFieldView> fields) {
    begin_reverse(fields);
    const Arrived arrived = finish_reverse();
    const auto offsets = destination_offsets();
    with_send_indices([&](auto indices) {
      for (std::size_t m = 0; m + 1 < offsets.size(); ++m) {
        const std::byte* at = arrived.at[m];
        const std::size_t begin = offsets[m], count = offsets[m + 1] - begin;
        for (const auto& field : fields) {
          std::span<double> values(reinterpret_cast<double*>(field.data), field.elements);
          const std::byte* ghosts = field.data + arrived.self_ghost * sizeof(double);
          combine_into(Plus{}, values, indices.subspan(begin, count), at ? at : ghosts);
        }
      }
    });
  }

  /// Whether T is a std::array of arithmetic values.
  template <class T>
  static constexpr bool arithmetic_array() {
    if constexpr (requires { typename T::value_type; std::tuple_size<T>::value; })
      return std::is_same_v<T, std::array<typename T::value_type, std::tuple_size<T>::value>> &&
             std::is_arithmetic_v<typename T::value_type>;
    else
      return false;
  }

  /// Adds b into a (arithmetic, or std::array of arithmetic).
  struct Plus {
    template <class T>
    void operator()(T& a, const T& b) const noexcept {
      if constexpr (std::is_arithmetic_v<T>) {
        a += b;
      } else {
        for (std::size_t c = 0; c < std::size(a); ++c) (*this)(a[c], b[c]);
      }
    }
  };

 private:
  template <class T>
  void resize_one(std::vector<T>& field, std::size_t entries) const {
    field.resize(entries);
  }
  template <class T>
  void resize_one(Shifted<T> field, std::size_t entries) const {
    if (!field.vector) fail_resize("a shifted field given as a span (give the std::vector: shifted(x))");
    field.vector->resize(entries);
    if (entries != size()) return;
    const auto ghosts = ghost_positions();
    auto* bytes = reinterpret_cast<std::byte*>(field.vector->data() + local_count());
    for (std::size_t g = 0; g < ghosts.size(); ++g)
      std::memcpy(bytes + g * sizeof(T) + field.offset, &ghosts[g], sizeof(Point));
  }
  [[noreturn]] static void fail_resize(const char* what);
  template <GhostField F>
  static detail::GhostFieldView view_of(F& field) noexcept {
    using T = std::remove_pointer_t<decltype(std::data(field))>;
    return {reinterpret_cast<std::byte*>(std::data(field)), sizeof(T), static_cast<std::size_t>(std::size(field))};
  }
  template <class T>
  static detail::GhostFieldView view_of(const Shifted<T>& field) noexcept {
    return {reinterpret_cast<std::byte*>(field.values.data()), sizeof(T), field.values.size(), field.offset};
  }
  /// The owned index of every copy sent in 32 bits (empty when a rank owns
  /// 2^32 particles or more, or sends nothing).
  [[nodiscard]] std::span<const std::uint32_t> compact_send_indices() const noexcept;
  /// Calls body(indices) with the owned index of every copy sent: 32-bit
  /// where the plan has them (half the bytes for reverse to read).
  template <class Body>
  void with_send_indices(Body&& body) const {
    const auto compact = compact_send_indices();
    if (!compact.empty() || destination_offsets().back() == 0) body(compact);
    else body(send_indices());
  }
  template <class Combine, class F, class Index>
  static void combine_into(const Combine& combine, F& field, std::span<const Index> indices, const std::byte*& at) {
    using T = std::remove_pointer_t<decltype(std::data(field))>;
    T* values = std::data(field);
    if constexpr (std::is_same_v<Combine, Plus> && arithmetic_array<T>()) {
      // Component by component: a whole T copied out of the buffer stayed
      // on the stack (GCC 12), and every add waited on its reload.
      using E = typename T::value_type;
      for (std::size_t k = 0; k < indices.size(); ++k) {
        // The owners a few copies ahead (inside a step they are cold: the
        // force loop went through every array since): 25 % off the sum.
        if (k + detail::ghost_prefetch < indices.size()) __builtin_prefetch(values + indices[k + detail::ghost_prefetch], 1);
        T& owner = values[indices[k]];
        for (std::size_t c = 0; c < std::tuple_size_v<T>; ++c) {
          E ghost;
          std::memcpy(&ghost, at + k * sizeof(T) + c * sizeof(E), sizeof(E));
          owner[c] += ghost;
        }
      }
    } else {
      for (std::size_t k = 0; k < indices.size(); ++k) {
        T ghost;
        std::memcpy(&ghost, at + k * sizeof(T), sizeof(T));  // the buffer holds no T objects
        combine(values[indices[k]], static_cast<const T&>(ghost));
      }
    }
    at += indices.size() * sizeof(T);
  }
  void begin_forward(std::span<const detail::GhostFieldView> fields);
  void begin_reverse(std::span<const detail::GhostFieldView> fields);
  /// What a reverse operation brought: per destination, a pointer to its
  /// received bytes (contiguous, field-major), or null for this rank's own
  /// images, whose values are in the fields' ghost entries from `self_ghost` on.
  struct Arrived {
    std::vector<const std::byte*> at;
    std::size_t self_ghost = 0;
  };
  /// Waits for the reverse messages.
  Arrived finish_reverse();

  struct State;  // src/ghost/ghost.cpp
  /// A state on `comm`'s shared ghost communicator, with this plan's tags.
  static std::unique_ptr<State> connect(Comm& comm, const GhostOptions& options);
  std::unique_ptr<State> state_;
};

}  // namespace domex

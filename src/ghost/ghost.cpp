// SPDX-License-Identifier: BSD-3-Clause
// GhostPlan: who sends which owned particles to whom (a search of the other
// domains within the cutoff, over a uniform grid of the region this rank's
// particles occupy), one sparse exchange of the shifted positions at the
// build, then persistent point-to-point messages for every update and
// reverse sum.
#include <domex/comm/collective.hpp>
#include <domex/comm/pages.hpp>
#include <domex/decompose/grid.hpp>
#include <domex/exchange/exchange.hpp>
#include <domex/ghost/ghost.hpp>

#include "src/ghost/candidates.hpp"

#include <fmt/format.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <climits>
#include <limits>
#include <memory>
#include <mutex>
#include <numbers>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace domex {

namespace {

constexpr double two_pi = 2 * std::numbers::pi;

/// The duplicate communicator every ghost plan of one Comm sends on (made
/// once: a plan is rebuilt every few steps, an MPI_Comm_dup each time would
/// cost a collective), and the number of plans made on it: plan n uses tags
/// 4n to 4n + 2 (mod the cycle), so plans alive together never match each
/// other's messages, nor any other domex call's.
struct GhostComm {
  explicit GhostComm(Comm& comm) {
    check_mpi(MPI_Comm_dup(comm.get(), &dup), "MPI_Comm_dup");
    check_mpi(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  }
  GhostComm(const GhostComm&) = delete;
  GhostComm& operator=(const GhostComm&) = delete;
  ~GhostComm() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && dup != MPI_COMM_NULL) MPI_Comm_free(&dup);
  }
  MPI_Comm dup = MPI_COMM_NULL;
  int plans = 0;
  static constexpr int tag_sets = 8000;  // MPI guarantees tags up to 32767
};

/// Squared distance from p to a box (0 inside), without a branch: GCC 12
/// turned std::max and the clamp at zero into compare-and-jump pairs whose
/// outcome the predictor missed about half the time (13 ns per exact test,
/// 1e5 particles, cutoff 0.1 width), and kept one even for ternaries.
double distance2(const Point& p, const Box& box) noexcept {
  double sum = 0;
  for (int a = 0; a < 3; ++a) {
    const double below = box.lo[a] - p[a], above = p[a] - box.hi[a];
#if defined(__SSE2__)
    const double d = _mm_cvtsd_f64(_mm_max_sd(_mm_max_sd(_mm_set_sd(below), _mm_set_sd(above)), _mm_setzero_pd()));
#else
    const double outside = above > 0.0 ? above : 0.0;
    const double d = below > outside ? below : outside;
#endif
    sum += d * d;
  }
  return sum;
}

/// Squared distance between two boxes.
double distance2(const Box& a, const Box& b) noexcept {
  double sum = 0;
  for (int axis = 0; axis < 3; ++axis) {
    const double d = std::max({a.lo[axis] - b.hi[axis], 0.0, b.lo[axis] - a.hi[axis]});
    sum += d * d;
  }
  return sum;
}

/// Squared distance in the (x, y) plane from (x, y) to the segment of the ray
/// at angle phi between radii r0 and r1.
double segment_distance2(double x, double y, double phi, double r0, double r1) noexcept {
  const double ux = std::cos(phi), uy = std::sin(phi);
  const double t = std::clamp(x * ux + y * uy, r0, r1);
  const double dx = x - t * ux, dy = y - t * uy;
  return dx * dx + dy * dy;
}

/// Squared Cartesian distance from p to the annular sector box = [r0, r1) x
/// [phi0, phi1) x [z0, z1). Inside the wedge's angles the nearest point is
/// radial; outside them it lies on one of the two radial edges (the arcs'
/// nearest points outside the angles are their end points, on the edges).
double sector_distance2(const Point& p, const Box& box) noexcept {
  const double dz = std::max({box.lo[2] - p[2], 0.0, p[2] - box.hi[2]});
  const double r = std::sqrt(p[0] * p[0] + p[1] * p[1]);
  double phi = std::atan2(p[1], p[0]);
  if (phi < 0) phi += two_pi;
  const bool full = box.hi[1] - box.lo[1] >= two_pi;
  double d2;
  if (full || (phi >= box.lo[1] && phi < box.hi[1])) {
    const double dr = std::max({box.lo[0] - r, 0.0, r - box.hi[0]});
    d2 = dr * dr;
  } else {
    d2 = std::min(segment_distance2(p[0], p[1], box.lo[1], box.lo[0], box.hi[0]),
                  segment_distance2(p[0], p[1], box.hi[1], box.lo[0], box.hi[0]));
  }
  return d2 + dz * dz;
}

/// Cartesian bounding box of an annular sector.
Box sector_bounds(const Box& sector) noexcept {
  Box bounds{{std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(), sector.lo[2]},
             {-std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), sector.hi[2]}};
  auto include = [&](double r, double phi) {
    const double x = r * std::cos(phi), y = r * std::sin(phi);
    bounds.lo[0] = std::min(bounds.lo[0], x), bounds.hi[0] = std::max(bounds.hi[0], x);
    bounds.lo[1] = std::min(bounds.lo[1], y), bounds.hi[1] = std::max(bounds.hi[1], y);
  };
  for (double r : {sector.lo[0], sector.hi[0]}) {
    include(r, sector.lo[1]);
    include(r, sector.hi[1]);
  }
  for (int quarter = 0; quarter < 4; ++quarter) {  // the axes' extremes inside the angles
    const double phi = quarter * std::numbers::pi / 2;
    if (phi >= sector.lo[1] && phi <= sector.hi[1]) include(sector.hi[0], phi);
  }
  return bounds;
}

/// A part of another domain (or a periodic image of any domain) that owned
/// particles may be ghosts of: a rank's box (Cartesian), annular sector
/// (cylindrical) or bucket, moved by minus an image shift s * L, so that a
/// particle at p is within the cutoff of the real domain as its image p + s L
/// when it is within the cutoff of the piece. The exact test measures the
/// image p + s L (the ghost's position, the same sum) against the real
/// domain, as the receiver would: moving the domain instead rounds
/// differently, and far from the origin (coordinates ~1e6) a particle at
/// the cutoff to the last bit could be left out.
struct Piece {
  int rank;
  int image;    ///< (sx + 1) + 3 (sy + 1) + 9 (sz + 1)
  Box real;     ///< where the domain part is, in the geometry's coordinates (sector: r, phi, z)
  Point shift;  ///< s L
  Box bounds;   ///< Cartesian bounding box of `real` moved by -shift (for the search tables)
  std::size_t bucket = 0;  ///< where the build collects the copies for `rank`
};

constexpr int no_shift = 13;
constexpr std::size_t message_piece = std::size_t{1} << 30;  ///< the largest piece of a message (MPI counts are int)

/// The search's slots: an eighth of the cutoff, at most this many per axis.
constexpr long slots_per_cutoff = 8, max_slots = 4096;
static_assert(max_slots <= (1L << ghost_detail::hit_slot_bits), "a slot must fit its field of a hit");

/// The pieces of one decomposition near one region, found for a particle
/// by three one-dimensional tables: per axis, a fine grid over the region
/// whose slots hold the set of pieces (a bitset) whose reach (bounds plus
/// the cutoff) overlaps the slot along that axis. A particle's candidates
/// are the intersection of its three slots' sets: empty for an interior
/// particle (three loads from tables that stay in L1), else a superset of
/// the pieces within the cutoff. Where a (rank, image) has several box
/// pieces (bucket runs), two more sets per axis and slot decide most
/// candidates without a distance test (sure_at()); the rest are tested
/// exactly. The tables replaced a 3-D grid of piece lists (a cell
/// per particle, two dependent look-ups that missed the cache, and 240 us
/// to build at 1e5 particles): at 1e5 uniform particles per rank, np 2,
/// cutoff 0.1 width, the search went from 2.1-2.6 to 1.3-1.6 ms
/// (2026-11-26, Zen 3, instrumented domex-bench ghost).
class Finder {
 public:
  Finder(std::vector<Piece> pieces, const Box& region, double cutoff, bool sectors)
      : pieces_(std::move(pieces)), region_(region), cutoff2_(cutoff * cutoff), sectors_(sectors) {
    words_ = (pieces_.size() + 63) / 64;
    // Each piece's slots along each axis (first, last; empty: first > last).
    std::vector<SlotRanges> piece_slots(pieces_.size(), {{{1, 0}, {1, 0}, {1, 0}}});
    std::vector<std::uint64_t> keys(pieces_.size());
    std::transform(pieces_.begin(), pieces_.end(), keys.begin(), key_of);
    std::sort(keys.begin(), keys.end());
    unique_ = std::adjacent_find(keys.begin(), keys.end()) == keys.end();
    sure_sets_ = !sectors && !unique_;  // (unique boxes: the distance alone decides, see exact())
    for (int a = 0; a < 3; ++a) {
      // Slots of an eighth of the cutoff, at most 4096 per axis: the sets
      // overreach by at most a slot, and a particle whose slot straddles a
      // reach's edge is tested exactly (1e5 uniform particles in a periodic
      // unit box, one rank, cutoff 0.05: a quarter cutoff left 10,713 of
      // 33,324 candidates to the exact test, an eighth 6,930). The grid
      // reaches half a slot beyond the region: where the region is a
      // rank's box, the pieces' reaches (box edges plus the cutoff) then end
      // mid-slot, not on a slot edge that the rounding slack pushes a whole
      // slot further (+200 us of failed exact tests at 1e5 particles,
      // cutoff 0.1 width, np 2).
      grid_.lo[a] = region.lo[a] - cutoff / 16;
      grid_.hi[a] = region.hi[a] + cutoff / 16;
      const double extent = grid_.extent(a);
      slots_[a] = std::clamp(static_cast<long>(std::ceil(extent / (cutoff / slots_per_cutoff))), 1L, max_slots);
      inverse_slot_[a] = extent > 0 ? static_cast<double>(slots_[a]) / extent : 0.0;
      last_[a] = static_cast<double>(slots_[a] - 1);
      const std::size_t cells = static_cast<std::size_t>(slots_[a]) * words_;
      masks_[a].assign(cells, 0);
      inside_[a].assign(sure_sets_ ? cells : 0, 0);
      sure_[a].assign(sure_sets_ ? cells : 0, 0);
      // A slot's coordinates, widened by what rounding in slot() can move a
      // point across its edges.
      const double width = extent / static_cast<double>(slots_[a]);
      const double slack = 1e-9 * (cutoff + extent + std::abs(grid_.lo[a]) + std::abs(grid_.hi[a]));
      for (std::size_t n = 0; n < pieces_.size(); ++n) {
        const Box& b = pieces_[n].bounds;
        // (the reach widened by the slack: a particle within the cutoff by
        // less than a rounding error is a candidate all the same)
        if (b.lo[a] - cutoff - slack > grid_.hi[a] || b.hi[a] + cutoff + slack < grid_.lo[a]) continue;
        const std::size_t lo = slot(a, b.lo[a] - cutoff - slack), hi = slot(a, b.hi[a] + cutoff + slack);
        piece_slots[n][static_cast<std::size_t>(a)] = {static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi)};
        const std::size_t word = n / 64;
        const std::uint64_t bit = std::uint64_t{1} << (n % 64);
        for (std::size_t k = lo; k <= hi; ++k) {
          masks_[a][k * words_ + word] |= bit;
          if (!sure_sets_) continue;
          const double first = grid_.lo[a] + static_cast<double>(k) * width - slack;
          const double last = (k + 1 == static_cast<std::size_t>(slots_[a]) ? grid_.hi[a]
                                                                             : first + slack + width) + slack;
          // Every point of the slot is inside the box along a (no distance
          // along a), or nearer than the cutoff (with a margin for rounding).
          if (first >= b.lo[a] && last <= b.hi[a]) inside_[a][k * words_ + word] |= bit;
          const double reach = cutoff - slack;
          if (first >= b.lo[a] - reach && last <= b.hi[a] + reach) sure_[a][k * words_ + word] |= bit;
        }
      }
    }
    if (words_ == 1) interior(piece_slots);
  }

  /// Whether every piece has its own (rank, image) (multisection): a
  /// particle then never finds one twice.
  [[nodiscard]] bool unique() const noexcept { return unique_; }

  /// What a search counted: the particles with a candidate piece (the rest
  /// are interior), the blocks that went to exact_tests(), and the
  /// particles whose first pass was skipped as deep inside the region.
  struct Searched {
    std::size_t tested = 0, vector_blocks = 0, interior_skipped = 0;
  };

  /// Calls found(i, image, piece, true) once for every particle i and
  /// every (rank, image) with a piece within the cutoff of it (image =
  /// points[i] + piece.shift), in particle order, then piece order (but
  /// for the blocks exact_tests() takes, below); found
  /// returns false for a repeat (rank, image) it already holds. Some pieces
  /// beyond the cutoff are offered too, as found(..., false), to be
  /// dropped. prepare(n) comes before each block of n particles. Returns
  /// what it counted (Searched), or nothing, early, when a point lies
  /// outside the region or is not finite (the search then holds for no
  /// point). Blocks of particles go in two
  /// passes: their candidate sets (candidates(): vector code, no branch),
  /// then, for the few that have any, the candidates sure from the slots
  /// and the exact tests of the others. Where every piece is a box with its
  /// own (rank, image), a block whose candidates share their pieces goes
  /// to exact_tests() instead, which appends the copies it keeps at the
  /// ends of their buckets (ends(bucket): the two end pointers) without
  /// found(): piece by piece, in particle order within each. At 1e5 uniform
  /// particles per rank in cell order, np 2, cutoff half a box width
  /// (311,019 ghosts per rank), the rebuild went from 3.2-4.3 to 1.9-2.5 ms
  /// (2026-11-28, Xeon, domex-bench ghost --order cells; docs/performance.md).
  /// (Inlined into the build's search, as it was before the vector tests
  /// made it larger: called, the one-pair-at-a-time path was 10-15 % slower,
  /// 1e5 particles per rank in random order, np 2.)
  template <class Found, class Prepare, class Ends>
  [[gnu::always_inline]] std::optional<Searched> find_all(std::span<const Point> points, Found&& found,
                                                          Prepare&& prepare, Ends&& ends) const {
    Searched counted;
    constexpr std::size_t block = 256;
    // (a full vector past the last; aligned: a vector store across two cache lines is two)
    alignas(64) std::array<std::uint64_t, block + ghost_detail::vector_slack> sets, hits;
    alignas(64) std::array<double, block + ghost_detail::vector_slack> hit_x, hit_y, hit_z;
    ghost_detail::Hits out{sets.data(), hits.data(), hit_x.data(), hit_y.data(), hit_z.data()};
    const ghost_detail::SlotTables tables{
        .lo = {region_.lo[0], region_.lo[1], region_.lo[2]},
        .hi = {region_.hi[0], region_.hi[1], region_.hi[2]},
        .origin = {grid_.lo[0], grid_.lo[1], grid_.lo[2]},
        .inverse = {inverse_slot_[0], inverse_slot_[1], inverse_slot_[2]},
        .last = {last_[0], last_[1], last_[2]},
        .masks = {masks_[0].data(), masks_[1].data(), masks_[2].data()},
        .interior_lo = {interior_lo_[0], interior_lo_[1], interior_lo_[2]},
        .interior_hi = {interior_hi_[0], interior_hi_[1], interior_hi_[2]}};
    // The vector exact tests, where every piece has its own (rank, image)
    // and is a box: the pieces' table, with their buckets' ends.
    std::unique_ptr<ghost_detail::PieceTable> table;
    if (words_ == 1 && unique_ && !sectors_) {
      table = std::make_unique<ghost_detail::PieceTable>();
      for (std::size_t b = 0; b < pieces_.size(); ++b) {
        const Piece& piece = pieces_[b];
        for (int a = 0; a < 3; ++a) {
          table->lo[a][b] = piece.real.lo[a];
          table->hi[a][b] = piece.real.hi[a];
          table->shift[a][b] = piece.shift[a];
        }
        table->code[b] = static_cast<std::uint64_t>(piece.image);
        std::tie(table->copy_end[b], table->position_end[b]) = ends(piece.bucket);
      }
    }
    const bool has_interior = interior_lo_[0] <= interior_hi_[0];
    bool skip_interior = true;
    for (std::size_t first = 0; first < points.size(); first += block) {
      const std::size_t count = std::min(block, points.size() - first);
      prepare(count);
      if (words_ != 1) {  // more than 64 pieces: one particle at a time
        for (std::size_t k = 0; k < count; ++k) {
          const Point& p = points[first + k];
          for (int a = 0; a < 3; ++a)
            if (!(p[a] >= region_.lo[a] && p[a] <= region_.hi[a])) return std::nullopt;
          counted.tested += test(first + k, p, found);
        }
        continue;
      }
      bool inside = true;
      const std::size_t n = ghost_detail::candidates(points.subspan(first, count), tables, out, inside,
                                                     has_interior && (skip_interior || first % (8 * block) == 0));
      // The interior test for the next block where this one skipped at
      // least an eighth of its particles (cell order: runs of interior
      // particles; in random order a whole vector seldom is: testing every
      // block cost 6-8 % of the rebuild at 1e5 particles, cutoff 0.1 width,
      // np 2, Zen 4), and for every 8th block, which probes. The output is
      // the same either way.
      skip_interior = out.interior * 8 >= count;
      counted.interior_skipped += out.interior;
      if (!inside) return std::nullopt;
      counted.tested += n;
      if (table) {
        // Piece by piece over the block's candidates (a vector of them per
        // step) where the (particle, piece) pairs to test are at least 2 per
        // step of eight: the candidates share their pieces (particles in
        // cell order, or a cutoff that makes most of them candidates). 1e5
        // particles per rank, np 2, Xeon, pairs per step of eight: in cell
        // order 2.2-5, and the vector form 1.5-1.9x faster at half a box
        // width (AVX-512; AVX2 1.5x); in random order 0.7-2.4: at half a
        // width clustered particles have 1.44, and were 5-10 % faster in
        // AVX-512 vectors but 20 % slower in AVX2 ones; at a whole width
        // 2.24, 12 % faster (AVX-512) or even (AVX2). Eight whatever this
        // CPU's lanes: the choice sets the ghosts' order (piece, then
        // particle, in such a block), which must not depend on the machine.
        constexpr std::size_t decision_lanes = 8;
        const std::size_t steps =
            (n + decision_lanes - 1) / decision_lanes * static_cast<std::size_t>(std::popcount(out.pieces));
        if (out.pairs >= 2 * steps) {
          ghost_detail::exact_tests(points.subspan(first, count), out, n, first, out.pieces, *table, cutoff2_);
          ++counted.vector_blocks;
          continue;
        }
      }
      for (std::size_t h = 0; h < n; ++h) {
        const std::uint64_t hit = hits[h];
        const std::size_t i = first + ghost_detail::hit_point(hit);
        exact(i, points[i], sets[h],
              sure_at(ghost_detail::hit_slot(hit, 0), ghost_detail::hit_slot(hit, 1), ghost_detail::hit_slot(hit, 2)),
              0, found);
      }
    }
    return counted;
  }

 private:
  static std::uint64_t key_of(const Piece& piece) noexcept {
    return (std::uint64_t(std::uint32_t(piece.rank)) << 5) | std::uint64_t(piece.image);
  }
  /// The last (rank, image) keys reported for one particle: repeats are near.
  struct Seen {
    std::uint64_t keys[4] = {~0ull, ~0ull, ~0ull, ~0ull};
    int next = 0;
  };
  /// The pieces (of word w) certainly within the cutoff of every point of
  /// the slots x, y, z: inside a piece along two axes and nearer than the
  /// cutoff along the third, so the distance is at most the cutoff (boxes
  /// repeating a (rank, image) only: none for sectors and unique boxes).
  std::uint64_t sure_at(std::size_t x, std::size_t y, std::size_t z, std::size_t w = 0) const noexcept {
    if (!sure_sets_) return 0;
    x = x * words_ + w, y = y * words_ + w, z = z * words_ + w;
    const std::uint64_t inside_x = inside_[0][x], inside_y = inside_[1][y], inside_z = inside_[2][z];
    return (sure_[0][x] & inside_y & inside_z) | (inside_x & sure_[1][y] & inside_z) |
           (inside_x & inside_y & sure_[2][z]);
  }
  template <class Found>
  bool test(std::size_t i, const Point& p, Found& found) const {
    const std::size_t x = slot(0, p[0]), y = slot(1, p[1]), z = slot(2, p[2]);
    bool any = false;
    Seen seen;
    for (std::size_t w = 0; w < words_; ++w) {
      const std::uint64_t set = masks_[0][x * words_ + w] & masks_[1][y * words_ + w] & masks_[2][z * words_ + w];
      any |= set != 0;
      exact(i, p, set, sure_at(x, y, z, w), w, found, &seen);
    }
    return any;
  }
  /// The candidates `set` (pieces 64 w + bit) offered to found(): within
  /// the cutoff where in `sure`, else by the exact test.
  template <class Found>
  void exact(std::size_t i, const Point& p, std::uint64_t set, std::uint64_t sure, std::size_t w, Found& found,
             Seen* across = nullptr) const {
    if (unique_ && !sectors_) {
      // Every candidate measured, and offered with its verdict: the sink
      // appends it either way and keeps it only if within, so that no
      // branch hangs on a verdict (near the cutoff a coin toss for the
      // predictor: 29 ns per exact test with the branches, 1e5 particles,
      // cutoff 0.1 width, np 2).
      // The distance alone decides, not the sure bit: exactly the vector
      // tests' verdict (ExactTests), whichever way a block goes (the sure
      // sets hold for the slots up to a rounding slack, which a huge period
      // against a small cutoff could exceed; they are not built for them).
      for (; set; set &= set - 1) {
        const int bit = std::countr_zero(set);
        const Piece& piece = pieces_[w * 64 + static_cast<std::size_t>(bit)];
        const Point image{p[0] + piece.shift[0], p[1] + piece.shift[1], p[2] + piece.shift[2]};
        found(i, image, piece, distance2(image, piece.real) <= cutoff2_);
      }
      return;
    }
    Seen local;
    Seen& seen = across ? *across : local;
    while (set) {
      const int bit = std::countr_zero(set);
      const std::size_t n = w * 64 + static_cast<std::size_t>(bit);
      set &= set - 1;
      const Piece& piece = pieces_[n];
      const Point image{p[0] + piece.shift[0], p[1] + piece.shift[1], p[2] + piece.shift[2]};
      if (!((sure >> bit) & 1)) {
        const double d2 = sectors_ ? sector_distance2(image, piece.real) : distance2(image, piece.real);
        if (d2 > cutoff2_) continue;
      }
      if (unique_) {  // one piece per (rank, image): no repeat to look for
        found(i, image, piece, true);
        continue;
      }
      const std::uint64_t key = key_of(piece);
      if (key == seen.keys[0] || key == seen.keys[1] || key == seen.keys[2] || key == seen.keys[3]) continue;
      if (!found(i, image, piece, true)) continue;  // a repeat found further back
      seen.keys[seen.next] = key;
      seen.next = (seen.next + 1) & 3;
    }
  }
  /// First and last slot along each axis (empty: first > last).
  using SlotRanges = std::array<std::array<std::int64_t, 2>, 3>;
  /// The box of slots (interior_lo_, interior_hi_) whose sets are all
  /// empty, from the pieces' slots: the whole grid, cut for each piece
  /// whose slots overlap it on every axis, below or above that piece's
  /// slots along the axis that keeps the most (possibly to nothing).
  /// Pieces that hold the box's whole extent on two axes (a face's
  /// neighbours) go first: they leave one way to cut. Where the region is a
  /// rank's box, what remains is about the box less the cutoff (and a slot
  /// or two) on every side that has neighbours.
  void interior(const std::vector<SlotRanges>& piece_slots) {
    SlotRanges box{{{0, slots_[0] - 1}, {0, slots_[1] - 1}, {0, slots_[2] - 1}}};
    const auto volume = [](const SlotRanges& b) {  // (at most 4096^3)
      std::int64_t v = 1;
      for (const auto& [first, last] : b) v *= std::max<std::int64_t>(last - first + 1, 0);
      return v;
    };
    const auto overlaps = [&](const SlotRanges& r) {
      for (std::size_t a = 0; a < 3; ++a)
        if (r[a][0] > r[a][1] || r[a][1] < box[a][0] || r[a][0] > box[a][1]) return false;
      return true;
    };
    const auto covered_axes = [&](const SlotRanges& r) {
      int axes = 0;
      for (std::size_t a = 0; a < 3; ++a) axes += r[a][0] <= box[a][0] && r[a][1] >= box[a][1];
      return axes;
    };
    std::vector<std::size_t> order(piece_slots.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t m, std::size_t n) {
      return covered_axes(piece_slots[m]) > covered_axes(piece_slots[n]);
    });
    for (const std::size_t n : order) {
      const SlotRanges& r = piece_slots[n];
      if (!overlaps(r)) continue;
      SlotRanges best = box;
      std::int64_t best_volume = 0;
      for (std::size_t a = 0; a < 3; ++a)
        for (const std::array<std::int64_t, 2> kept :
             {std::array<std::int64_t, 2>{box[a][0], r[a][0] - 1}, {r[a][1] + 1, box[a][1]}}) {
          SlotRanges cut = box;
          cut[a] = kept;
          if (const std::int64_t v = volume(cut); v > best_volume) {
            best = cut;
            best_volume = v;
          }
        }
      if (best_volume == 0) return;  // (no interior)
      box = best;
    }
    for (std::size_t a = 0; a < 3; ++a) {
      interior_lo_[a] = box[a][0];
      interior_hi_[a] = box[a][1];
    }
  }
  /// The slot of coordinate v along axis a, clamped without a branch (NaN:
  /// slot 0; positions were checked finite, bounds may be infinite).
  std::size_t slot(int a, double v) const noexcept {
    return ghost_detail::slot_of(v, grid_.lo[a], inverse_slot_[a], last_[a]);
  }

  std::vector<Piece> pieces_;
  Box region_, grid_;  ///< the points' region, and the slots' (half a slot wider)
  double cutoff2_;
  bool sectors_;
  bool unique_ = true;
  std::size_t words_ = 0;
  long slots_[3] = {1, 1, 1};
  double inverse_slot_[3] = {0, 0, 0}, last_[3] = {0, 0, 0};
  std::vector<std::uint64_t> masks_[3];
  /// Slots whose sets are all empty (none: lo > hi), for candidates().
  std::int64_t interior_lo_[3] = {1, 1, 1}, interior_hi_[3] = {0, 0, 0};
  /// Per axis and slot, where sure_sets_: the pieces whose extent along the
  /// axis holds the whole slot, and those nearer than the cutoff to all of it.
  bool sure_sets_ = false;
  std::vector<std::uint64_t> inside_[3], sure_[3];
};

/// The image shifts s in {-1, 0, 1}^3 allowed by the periodic axes.
std::vector<int> images_of(const std::array<bool, 3>& periodic) {
  std::vector<int> images;
  for (int sz = -1; sz <= 1; ++sz)
    for (int sy = -1; sy <= 1; ++sy)
      for (int sx = -1; sx <= 1; ++sx)
        if ((sx == 0 || periodic[0]) && (sy == 0 || periodic[1]) && (sz == 0 || periodic[2]))
          images.push_back((sx + 1) + 3 * (sy + 1) + 9 * (sz + 1));
  return images;
}

std::array<int, 3> image_vector(int image) noexcept { return {image % 3 - 1, (image / 3) % 3 - 1, image / 9 - 1}; }

/// `box` moved by minus an image shift (a sector's z only: its shift is along z).
Box moved_back(Box box, const Point& shift) noexcept {
  for (int a = 0; a < 3; ++a) box.lo[a] -= shift[a], box.hi[a] -= shift[a];
  return box;
}

/// How far the pieces are looked for: the cutoff, widened by what rounding
/// can move a moved piece (a box plus or minus a period) at these
/// coordinates. The exact test decides; a piece left out here is a ghost
/// lost (a particle at the cutoff to the last bit, coordinates ~1e6).
double piece_reach(const Box& domain, const Box& region, double cutoff) noexcept {
  double scale = cutoff;
  for (int a = 0; a < 3; ++a)
    scale += std::abs(domain.lo[a]) + std::abs(domain.hi[a]) + std::abs(region.lo[a]) + std::abs(region.hi[a]);
  return cutoff + 1e-9 * scale;
}

/// The search region: the Cartesian bounding box of the particles, in one
/// pass that also tells whether every coordinate is finite (x - x is 0 for
/// finite x, NaN for NaN and infinities, and a sum of such terms is 0 only
/// when all are). The coordinates are read as one array, four particles
/// (twelve values, axis = value % 3) per step, in six pairs of lanes on
/// x86-64 (SSE2: minpd is `a < b ? a : b`, as the scalar loop). 1e5
/// particles on a Zen 3, fastest of 200: 187 us in scalar code over the
/// twelve lanes, 93 us in SSE2 pairs.
Box bounding_box(std::span<const Point> positions, bool* finite = nullptr) noexcept {
  static_assert(sizeof(Point) == 3 * sizeof(double), "positions are read as one array of doubles");
  constexpr double inf = std::numeric_limits<double>::infinity();
  constexpr std::size_t lanes = 12;
  alignas(16) double lo[lanes], hi[lanes], bad[lanes];
  for (std::size_t l = 0; l < lanes; ++l) lo[l] = inf, hi[l] = -inf, bad[l] = 0;
  const double* x = positions.empty() ? nullptr : positions.data()->data();
  const std::size_t values = 3 * positions.size();
#if defined(__SSE2__)
  const std::size_t whole = values - values % lanes;
  __m128d vlo[6], vhi[6], vbad[6];
  for (int l = 0; l < 6; ++l) vlo[l] = _mm_set1_pd(inf), vhi[l] = _mm_set1_pd(-inf), vbad[l] = _mm_setzero_pd();
  for (std::size_t i = 0; i < whole; i += lanes)
    for (int l = 0; l < 6; ++l) {
      const __m128d v = _mm_loadu_pd(x + i + 2 * l);
      vlo[l] = _mm_min_pd(v, vlo[l]);
      vhi[l] = _mm_max_pd(v, vhi[l]);
      vbad[l] = _mm_add_pd(vbad[l], _mm_sub_pd(v, v));
    }
  for (int l = 0; l < 6; ++l) {
    _mm_store_pd(lo + 2 * l, vlo[l]);
    _mm_store_pd(hi + 2 * l, vhi[l]);
    _mm_store_pd(bad + 2 * l, vbad[l]);
  }
  std::size_t i = whole;
#else
  std::size_t i = 0;
#endif
  for (; i < values; ++i) {  // (with SSE2 the last 0-3 particles)
    const double v = x[i];
    const std::size_t l = i % lanes;
    lo[l] = v < lo[l] ? v : lo[l];
    hi[l] = v > hi[l] ? v : hi[l];
    bad[l] += v - v;
  }
  Box box;
  double sum = 0;
  for (int a = 0; a < 3; ++a) box.lo[a] = inf, box.hi[a] = -inf;
  for (std::size_t l = 0; l < lanes; ++l) {
    box.lo[l % 3] = std::min(box.lo[l % 3], lo[l]);
    box.hi[l % 3] = std::max(box.hi[l % 3], hi[l]);
    sum += bad[l];
  }
  if (finite) *finite = sum == 0;
  return box;
}

}  // namespace

// ---------------------------------------------------------------------------

struct GhostPlan::State {
  Comm* comm = nullptr;
  MPI_Comm mpi = MPI_COMM_NULL;
  int tag = 0;  ///< forward; reverse is tag + 1, the build's positions tag + 2
  GhostOptions options;
  Box domain;                           ///< the decomposition's domain at the build
  std::array<bool, 3> periodic{};       ///< axes with image shifts (cylindrical: z only)

  std::size_t local = 0;
  std::vector<Point> ghost_positions;
  std::vector<int> sources;
  std::vector<std::size_t> source_offsets{0};
  std::vector<int> destinations;
  std::vector<std::size_t> destination_offsets{0};
  std::size_t sent = 0;                 ///< copies sent (destination_offsets.back())
  std::vector<std::size_t> shifted;     ///< uncoded: the copies (positions in the send list) with a non-zero shift
  /// What update() and reverse read, compact (they are bound by the bytes
  /// they read): each copy's owned index in 32 bits (empty when a rank owns
  /// 2^32 particles or more) and its shift as its image's code into
  /// `code_shifts` (empty when a position was wrapped into the periodic
  /// box: its shift includes the wrap).
  std::vector<std::uint32_t> compact_indices;
  std::vector<std::uint8_t> shift_codes;
  std::array<Point, 27> code_shifts{};
  /// The same in full, for send_indices() and send_shifts(): made at the
  /// build only where there is no compact form, else on their first call
  /// (a build writes 32 bytes less per copy).
  mutable std::vector<std::size_t> send_indices;
  mutable std::vector<Point> send_shifts;
  std::unique_ptr<std::once_flag> expanded = std::make_unique<std::once_flag>();
  /// Fills send_indices and send_shifts from the compact forms (once per build).
  void expand() const {
    std::call_once(*expanded, [this] {
      if (!compact_indices.empty()) send_indices.assign(compact_indices.begin(), compact_indices.end());
      if (!shift_codes.empty()) {
        send_shifts.resize(shift_codes.size());
        for (std::size_t k = 0; k < shift_codes.size(); ++k) send_shifts[k] = code_shifts[shift_codes[k]];
      }
    });
  }
  GhostStats stats;

  /// What the search found for one rank near this one, in particle order
  /// (a block the vector exact tests take: in piece order, then particle order):
  /// `count` copies as (owned index << 5) | image, and their shifted
  /// positions (written while the particle is at hand: read back by index
  /// later, they missed the cache). The arrays are longer than `count`:
  /// each copy offered is written at the ends, which move on only if it is
  /// kept (no branch). The ends are pointers, not a count: a count of type
  /// std::size_t may alias the copies' std::uint64_t, and was reloaded
  /// after every store.
  struct Bucket {
    std::vector<std::uint64_t> copies;
    std::vector<Point> positions;
    std::uint64_t* copy_end = nullptr;
    Point* position_end = nullptr;
    std::size_t most = 0;  ///< copies one particle can add: its (rank, image) pieces, at most 27
    [[nodiscard]] std::size_t count() const noexcept { return static_cast<std::size_t>(copy_end - copies.data()); }
  };
  /// The build's working arrays, and the previous plan's, kept for the next
  /// build (a rebuild every few steps maps no new pages).
  struct Scratch {
    std::vector<Bucket> buckets;
    std::vector<std::size_t> indices, shifted;
    std::vector<Point> shifts, ghosts;
    std::vector<std::uint32_t> compact_indices;
    std::vector<std::uint8_t> shift_codes;
  } scratch;

  /// Persistent messages of one direction and set of fields, kept while the
  /// plan lives (an application alternates a few: positions forward, forces
  /// back, the same arrays every step). The owner side (owned values going
  /// out, or sums coming back) is packed in a buffer; forward, the ghost
  /// side is received straight into the fields' ghost entries (one derived
  /// datatype per message over the fields' blocks: no unpacking), unless a
  /// message exceeds 1 GiB; reverse, it is packed to go out from huge pages.
  struct Channel {
    bool reverse = false;
    std::size_t record = 0;
    std::vector<std::pair<const std::byte*, std::size_t>> fields;  ///< direct: data and element size; empty: buffered
    detail::PageBuffer owner_side, ghost_side;
    std::vector<MPI_Request> sends, receives;
    std::vector<int> receive_peers;  ///< the rank each receive comes from
    std::vector<MPI_Status> statuses;
    std::vector<MPI_Datatype> types;
  };
  std::vector<Channel> channels;
  std::vector<detail::PageBuffer> spare;  ///< freed channels' buffers, for the next ones
  int active = -1;  ///< channel of the operation in flight
  std::vector<detail::GhostFieldView> active_fields;

  ~State() { free_channels(); }

  static void free_channel(Channel& channel) noexcept {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (auto* requests : {&channel.sends, &channel.receives})
      for (auto& request : *requests)
        if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
    for (auto& type : channel.types) MPI_Type_free(&type);
  }
  /// Frees a channel's requests and types and keeps its buffers as spares
  /// (their pages are mapped).
  void retire(Channel& channel) noexcept {
    free_channel(channel);
    for (auto* buffer : {&channel.owner_side, &channel.ghost_side})
      if (buffer->capacity() > 0 && spare.size() < 8) spare.push_back(std::move(*buffer));
  }
  void free_channels() noexcept {
    for (auto& channel : channels) retire(channel);
    channels.clear();
    active = -1;
  }
  /// The first ghost entry of this rank's own periodic images (meaningful
  /// only when this rank is one of its own sources).
  [[nodiscard]] std::size_t own_ghosts() const {
    const auto s = std::lower_bound(sources.begin(), sources.end(), rank()) - sources.begin();
    return local + source_offsets[static_cast<std::size_t>(s)];
  }
  /// A buffer of `size` bytes, from the spares where one is left.
  detail::PageBuffer buffer(std::size_t size) {
    detail::PageBuffer made;
    if (size == 0) return made;
    if (!spare.empty()) {  // the largest, so that it need not grow
      auto largest = std::max_element(spare.begin(), spare.end(),
                                      [](const auto& a, const auto& b) { return a.capacity() < b.capacity(); });
      made = std::move(*largest);
      spare.erase(largest);
    }
    made.resize(size);
    return made;
  }
  [[nodiscard]] int rank() const noexcept { return comm->rank(); }
  /// The channel for a direction and these fields, made on first use.
  int channel(bool reverse, std::span<const detail::GhostFieldView> fields);
  /// What is wrong with an operation's fields on this rank ("" if nothing).
  [[nodiscard]] std::string problem(std::string_view call, std::span<const detail::GhostFieldView> fields) const;
  /// The agreement of every operation: one MPI_Allreduce of "some rank has
  /// a problem" on the plan's communicator (an MPI_Iallreduce overlapped
  /// with the packing was slower here: Open MPI's non-blocking collectives
  /// progress only inside MPI calls); on a problem every rank throws
  /// (fail_together) and nothing is sent.
  void agree_on(std::string_view call, const std::string& problem) const;
  /// The start of every operation: its fields checked here (GhostChecks::
  /// local) or on every rank (collective); on a problem this rank refuses
  /// the operation (refuse()), or every rank throws.
  void check(std::string_view call, bool reverse, std::span<const detail::GhostFieldView> fields);
  /// An operation this rank cannot run (`problem`) while its partners run
  /// theirs: it sends each of them an empty message in place of each piece
  /// of its own (they throw in finish() naming it), receives what they send
  /// into scratch (so no message is left to match a later operation), and
  /// throws `problem`.
  [[noreturn]] void refuse(std::string_view call, bool reverse, std::size_t record, const std::string& problem);
  /// Waits for a channel's receives, then its sends; throws naming a
  /// partner that refused the operation (an empty message where a full one
  /// was due).
  void wait_all(Channel& channel, std::string_view call);
  /// The build shared by all decompositions. `periodic`: axes whose image
  /// is a shift by `period`; `pieces_near(region)`: the pieces within the
  /// cutoff of a Cartesian region. Strong guarantee.
  template <class PiecesNear>
  void build(std::span<const Point> positions, const std::array<bool, 3>& periodic, const Box& domain, bool sectors,
             const PiecesNear& pieces_near, const Box* usual = nullptr);
};

namespace {

/// Persistent requests for a buffer, split in pieces of at most 1 GiB (MPI
/// counts are int; the pieces of one message match in order, same tag).
void persistent(bool send, std::byte* data, std::size_t bytes, int peer, int tag, MPI_Comm comm,
                std::vector<MPI_Request>& requests) {
  constexpr std::size_t piece = message_piece;
  std::size_t at = 0;
  do {
    const int count = static_cast<int>(std::min(piece, bytes - at));
    MPI_Request request = MPI_REQUEST_NULL;
    if (send)
      check_mpi(MPI_Send_init(data + at, count, MPI_BYTE, peer, tag, comm, &request), "MPI_Send_init");
    else
      check_mpi(MPI_Recv_init(data + at, count, MPI_BYTE, peer, tag, comm, &request), "MPI_Recv_init");
    requests.push_back(request);
    at += static_cast<std::size_t>(count);
  } while (at < bytes);
}

}  // namespace

int GhostPlan::State::channel(bool reverse, std::span<const detail::GhostFieldView> fields) {
  std::size_t record = 0;
  for (const auto& field : fields) record += field.element_size;
  constexpr std::size_t direct_limit = std::size_t{1} << 30;
  std::size_t largest = 0;  // the largest ghost-side message
  for (std::size_t s = 0; s + 1 < source_offsets.size(); ++s)
    largest = std::max(largest, (source_offsets[s + 1] - source_offsets[s]) * record);
  std::vector<std::pair<const std::byte*, std::size_t>> key;
  // Forward messages arrive straight in the ghost entries; reverse ones are
  // packed (a contiguous copy) to go out from huge pages, which Open MPI's
  // single-copy path reads twice as fast as a field's 4 KiB pages.
  if (largest <= direct_limit && !reverse)
    for (const auto& field : fields) key.emplace_back(field.data, field.element_size);
  for (std::size_t c = 0; c < channels.size(); ++c)
    if (channels[c].reverse == reverse && channels[c].record == record && channels[c].fields == key)
      return static_cast<int>(c);
  if (channels.size() == 4) {  // the oldest goes
    retire(channels.front());
    channels.erase(channels.begin());
  }
  Channel& made = channels.emplace_back();
  made.reverse = reverse;
  made.record = record;
  made.fields = std::move(key);
  const int message_tag = tag + (reverse ? 1 : 0);
  const int me = rank();
  // Owner side: forward, owned copies out to the destinations; reverse, the
  // ghosts' values back from them.
  made.owner_side = buffer(destination_offsets.back() * record);
  auto& owner_requests = reverse ? made.receives : made.sends;
  for (std::size_t m = 0; m < destinations.size(); ++m)
    if (destinations[m] != me) {
      persistent(!reverse, made.owner_side.data() + destination_offsets[m] * record,
                 (destination_offsets[m + 1] - destination_offsets[m]) * record, destinations[m], message_tag, mpi,
                 owner_requests);
      if (reverse) made.receive_peers.resize(made.receives.size(), destinations[m]);
    }
  // Ghost side: forward, ghosts in from the sources; reverse, back to them.
  auto& ghost_requests = reverse ? made.sends : made.receives;
  if (made.fields.empty()) made.ghost_side = buffer(source_offsets.back() * record);
  for (std::size_t s = 0; s < sources.size(); ++s) {
    if (sources[s] == me) continue;
    const std::size_t begin = source_offsets[s], count = source_offsets[s + 1] - begin;
    if (made.fields.empty()) {
      persistent(reverse, made.ghost_side.data() + begin * record, count * record, sources[s], message_tag, mpi,
                 ghost_requests);
      if (!reverse) made.receive_peers.resize(made.receives.size(), sources[s]);
      continue;
    }
    void* at = MPI_BOTTOM;
    int elements = 1;
    MPI_Datatype type = MPI_BYTE;
    if (fields.size() == 1) {
      at = fields[0].data + (local + begin) * fields[0].element_size;
      elements = static_cast<int>(count * record);
    } else {  // the message's block of every field, in field order
      std::vector<int> lengths(fields.size());
      std::vector<MPI_Aint> addresses(fields.size());
      std::vector<MPI_Datatype> bytes(fields.size(), MPI_BYTE);
      for (std::size_t f = 0; f < fields.size(); ++f) {
        lengths[f] = static_cast<int>(count * fields[f].element_size);
        check_mpi(MPI_Get_address(fields[f].data + (local + begin) * fields[f].element_size, &addresses[f]),
                  "MPI_Get_address");
      }
      check_mpi(MPI_Type_create_struct(static_cast<int>(fields.size()), lengths.data(), addresses.data(), bytes.data(),
                                       &type),
                "MPI_Type_create_struct");
      check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
      made.types.push_back(type);
    }
    MPI_Request request = MPI_REQUEST_NULL;  // direct: forward only
    check_mpi(MPI_Recv_init(at, elements, type, sources[s], message_tag, mpi, &request), "MPI_Recv_init");
    ghost_requests.push_back(request);
    made.receive_peers.push_back(sources[s]);
  }
  return static_cast<int>(channels.size()) - 1;
}

std::string GhostPlan::State::problem(std::string_view call, std::span<const detail::GhostFieldView> fields) const {
  if (active >= 0) return "an operation of this plan is still in flight (call finish() first)";
  const std::size_t size = local + ghost_positions.size();
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (fields[f].elements != size)
      return fmt::format("field {} has {} entries; the plan was built for {} owned + {} ghosts = {} (rebuild "
                         "the plan after the particle count changes)",
                         f, fields[f].elements, local, ghost_positions.size(), size);
    if (fields[f].shift_at >= 0 && call == "GhostPlan::reverse")
      return fmt::format("field {} is shifted: positions have no reverse", f);
    if (fields[f].shift_at >= 0 && static_cast<std::size_t>(fields[f].shift_at) + sizeof(Point) > fields[f].element_size)
      return fmt::format("field {}: shifted Point at byte {} lies outside its {}-byte element", f, fields[f].shift_at,
                         fields[f].element_size);
  }
  return {};
}

void GhostPlan::State::agree_on(std::string_view call, const std::string& problem) const {
  int bad = problem.empty() ? 0 : 1;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, mpi), "MPI_Allreduce");
  if (bad) fail_together(*comm, call, problem);
}

void GhostPlan::State::check(std::string_view call, bool reverse, std::span<const detail::GhostFieldView> fields) {
  const std::string found = problem(call, fields);
  if (options.checks == GhostChecks::collective) return agree_on(call, found);
  if (found.empty()) return;
  if (active >= 0) fail(call, found);  // this rank's own messages are still in flight: nothing to complete
  std::size_t record = 0;
  for (const auto& field : fields) record += field.element_size;
  refuse(call, reverse, record, found);
}

void GhostPlan::State::refuse(std::string_view call, bool reverse, std::size_t record, const std::string& problem) {
  // Forward, this rank sends to its destinations and receives from its
  // sources; reverse, the other way. Messages go in pieces of at most 1 GiB
  // (persistent()), so the partners wait for that many pieces.
  const auto& out_ranks = reverse ? sources : destinations;
  const auto& out_offsets = reverse ? source_offsets : destination_offsets;
  const auto& in_ranks = reverse ? destinations : sources;
  const auto& in_offsets = reverse ? destination_offsets : source_offsets;
  const int me = rank(), message_tag = tag + (reverse ? 1 : 0);
  std::vector<std::byte> scratch(in_offsets.back() * record);
  std::vector<MPI_Request> requests;
  auto pieces = [&](const std::vector<int>& ranks, const std::vector<std::size_t>& offsets, auto&& post) {
    for (std::size_t m = 0; m < ranks.size(); ++m) {
      if (ranks[m] == me) continue;
      const std::size_t bytes = (offsets[m + 1] - offsets[m]) * record;
      std::size_t at = 0;
      do {
        const std::size_t piece = std::min(message_piece, bytes - at);
        requests.push_back(MPI_REQUEST_NULL);
        post(offsets[m] * record + at, piece, ranks[m], requests.back());
        at += piece;
      } while (at < bytes);
    }
  };
  pieces(in_ranks, in_offsets, [&](std::size_t at, std::size_t bytes, int peer, MPI_Request& request) {
    check_mpi(MPI_Irecv(scratch.data() + at, static_cast<int>(bytes), MPI_BYTE, peer, message_tag, mpi, &request),
              "MPI_Irecv");
  });
  pieces(out_ranks, out_offsets, [&](std::size_t, std::size_t, int peer, MPI_Request& request) {
    check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, peer, message_tag, mpi, &request), "MPI_Isend");
  });
  if (!requests.empty())
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  fail(call, problem);
}

void GhostPlan::State::wait_all(Channel& channel, std::string_view call) {
  int refused = -1;
  if (!channel.receives.empty()) {
    channel.statuses.resize(channel.receives.size());
    check_mpi(MPI_Waitall(static_cast<int>(channel.receives.size()), channel.receives.data(), channel.statuses.data()),
              "MPI_Waitall");
    // Every message this plan posts holds at least one byte: an empty one is a refusal.
    for (std::size_t k = 0; k < channel.statuses.size() && refused < 0; ++k) {
      int bytes = 1;
      check_mpi(MPI_Get_count(&channel.statuses[k], MPI_BYTE, &bytes), "MPI_Get_count");
      if (bytes == 0) refused = channel.receive_peers[k];
    }
  }
  if (!channel.sends.empty())
    check_mpi(MPI_Waitall(static_cast<int>(channel.sends.size()), channel.sends.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall");
  if (refused >= 0)
    fail(call, fmt::format("rank {} (of the plan's communicator) refused the operation: a bad field there (see its "
                           "error); {} here are not complete",
                           refused, channel.reverse ? "the sums into owned entries" : "the ghost entries"));
}

namespace {

/// One destination's copies, as update() reads them: indices (32-bit when
/// `compact` is not empty) and shifts (as image codes into `code_shifts`
/// when `codes` is not empty; else `shifted` lists the copies with a
/// non-zero shift, as positions in the whole send list, which starts this
/// one at position `first`).
struct Copies {
  std::span<const std::size_t> indices;
  std::span<const std::uint32_t> compact;
  std::span<const Point> shifts;
  std::span<const std::uint8_t> codes;
  std::span<const Point> code_shifts;
  std::span<const std::size_t> shifted;
  std::size_t first = 0;

  std::size_t size() const noexcept { return compact.empty() ? indices.size() : compact.size(); }
  const Point& shift(std::size_t k) const noexcept { return codes.empty() ? shifts[k] : code_shifts[codes[k]]; }
  /// Calls body(indices) with the 32-bit indices where there are, else the 64-bit ones.
  template <class Body>
  void with_indices(Body&& body) const {
    if (compact.empty()) body(indices);
    else body(compact);
  }
};

/// Copies the elements data[indices[k]] into out[k], adding the image shift
/// to the Point at `shift_at` (when >= 0) of the shifted copies. Scalars
/// throughout: a Point through memory kept GCC storing it to the stack and
/// loading it back.
void gather(const detail::GhostFieldView& field, const Copies& copies, std::byte* out) {
  const std::size_t size = field.element_size;
  const std::byte* data = field.data;
  std::span<const std::size_t> shifted = field.shift_at < 0 ? std::span<const std::size_t>{} : copies.shifted;
  const auto from_shifted = std::lower_bound(shifted.begin(), shifted.end(), copies.first);
  const auto to_shifted = std::lower_bound(from_shifted, shifted.end(), copies.first + copies.size());
  auto store = [](std::byte* to, double x, double y, double z) {  // `to` may be unaligned
    std::memcpy(to, &x, 8);
    std::memcpy(to + 8, &y, 8);
    std::memcpy(to + 16, &z, 8);
  };
  // One pass for a pure Point field where the shifts are coded (a table
  // add per copy) or mostly non-zero; else a copy, then the few shifted.
  if (field.shift_at == 0 && size == sizeof(Point) &&
      (!copies.codes.empty() || 2 * static_cast<std::size_t>(to_shifted - from_shifted) > copies.size())) {
    const auto* from = reinterpret_cast<const double*>(data);
    copies.with_indices([&](auto indices) {
      if (!copies.codes.empty()) {
        const std::uint8_t* codes = copies.codes.data();
        const Point* table = copies.code_shifts.data();
        for (std::size_t k = 0; k < indices.size(); ++k) {
          if (k + detail::ghost_prefetch < indices.size())
            __builtin_prefetch(from + 3 * static_cast<std::size_t>(indices[k + detail::ghost_prefetch]));
          const double* p = from + 3 * static_cast<std::size_t>(indices[k]);
          const Point& s = table[codes[k]];
          store(out + k * sizeof(Point), p[0] + s[0], p[1] + s[1], p[2] + s[2]);
        }
      } else {
        for (std::size_t k = 0; k < indices.size(); ++k) {
          const double* p = from + 3 * static_cast<std::size_t>(indices[k]);
          const Point& s = copies.shifts[k];
          store(out + k * sizeof(Point), p[0] + s[0], p[1] + s[1], p[2] + s[2]);
        }
      }
    });
    return;
  }
  copies.with_indices([&](auto indices) {
    auto copy = [&]<std::size_t Size>(std::integral_constant<std::size_t, Size>) {  // fixed sizes compile to moves
      for (std::size_t k = 0; k < indices.size(); ++k)
        std::memcpy(out + k * Size, data + static_cast<std::size_t>(indices[k]) * Size, Size);
    };
    switch (size) {
      case 4: copy(std::integral_constant<std::size_t, 4>{}); break;
      case 8: copy(std::integral_constant<std::size_t, 8>{}); break;
      case 16: copy(std::integral_constant<std::size_t, 16>{}); break;
      case 24: copy(std::integral_constant<std::size_t, 24>{}); break;
      default:
        for (std::size_t k = 0; k < indices.size(); ++k)
          std::memcpy(out + k * size, data + static_cast<std::size_t>(indices[k]) * size, size);
    }
  });
  if (field.shift_at < 0) return;
  auto shift = [&](std::size_t k) {
    std::byte* at = out + k * size + field.shift_at;
    double p[3];
    std::memcpy(p, at, sizeof(Point));
    const Point& s = copies.shift(k);
    store(at, p[0] + s[0], p[1] + s[1], p[2] + s[2]);
  };
  if (!copies.codes.empty()) {  // (an unshifted copy stays a bit-exact copy: -0.0 + 0.0 would not)
    for (std::size_t k = 0; k < copies.size(); ++k)
      if (copies.codes[k] != no_shift) shift(k);
    return;
  }
  for (auto at_shifted = from_shifted; at_shifted != to_shifted; ++at_shifted) shift(*at_shifted - copies.first);
}

}  // namespace

// ---------------------------------------------------------------------------

template <class PiecesNear>
void GhostPlan::State::build(std::span<const Point> positions, const std::array<bool, 3>& periodic, const Box& domain,
                             bool sectors, const PiecesNear& pieces_near, const Box* usual) {
  const double cutoff = options.cutoff;
  // What is wrong with the call on this rank, but for the positions ("" if
  // nothing): checked before the first search, agreed on below.
  const std::string setup = [&]() -> std::string {
    if (active >= 0) return "rebuild while an operation is in flight (call finish() first)";
    if (!(cutoff > 0) || !std::isfinite(cutoff)) return fmt::format("cutoff {} must be finite and > 0", cutoff);
    for (int a = 0; a < 3; ++a)
      if (periodic[a] && cutoff > domain.extent(a) / 2)
        return fmt::format("cutoff {} is more than half the periodic length {} of axis {}", cutoff,
                           domain.extent(a), a);
    return {};
  }();
  Point length{0, 0, 0};
  for (int a = 0; a < 3; ++a)
    if (periodic[a]) length[a] = domain.extent(a);
  std::array<Point, 27> image_shift;
  for (int image = 0; image < 27; ++image) {
    const auto s = image_vector(image);
    for (int a = 0; a < 3; ++a) image_shift[static_cast<std::size_t>(image)][a] = s[a] * length[a];
  }

  // The search of `points` (positions, or their wrapped copies) over
  // `region`: each copy found is appended to its destination's bucket (no
  // grouping pass after). False, with nothing kept, where a point lies
  // outside the region.
  std::vector<Bucket>& buckets = scratch.buckets;
  std::vector<int> bucket_ranks;  // ascending
  Finder::Searched searched_counts;
  auto search = [&](const Box& region, std::span<const Point> points) {
    bucket_ranks.clear();
    if (points.empty()) return true;
    std::vector<Piece> pieces = pieces_near(region, false);
    for (const Piece& piece : pieces) bucket_ranks.push_back(piece.rank);
    std::sort(bucket_ranks.begin(), bucket_ranks.end());
    bucket_ranks.erase(std::unique(bucket_ranks.begin(), bucket_ranks.end()), bucket_ranks.end());
    for (Piece& piece : pieces)
      piece.bucket = static_cast<std::size_t>(std::lower_bound(bucket_ranks.begin(), bucket_ranks.end(), piece.rank) -
                                              bucket_ranks.begin());
    if (buckets.size() < bucket_ranks.size()) buckets.resize(bucket_ranks.size());
    for (std::size_t b = 0; b < bucket_ranks.size(); ++b) {
      Bucket& bucket = buckets[b];
      bucket.copy_end = bucket.copies.data();
      bucket.position_end = bucket.positions.data();
      bucket.most = 0;
    }
    for (const Piece& piece : pieces) {
      std::size_t& most = buckets[piece.bucket].most;
      most = std::min<std::size_t>(most + 1, 27);
    }
    const Finder finder(std::move(pieces), region, cutoff, sectors);
    const bool unique = finder.unique();
    auto found = [&](std::size_t i, const Point& image, const Piece& piece, bool keep) {
      Bucket& bucket = buckets[piece.bucket];
      const std::uint64_t copy = (std::uint64_t{i} << 5) | static_cast<std::uint64_t>(piece.image);
      // (a particle's copies for one rank are the last of its bucket)
      for (const std::uint64_t* e = bucket.copy_end; !unique && e != bucket.copies.data() && (e[-1] >> 5) == i; --e)
        if (e[-1] == copy) return false;
      *bucket.copy_end = copy;
      *bucket.position_end = image;
      bucket.copy_end += keep;
      bucket.position_end += keep;
      return keep;
    };
    auto prepare = [&](std::size_t particles) {  // room for every copy they can offer, and a vector more
      for (std::size_t b = 0; b < bucket_ranks.size(); ++b) {
        Bucket& bucket = buckets[b];
        const std::size_t count = bucket.count();
        const std::size_t need = count + particles * bucket.most + ghost_detail::vector_slack;
        if (bucket.copies.size() >= need) continue;
        bucket.copies.resize(std::max(need, 2 * bucket.copies.size()));
        bucket.positions.resize(bucket.copies.size());
        bucket.copy_end = bucket.copies.data() + count;
        bucket.position_end = bucket.positions.data() + count;
      }
    };
    auto ends = [&](std::size_t b) { return std::pair(&buckets[b].copy_end, &buckets[b].position_end); };
    const auto found_any = finder.find_all(points, found, prepare, ends);
    if (!found_any) bucket_ranks.clear();
    searched_counts = found_any.value_or(Finder::Searched{});
    return found_any.has_value();
  };

  // Where the caller knows the region the particles usually occupy (this
  // rank's box, inside the domain: nothing to wrap), the search goes first
  // and checks that each position lies there, finite: no pass for their
  // bounding box (85 us of a 0.87 ms rebuild at 1e5 particles, cutoff 0.1
  // width, np 2). Else, or when one does not, the positions' bounding box,
  // the agreement, then the search.
  // (Not where the box spans more slots than the search has: a sparse box
  // at the edge of a large domain, whose particles may fill only a corner
  // of it, would get slots much wider than the cutoff.)
  Box guess;
  for (int a = 0; usual && a < 3; ++a)
    if (!(usual->extent(a) <= static_cast<double>(max_slots / 2) * cutoff / slots_per_cutoff)) usual = nullptr;
  if (usual) {
    guess = *usual;
    for (int a = 0; a < 3; ++a)
      if (periodic[a]) {  // (inside the half-open domain: nothing to wrap)
        guess.lo[a] = std::max(guess.lo[a], domain.lo[a]);
        guess.hi[a] = std::min(guess.hi[a], std::nextafter(domain.hi[a], -HUGE_VAL));
      }
  }
  const bool searched = usual && setup.empty() && search(guess, positions);
  bool finite = true;
  Box region = searched ? guess : bounding_box(positions, &finite);
  bool outside = false;
  for (int a = 0; a < 3; ++a)
    outside |= periodic[a] && (region.lo[a] < domain.lo[a] || region.hi[a] >= domain.hi[a]);
  double maxima[2] = {0, 0};  // the cutoff and its negative: equal on every rank?
  agree(*comm, "GhostPlan", [&] {
    if (!setup.empty()) fail("GhostPlan", setup);
    for (std::size_t i = 0; !finite && i < positions.size(); ++i)
      if (!std::isfinite(positions[i][0]) || !std::isfinite(positions[i][1]) || !std::isfinite(positions[i][2]))
        fail("GhostPlan", fmt::format("particle {} has a NaN or infinite position ({}, {}, {})", i, positions[i][0],
                                      positions[i][1], positions[i][2]));
    maxima[0] = cutoff;
    maxima[1] = -cutoff;
  }, maxima);
  if (maxima[0] != -maxima[1]) {  // (every rank is here: name one rank with the smallest, one with the largest)
    struct {
      double value;
      int rank;
    } smallest{cutoff, rank()}, largest{cutoff, rank()};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &smallest, 1, MPI_DOUBLE_INT, MPI_MINLOC, mpi), "MPI_Allreduce");
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_DOUBLE_INT, MPI_MAXLOC, mpi), "MPI_Allreduce");
    fail("GhostPlan", fmt::format("the ranks passed different cutoffs: rank {} passed {}, rank {} passed {} (ranks of "
                                  "the plan's communicator); every rank must pass the same",
                                  smallest.rank, smallest.value, largest.rank, largest.value));
  }

  // Positions outside a periodic axis are searched at their wrapped place
  // (a copy only when some are; their shifts include the wrap).
  std::vector<Point> wrapped_copy;
  if (outside) {
    wrapped_copy.assign(positions.begin(), positions.end());
    for (Point& p : wrapped_copy) p = wrap_periodic(domain, periodic, p);
    region = bounding_box(wrapped_copy);
  }
  const std::span<const Point> wrapped = wrapped_copy.empty() ? positions : std::span<const Point>(wrapped_copy);
  if (!searched) search(region, wrapped);

  // A particle wrapped above sits, as an owned entry, at the image t of its
  // wrapped place (t = p - w, a period on some axis), not at image 0: its
  // own images are found again against this rank's own pieces, image 0
  // included and image t left out (else t would copy the owned entry onto
  // itself and image 0 would be lost: a particle on a periodic upper face).
  // Appended after this rank's other own images.
  if (!wrapped_copy.empty()) {
    std::vector<std::size_t> moved;  // ascending
    std::vector<int> owned_image;    // the image t per moved particle (-1: beyond the 27)
    Box around;
    for (int a = 0; a < 3; ++a) around.lo[a] = HUGE_VAL, around.hi[a] = -HUGE_VAL;
    for (std::size_t i = 0; i < positions.size(); ++i) {
      if (wrapped[i] == positions[i]) continue;
      moved.push_back(i);
      int code = 0, stride = 1;
      bool near = true;
      for (int a = 0; a < 3; ++a, stride *= 3) {
        const long turns = periodic[a] ? std::lround((positions[i][a] - wrapped[i][a]) / length[a]) : 0;
        near &= turns >= -1 && turns <= 1;
        code += static_cast<int>(turns + 1) * stride;
        around.lo[a] = std::min(around.lo[a], wrapped[i][a]);
        around.hi[a] = std::max(around.hi[a], wrapped[i][a]);
      }
      owned_image.push_back(near ? code : -1);
    }
    if (!moved.empty()) {
      const int me = rank();
      const std::vector<Piece> own = pieces_near(around, true);
      auto at = std::lower_bound(bucket_ranks.begin(), bucket_ranks.end(), me);
      const auto b = static_cast<std::size_t>(at - bucket_ranks.begin());
      if (at == bucket_ranks.end() || *at != me) {  // a bucket for this rank, at its place
        bucket_ranks.insert(at, me);
        if (buckets.size() < bucket_ranks.size()) buckets.resize(bucket_ranks.size());
        std::rotate(buckets.begin() + static_cast<std::ptrdiff_t>(b),
                    buckets.begin() + static_cast<std::ptrdiff_t>(bucket_ranks.size() - 1),
                    buckets.begin() + static_cast<std::ptrdiff_t>(bucket_ranks.size()));
        buckets[b].copy_end = buckets[b].copies.data();
        buckets[b].position_end = buckets[b].positions.data();
      }
      Bucket& mine = buckets[b];
      std::size_t kept = 0;
      for (std::size_t k = 0; k < mine.count(); ++k)
        if (!std::binary_search(moved.begin(), moved.end(), static_cast<std::size_t>(mine.copies[k] >> 5))) {
          mine.copies[kept] = mine.copies[k];
          mine.positions[kept] = mine.positions[k];
          ++kept;
        }
      const double cutoff2 = cutoff * cutoff;
      for (std::size_t m = 0; m < moved.size(); ++m) {
        const Point& w = wrapped[moved[m]];
        std::uint32_t taken = 0;  // images already copied (bucket runs repeat them)
        for (const Piece& piece : own) {
          const auto bit = std::uint32_t{1} << piece.image;
          if (piece.image == owned_image[m] || (taken & bit)) continue;
          const Point image{w[0] + piece.shift[0], w[1] + piece.shift[1], w[2] + piece.shift[2]};
          if ((sectors ? sector_distance2(image, piece.real) : distance2(image, piece.real)) > cutoff2) continue;
          taken |= bit;
          if (kept == mine.copies.size()) {
            mine.copies.resize(2 * kept + ghost_detail::vector_slack);
            mine.positions.resize(mine.copies.size());
          }
          mine.copies[kept] = (std::uint64_t{moved[m]} << 5) | static_cast<std::uint64_t>(piece.image);
          mine.positions[kept] = image;
          ++kept;
        }
      }
      mine.copy_end = mine.copies.data() + kept;
      mine.position_end = mine.positions.data() + kept;
    }
  }

  // Who sends to this rank: a sparse exchange of the counts (small
  // messages, whatever the ghosts' number).
  std::vector<int> next_destinations;
  std::vector<std::size_t> next_destination_offsets{0}, destination_buckets;
  Outbox<std::uint64_t> counts;  // one count per destination: who sends how many ghosts to whom
  for (std::size_t b = 0; b < bucket_ranks.size(); ++b)
    if (const std::size_t n = buckets[b].count()) {
      next_destinations.push_back(bucket_ranks[b]);
      next_destination_offsets.push_back(next_destination_offsets.back() + n);
      destination_buckets.push_back(b);
      counts.add(bucket_ranks[b], std::uint64_t{n});
    }
  const std::size_t copies = next_destination_offsets.back();
  Inbox<std::uint64_t> inbox;
  exchange(*comm, counts, inbox, {.algorithm = options.discovery});
  std::vector<int> next_sources(inbox.sources().begin(), inbox.sources().end());
  std::vector<std::size_t> next_source_offsets{0};
  for (std::uint64_t n : inbox.data()) next_source_offsets.push_back(next_source_offsets.back() + n);
  std::vector<Point> next_ghosts = std::move(scratch.ghosts);
  next_ghosts.resize(next_source_offsets.back());

  // The send lists' arrays (the previous plan's, reused: their pages are
  // mapped already). update()'s compact forms: 32-bit indices, and the
  // shift as its image's code when no position was wrapped (shift = image
  // shift); the full forms only where these are not.
  const bool compact = positions.size() <= std::numeric_limits<std::uint32_t>::max();
  const bool coded = compact && wrapped_copy.empty();
  std::vector<std::size_t> next_indices = std::move(scratch.indices), next_shifted = std::move(scratch.shifted);
  std::vector<Point> next_shifts = std::move(scratch.shifts);
  std::vector<std::uint32_t> next_compact = std::move(scratch.compact_indices);
  std::vector<std::uint8_t> next_codes = std::move(scratch.shift_codes);
  next_indices.resize(compact ? 0 : copies);
  next_shifts.resize(coded ? 0 : copies);
  next_compact.resize(compact ? copies : 0);
  next_codes.resize(coded ? copies : 0);
  next_shifted.resize(coded ? 0 : copies);

  // The shifted positions go point to point from the buckets, received
  // straight into their place; this rank's own images are copied there.
  const int me = rank(), build_tag = tag + 2;
  std::vector<MPI_Request> requests;
  auto post = [&](bool send, Point* data, std::size_t points, int peer) {
    persistent(send, reinterpret_cast<std::byte*>(data), points * sizeof(Point), peer, build_tag, mpi, requests);
  };
  for (std::size_t s = 0; s < next_sources.size(); ++s)
    if (next_sources[s] != me)
      post(false, next_ghosts.data() + next_source_offsets[s], next_source_offsets[s + 1] - next_source_offsets[s],
           next_sources[s]);
  for (std::size_t m = 0; m < next_destinations.size(); ++m) {
    Bucket& bucket = buckets[destination_buckets[m]];
    const std::span<Point> shifted_positions(bucket.positions.data(), bucket.count());
    if (next_destinations[m] != me) {
      post(true, shifted_positions.data(), shifted_positions.size(), next_destinations[m]);
    } else {
      const auto s = std::lower_bound(next_sources.begin(), next_sources.end(), me) - next_sources.begin();
      std::copy(shifted_positions.begin(), shifted_positions.end(),
                next_ghosts.begin() + static_cast<std::ptrdiff_t>(next_source_offsets[static_cast<std::size_t>(s)]));
    }
  }
  auto next_expanded = std::make_unique<std::once_flag>();  // (the last allocation)
  if (!requests.empty())
    check_mpi(MPI_Startall(static_cast<int>(requests.size()), requests.data()), "MPI_Startall");

  // The send lists, bucket after bucket, while the positions travel. One
  // loop per case: when no position was wrapped (the common case, `coded`)
  // the shift is the image's code, without the wrap's arithmetic. Else the
  // copies with a shift are listed, without a branch (shifted and
  // unshifted copies alternate unpredictably).
  std::size_t listed = 0;
  auto group = [&](auto wrapped_some, std::span<const std::uint64_t> found, std::size_t at) {
    std::size_t* shifted_at = next_shifted.data();
    std::size_t n = listed;
    for (const std::uint64_t copy : found) {
      const std::size_t index = static_cast<std::size_t>(copy >> 5), image = static_cast<std::size_t>(copy & 31);
      if (compact) next_compact[at] = static_cast<std::uint32_t>(index);
      else next_indices[at] = index;
      if constexpr (decltype(wrapped_some)::value) {
        const Point &w = wrapped[index], &p = positions[index], &shift = image_shift[image];
        for (int a = 0; a < 3; ++a) next_shifts[at][a] = (w[a] - p[a]) + shift[a];
        shifted_at[n] = at;
        n += next_shifts[at] != Point{0, 0, 0};
      } else {
        next_codes[at] = static_cast<std::uint8_t>(image);
      }
      ++at;
    }
    listed = n;
  };
  for (std::size_t m = 0; m < next_destinations.size(); ++m) {
    const Bucket& bucket = buckets[destination_buckets[m]];
    const std::span<const std::uint64_t> found(bucket.copies.data(), bucket.count());
    if (coded)
      group(std::false_type{}, found, next_destination_offsets[m]);
    else
      group(std::true_type{}, found, next_destination_offsets[m]);
  }
  next_shifted.resize(listed);  // (smaller: no allocation)
  if (!requests.empty())
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  for (auto& request : requests) MPI_Request_free(&request);

  // Commit (nothing below throws).
  free_channels();
  local = positions.size();
  sent = copies;
  std::swap(ghost_positions, next_ghosts);
  scratch.ghosts = std::move(next_ghosts);
  sources = std::move(next_sources);
  source_offsets = std::move(next_source_offsets);
  destinations = std::move(next_destinations);
  destination_offsets = std::move(next_destination_offsets);
  std::swap(send_indices, next_indices);
  std::swap(send_shifts, next_shifts);
  std::swap(shifted, next_shifted);
  std::swap(compact_indices, next_compact);
  std::swap(shift_codes, next_codes);
  scratch.indices = std::move(next_indices);
  scratch.shifts = std::move(next_shifts);
  scratch.shifted = std::move(next_shifted);
  scratch.compact_indices = std::move(next_compact);
  scratch.shift_codes = std::move(next_codes);
  expanded = std::move(next_expanded);
  code_shifts = image_shift;
  this->domain = domain;
  this->periodic = periodic;
  stats = {};
  stats.local = local;
  stats.ghosts = ghost_positions.size();
  stats.sent = sent;
  stats.boundary = searched_counts.tested;
  stats.vector_blocks = searched_counts.vector_blocks;
  stats.interior_skipped = searched_counts.interior_skipped;
  stats.send_ranks = static_cast<std::size_t>(std::count_if(destinations.begin(), destinations.end(),
                                                            [me](int r) { return r != me; }));
  stats.receive_ranks =
      static_cast<std::size_t>(std::count_if(sources.begin(), sources.end(), [me](int r) { return r != me; }));
}

// ---------------------------------------------------------------------------

namespace {

/// Multisection: every rank's box (or annular sector) and its images near the region.
std::vector<Piece> multisection_pieces(const Multisection& decomposition, const std::array<bool, 3>& periodic,
                                       const Box& region, double cutoff, int me, int ranks, bool own) {
  const bool sectors = decomposition.geometry() == Geometry::cylindrical;
  const Box& domain = decomposition.domain();
  const auto images = images_of(periodic);
  const double reach = piece_reach(domain, region, cutoff);
  std::vector<Piece> pieces;
  for (int r = own ? me : 0; r < (own ? me + 1 : ranks); ++r) {
    const Box box = decomposition.box(r);
    for (int image : images) {
      if (r == me && image == no_shift && !own) continue;
      const auto s = image_vector(image);
      Piece piece{r, image, box, {}, {}};
      for (int a = 0; a < 3; ++a) piece.shift[a] = s[a] * domain.extent(a);  // as the build's image shifts
      const Box there = moved_back(box, piece.shift);
      piece.bounds = sectors ? sector_bounds(there) : there;
      if (distance2(piece.bounds, region) <= reach * reach) pieces.push_back(piece);
    }
  }
  return pieces;
}

/// Buckets: runs of buckets along x with one owner and image, near the region.
std::vector<Piece> bucket_pieces(const BucketDecomposition& decomposition, const Box& region, double cutoff, int me,
                                 bool own) {
  const Box& domain = decomposition.domain();
  const auto& options = decomposition.options();
  const double reach = piece_reach(domain, region, cutoff);
  long first[3], last[3];
  double width[3];
  for (int a = 0; a < 3; ++a) {
    const long n = options.buckets[a];
    width[a] = domain.extent(a) / static_cast<double>(n);
    first[a] = static_cast<long>(std::floor((region.lo[a] - reach - domain.lo[a]) / width[a]));
    last[a] = static_cast<long>(std::floor((region.hi[a] + reach - domain.lo[a]) / width[a]));
    first[a] = std::max(first[a], options.periodic[a] ? -n : 0L);
    last[a] = std::min(last[a], options.periodic[a] ? 2 * n - 1 : n - 1);
  }
  std::vector<Piece> pieces;
  for (long k = first[2]; k <= last[2]; ++k)
    for (long j = first[1]; j <= last[1]; ++j) {
      bool open = false;  // a run along x being extended
      for (long i = first[0]; i <= last[0]; ++i) {
        const long index[3] = {i, j, k};
        long wrapped[3];
        int image = 0, stride = 1;
        Point shift;
        for (int a = 0; a < 3; ++a) {
          const long n = options.buckets[a];
          wrapped[a] = ((index[a] % n) + n) % n;
          const long turns = (index[a] - wrapped[a]) / n;  // the bucket seen one period away
          image += static_cast<int>(1 - turns) * stride;   // s = -turns
          stride *= 3;
          shift[a] = static_cast<double>(-turns) * domain.extent(a);  // as the build's image shifts
        }
        const int bucket = static_cast<int>(wrapped[0] + options.buckets[0] * (wrapped[1] + options.buckets[1] * wrapped[2]));
        const int owner = decomposition.owner_of_bucket(bucket);
        if (own ? owner != me : (owner == me && image == no_shift)) {
          open = false;
          continue;
        }
        const Box real = decomposition.bucket_box(bucket), box = moved_back(real, shift);
        if (distance2(box, region) > reach * reach) {
          open = false;
          continue;
        }
        if (open && pieces.back().rank == owner && pieces.back().image == image &&
            pieces.back().bounds.hi[0] == box.lo[0]) {
          pieces.back().bounds.hi[0] = box.hi[0];
          pieces.back().real.hi[0] = real.hi[0];
        } else {
          pieces.push_back({owner, image, real, shift, box});
          open = true;
        }
      }
    }
  return pieces;
}

}  // namespace

std::unique_ptr<GhostPlan::State> GhostPlan::connect(Comm& comm, const GhostOptions& options) {
  auto state = std::make_unique<State>();
  state->comm = &comm;
  state->options = options;
  auto& shared = comm.cached<GhostComm>();
  state->mpi = shared.dup;
  state->tag = 4 * (shared.plans++ % GhostComm::tag_sets);
  return state;
}

GhostPlan::GhostPlan(Comm& comm, const Multisection& decomposition, std::span<const Point> positions,
                     GhostOptions options)
    : state_(connect(comm, options)) {
  rebuild(decomposition, positions);
}

GhostPlan::GhostPlan(Comm& comm, const BucketDecomposition& decomposition, std::span<const Point> positions,
                     GhostOptions options)
    : state_(connect(comm, options)) {
  rebuild(decomposition, positions);
}

GhostPlan::GhostPlan(GhostPlan&&) noexcept = default;
GhostPlan& GhostPlan::operator=(GhostPlan&&) noexcept = default;
GhostPlan::~GhostPlan() = default;

void GhostPlan::rebuild(const Multisection& decomposition, std::span<const Point> positions) {
  State& state = *state_;
  const bool sectors = decomposition.geometry() == Geometry::cylindrical;
  // Cylindrical: phi wraps by itself (a rotation is no shift); only z has images.
  std::array<bool, 3> periodic = decomposition.options().periodic;
  if (sectors) periodic = {false, false, periodic[2]};
  // The region this rank's particles usually occupy (after a migration):
  // its box, or the Cartesian bounds of its sector.
  const Box own = decomposition.box(state.rank()), usual = sectors ? sector_bounds(own) : own;
  state.build(
      positions, periodic, decomposition.domain(), sectors,
      [&](const Box& region, bool own) {
        return multisection_pieces(decomposition, periodic, region, state.options.cutoff, state.rank(),
                                   state.comm->size(), own);
      },
      &usual);
}

void GhostPlan::rebuild(const BucketDecomposition& decomposition, std::span<const Point> positions) {
  State& state = *state_;
  state.build(positions, decomposition.options().periodic, decomposition.domain(), false,
              [&](const Box& region, bool own) {
                return bucket_pieces(decomposition, region, state.options.cutoff, state.rank(), own);
              });
}

std::size_t GhostPlan::local_count() const noexcept { return state_->local; }
std::size_t GhostPlan::ghost_count() const noexcept { return state_->ghost_positions.size(); }
std::span<const Point> GhostPlan::ghost_positions() const noexcept { return state_->ghost_positions; }
std::span<const int> GhostPlan::sources() const noexcept { return state_->sources; }
std::span<const std::size_t> GhostPlan::source_offsets() const noexcept { return state_->source_offsets; }
std::span<const int> GhostPlan::destinations() const noexcept { return state_->destinations; }
std::span<const std::size_t> GhostPlan::destination_offsets() const noexcept { return state_->destination_offsets; }
std::span<const std::size_t> GhostPlan::send_indices() const {
  state_->expand();
  return state_->send_indices;
}
std::span<const Point> GhostPlan::send_shifts() const {
  state_->expand();
  return state_->send_shifts;
}
std::span<const std::uint32_t> GhostPlan::compact_send_indices() const noexcept { return state_->compact_indices; }
const GhostStats& GhostPlan::stats() const noexcept { return state_->stats; }
const GhostOptions& GhostPlan::options() const noexcept { return state_->options; }
int GhostPlan::source_of(std::size_t entry) const noexcept {
  const State& state = *state_;
  if (entry < state.local) return state.rank();
  const auto& offsets = state.source_offsets;
  const auto after = std::upper_bound(offsets.begin(), offsets.end(), entry - state.local);
  return state.sources[static_cast<std::size_t>(after - offsets.begin()) - 1];
}
const Box& GhostPlan::domain() const noexcept { return state_->domain; }
const std::array<bool, 3>& GhostPlan::periodic_axes() const noexcept { return state_->periodic; }
Point GhostPlan::wrap(const Point& position) const noexcept {
  return wrap_periodic(state_->domain, state_->periodic, position);
}
void GhostPlan::fail_resize(const char* what) { fail("GhostPlan::resize_fields", what); }

namespace {
void start(std::vector<MPI_Request>& requests) {
  if (!requests.empty())
    check_mpi(MPI_Startall(static_cast<int>(requests.size()), requests.data()), "MPI_Startall");
}
}  // namespace

void GhostPlan::begin_forward(std::span<const detail::GhostFieldView> fields) {
  State& state = *state_;
  constexpr std::string_view call = "GhostPlan::update";
  state.check(call, false, fields);
  const int c = state.channel(false, fields);
  auto& channel = state.channels[static_cast<std::size_t>(c)];
  const std::size_t record = channel.record;
  const int me = state.rank();
  auto copies = [&](std::size_t m) {
    const std::size_t begin = state.destination_offsets[m], count = state.destination_offsets[m + 1] - begin;
    auto part = [&](const auto& all) { return all.empty() ? std::span(all) : std::span(all).subspan(begin, count); };
    return Copies{.indices = part(state.send_indices),
                  .compact = part(state.compact_indices),
                  .shifts = part(state.send_shifts),
                  .codes = part(state.shift_codes),
                  .code_shifts = state.code_shifts,
                  .shifted = state.shifted,
                  .first = begin};
  };
  start(channel.receives);
  // The messages first, so that they travel while this rank copies its own
  // periodic images (straight into their ghost entries) after them.
  std::size_t self = state.destinations.size();
  for (std::size_t m = 0; m < state.destinations.size(); ++m) {
    const std::size_t begin = state.destination_offsets[m], count = state.destination_offsets[m + 1] - begin;
    if (state.destinations[m] == me) {
      self = m;
      continue;
    }
    std::byte* out = channel.owner_side.data() + begin * record;
    for (const auto& field : fields) {
      gather(field, copies(m), out);
      out += count * field.element_size;
    }
  }
  start(channel.sends);
  if (self < state.destinations.size()) {
    const std::size_t ghost = state.own_ghosts();
    for (const auto& field : fields) gather(field, copies(self), field.data + ghost * field.element_size);
  }
  state.active = c;
  state.active_fields.assign(fields.begin(), fields.end());
}

void GhostPlan::finish() {
  State& state = *state_;
  if (state.active < 0 || state.channels[static_cast<std::size_t>(state.active)].reverse)
    fail("GhostPlan::finish", "no update in flight (call begin() first)");
  auto& channel = state.channels[static_cast<std::size_t>(state.active)];
  state.active = -1;
  state.wait_all(channel, "GhostPlan::finish");
  if (!channel.fields.empty()) return;  // received in place
  const std::size_t record = channel.record;
  const int me = state.rank();
  for (std::size_t s = 0; s < state.sources.size(); ++s) {
    if (state.sources[s] == me) continue;
    const std::size_t begin = state.source_offsets[s], count = state.source_offsets[s + 1] - begin;
    const std::byte* in = channel.ghost_side.data() + begin * record;
    for (const auto& field : state.active_fields) {
      std::memcpy(field.data + (state.local + begin) * field.element_size, in, count * field.element_size);
      in += count * field.element_size;
    }
  }
}

void GhostPlan::begin_reverse(std::span<const detail::GhostFieldView> fields) {
  State& state = *state_;
  constexpr std::string_view call = "GhostPlan::reverse";
  state.check(call, true, fields);
  const int c = state.channel(true, fields);
  auto& channel = state.channels[static_cast<std::size_t>(c)];
  const std::size_t record = channel.record;
  const int me = state.rank();
  start(channel.receives);
  auto pack = [&](std::size_t s, std::byte* out) {
    const std::size_t begin = state.source_offsets[s], count = state.source_offsets[s + 1] - begin;
    for (const auto& field : fields) {
      const std::size_t bytes = count * field.element_size;
      std::memcpy(out, field.data + (state.local + begin) * field.element_size, bytes);
      out += bytes;
    }
  };
  // The messages, packed to go out from huge pages; this rank's own images
  // are added in reverse_finish() straight from their ghost entries.
  for (std::size_t s = 0; s < state.sources.size(); ++s)
    if (state.sources[s] != me) pack(s, channel.ghost_side.data() + state.source_offsets[s] * record);
  start(channel.sends);
  state.active = c;
  state.active_fields.assign(fields.begin(), fields.end());
}

GhostPlan::Arrived GhostPlan::finish_reverse() {
  State& state = *state_;
  if (state.active < 0 || !state.channels[static_cast<std::size_t>(state.active)].reverse)
    fail("GhostPlan::reverse_finish", "no reverse operation in flight (call reverse_begin() first)");
  auto& channel = state.channels[static_cast<std::size_t>(state.active)];
  state.active = -1;
  state.wait_all(channel, "GhostPlan::reverse_finish");
  Arrived arrived;
  arrived.at.resize(state.destinations.size());
  const int me = state.rank();
  for (std::size_t m = 0; m < state.destinations.size(); ++m)
    if (state.destinations[m] != me)
      arrived.at[m] = channel.owner_side.data() + state.destination_offsets[m] * channel.record;
    else
      arrived.self_ghost = state.own_ghosts();
  return arrived;
}

}  // namespace domex

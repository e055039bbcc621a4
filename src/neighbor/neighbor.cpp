// SPDX-License-Identifier: BSD-3-Clause
// Cell-binned neighbour lists (LAMMPS's npair half/bin/newton and full/bin,
// Cabana's VerletList): the owned and ghost entries are counting-sorted into
// bins of half the list radius, with their coordinates copied bin after bin
// (structure of arrays: the candidates of a bin are one contiguous run), and
// each owned particle scans the bins of a stencil around its own.
#include <domex/comm/error.hpp>
#include <domex/neighbor/neighbor.hpp>

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace domex {

namespace {

/// The bins over the entries' bounding box, padded by the stencil's reach on
/// every side so that a stencil never leaves the array (padding bins are empty).
struct Bins {
  Point lo{};
  std::array<double, 3> inverse{};  ///< bins per unit length
  std::array<long, 3> count{};      ///< bins per axis (without padding)
  std::array<long, 3> pad{};        ///< stencil reach per axis, in bins
  std::array<long, 3> stride{};     ///< of the padded flat index
  std::size_t total = 0;            ///< padded bins

  /// The padded flat bin of p (p inside the bounding box: coordinate - lo
  /// >= 0, so truncation floors; the upper face clamps into the last bin).
  /// Monotone in each coordinate, which the half-list rule relies on.
  [[nodiscard]] std::size_t of(const Point& p) const noexcept {
    long flat = 0;
    for (int a = 0; a < 3; ++a) {
      const long i = std::min(static_cast<long>((p[a] - lo[a]) * inverse[a]), count[a] - 1);
      flat += (i + pad[a]) * stride[a];
    }
    return static_cast<std::size_t>(flat);
  }
};

/// The stencil as rows of bins along x: for each (dy, dz) whose bins come
/// within `radius` of a bin, the run of bins dx = -reach .. reach (a row is
/// one contiguous range of the sorted entries), by the half-list category of
/// the row (dz, then dy, decides "above"; the own row (0, 0) is apart).
struct Row {
  std::ptrdiff_t first;  ///< flat offset of the row's first bin from the centre bin
  std::ptrdiff_t bins;   ///< bins in the row
};
struct Stencil {
  std::vector<Row> upper;        ///< dz > 0: every entry above in z
  std::vector<Row> plane_upper;  ///< dz = 0, dy > 0: owned entries kept, ghosts by the rule
  std::vector<Row> plane_lower;  ///< dz = 0, dy < 0: ghosts by the rule only
  std::vector<Row> lower;        ///< dz < 0 (full lists only)
  long reach = 0;                ///< of the own row (dy = dz = 0)
};

Stencil stencil_of(const Bins& bins, const std::array<double, 3>& width, double radius) {
  Stencil stencil;
  auto gap = [&](long d, int axis) {  // the closest two points of bins d apart along an axis can be
    const double g = static_cast<double>(std::max(0L, std::abs(d) - 1)) * width[static_cast<std::size_t>(axis)];
    return g * g;
  };
  for (long dz = -bins.pad[2]; dz <= bins.pad[2]; ++dz)
    for (long dy = -bins.pad[1]; dy <= bins.pad[1]; ++dy) {
      const double rest = radius * radius - gap(dy, 1) - gap(dz, 2);
      if (rest < 0) continue;
      long reach = 0;
      while (reach < bins.pad[0] && gap(reach + 1, 0) <= rest) ++reach;
      const Row row{-reach + dy * bins.stride[1] + dz * bins.stride[2], 2 * reach + 1};
      if (dz > 0) stencil.upper.push_back(row);
      else if (dz < 0) stencil.lower.push_back(row);
      else if (dy > 0) stencil.plane_upper.push_back(row);
      else if (dy < 0) stencil.plane_lower.push_back(row);
      else stencil.reach = reach;
    }
  return stencil;
}

/// Entries sorted by bin, the owned and the ghosts apart (each a structure
/// of arrays: coordinates and entry index; a row of bins is one run of each).
struct Sorted {
  std::vector<double> x, y, z;
  std::vector<std::uint32_t> entry;
  std::vector<std::size_t> start;  ///< per bin (total + 1)
};

/// A growing output of candidates kept: written unconditionally, advanced
/// only when kept (no branch).
struct Kept {
  std::vector<std::uint32_t> values;
  std::size_t count = 0;
  std::size_t tested = 0;  ///< candidates scanned (for the stats)
  void room(std::size_t more) {
    if (count + more > values.size()) values.resize(2 * (count + more) + 64);
  }
};

/// Candidates [from, to) of `sorted` within the radius of p, into `out`.
/// Rule: only ghosts above p in (z, y, x) (a tie on all three: from a
/// higher rank than `me`).
template <bool Rule>
inline void scan(const Sorted& sorted, std::size_t from, std::size_t to, const Point& p, double radius2,
                 const GhostPlan& ghosts, int me, Kept& out) {
  if (from >= to) return;
  out.room(to - from);
  out.tested += to - from;
  std::uint32_t* __restrict values = out.values.data();
  std::size_t n = out.count;
  const double* __restrict xs = sorted.x.data();
  const double* __restrict ys = sorted.y.data();
  const double* __restrict zs = sorted.z.data();
  const std::uint32_t* __restrict entries = sorted.entry.data();
  for (std::size_t k = from; k < to; ++k) {
    const double dx = xs[k] - p[0], dy = ys[k] - p[1], dz = zs[k] - p[2];
    const double r2 = dx * dx + dy * dy + dz * dz;
    bool keep = r2 <= radius2;
    if constexpr (Rule) {
      // dz > 0 exactly when z_j > z_i: a difference of two doubles is
      // zero only for equal ones and keeps the sign of the comparison.
      keep &= (dz > 0) | ((dz == 0) & ((dy > 0) | ((dy == 0) & (dx > 0))));
      if (dx == 0 && dy == 0 && dz == 0) [[unlikely]]
        keep = ghosts.source_of(entries[k]) > me;
    }
    values[n] = entries[k];
    n += keep ? 1 : 0;
  }
  out.count = n;
}

[[noreturn]] void reject(std::string_view what) { fail("NeighborList", what); }

}  // namespace

struct NeighborList::Scratch {
  Sorted owned, ghosts;
  std::vector<std::uint32_t> bin_of, slot_of, neighbors;
  std::vector<std::size_t> offsets, ghost_begin, fill;
  std::vector<Point> held;
  Kept owned_kept, ghost_kept;
};

NeighborList::NeighborList(NeighborList&&) noexcept = default;
NeighborList& NeighborList::operator=(NeighborList&&) noexcept = default;
NeighborList::~NeighborList() = default;

NeighborList::NeighborList(NeighborOptions options) : options_(options), scratch_(std::make_unique<Scratch>()) {
  if (!(options_.cutoff > 0) || !std::isfinite(options_.cutoff))
    reject(fmt::format("cutoff {} must be finite and > 0", options_.cutoff));
  if (!(options_.skin >= 0) || !std::isfinite(options_.skin))
    reject(fmt::format("skin {} must be finite and >= 0", options_.skin));
  if (!(options_.bin_size >= 0) || !std::isfinite(options_.bin_size))
    reject(fmt::format("bin_size {} must be finite and >= 0 (0: half of cutoff + skin)", options_.bin_size));
}

void NeighborList::build(const GhostPlan& ghosts, std::span<const Point> positions) {
  const std::size_t local = ghosts.local_count(), entries = ghosts.size();
  const auto ghost_positions = ghosts.ghost_positions();
  const double radius = options_.cutoff + options_.skin, radius2 = radius * radius;
  const bool half = options_.kind == NeighborKind::half;
  if (positions.size() != local && positions.size() != entries)
    reject(fmt::format("{} positions given; the ghost plan was built for {} owned particles (or give all {} entries)",
                       positions.size(), local, entries));
  if (entries >= std::numeric_limits<std::uint32_t>::max())
    reject(fmt::format("{} entries: the lists hold 32-bit indices", entries));
  if (ghosts.options().cutoff < radius * (1 - 1e-12))
    reject(fmt::format("the ghost plan's cutoff {} is below cutoff + skin = {}: pairs across ranks would be missed",
                       ghosts.options().cutoff, radius));
  auto entry = [&](std::size_t e) -> const Point& { return e < local ? positions[e] : ghost_positions[e - local]; };

  // The bounding box (and the checks of the owned positions).
  Point lo{HUGE_VAL, HUGE_VAL, HUGE_VAL}, hi{-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
  const Box& domain = ghosts.domain();
  const auto& periodic = ghosts.periodic_axes();
  for (std::size_t e = 0; e < entries; ++e) {
    const Point& p = entry(e);
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], p[a]);
      hi[a] = std::max(hi[a], p[a]);
    }
  }
  for (std::size_t i = 0; i < local; ++i) {
    const Point& p = positions[i];
    for (int a = 0; a < 3; ++a) {
      if (!std::isfinite(p[a]))
        reject(fmt::format("particle {} has a NaN or infinite position ({}, {}, {})", i, p[0], p[1], p[2]));
      if (half && periodic[static_cast<std::size_t>(a)] && !(p[a] >= domain.lo[a] && p[a] < domain.hi[a]))
        reject(fmt::format("particle {} at ({}, {}, {}) lies outside the periodic domain [{}, {}) on axis {}: a half "
                           "list needs positions wrapped at the build (migrate(plan, domex::wrapped(x), ...), or "
                           "GhostPlan::wrap) before the ghost plan is built",
                           i, p[0], p[1], p[2], domain.lo[a], domain.hi[a], a));
    }
  }

  // Bins of at least the requested edge tiling the box; fewer (wider) where
  // they would outnumber the entries eight times, or where the padded bins
  // (at most 3 per bin and axis) would not fit the 32-bit bin indices.
  Bins bins;
  std::array<double, 3> width{};
  double edge = options_.bin_size > 0 ? options_.bin_size : radius / 2;
  const double most = std::min(8.0 * static_cast<double>(entries) + 64, 4.0e9 / 27);
  for (int tries = 0;; ++tries, edge *= 1.26) {
    double total = 1;
    for (int a = 0; a < 3; ++a) {
      const double extent = entries > 0 ? hi[a] - lo[a] : 0;
      bins.count[a] = std::max(1L, static_cast<long>(std::min(extent / edge, 1e9)));
      total *= static_cast<double>(bins.count[a]);
    }
    if (total <= most || tries > 400) break;
  }
  for (int a = 0; a < 3; ++a) {
    const auto u = static_cast<std::size_t>(a);
    const double extent = entries > 0 ? hi[a] - lo[a] : 0;
    // One bin on an axis holds every entry (its extent may be 0, or too
    // small to divide by): no reach needed along it.
    if (!std::isfinite(static_cast<double>(bins.count[a]) / extent)) bins.count[a] = 1;
    const bool one = bins.count[a] == 1;
    width[u] = one ? radius : extent / static_cast<double>(bins.count[a]);
    bins.inverse[u] = one ? 0 : static_cast<double>(bins.count[a]) / extent;
    bins.lo[a] = entries > 0 ? lo[a] : 0;
    // Reach: enough bins to cover the radius, and never beyond the last bin.
    bins.pad[a] = static_cast<long>(std::min(std::ceil(radius / width[u]), static_cast<double>(bins.count[a] - 1)));
  }
  bins.stride = {1, bins.count[0] + 2 * bins.pad[0], (bins.count[0] + 2 * bins.pad[0]) * (bins.count[1] + 2 * bins.pad[1])};
  bins.total = static_cast<std::size_t>(bins.stride[2] * (bins.count[2] + 2 * bins.pad[2]));
  if (bins.total >= std::numeric_limits<std::uint32_t>::max())
    reject(fmt::format("{} bins for {} entries: the bins hold 32-bit indices (give a larger bin_size)", bins.total,
                       entries));
  const Stencil stencil = stencil_of(bins, width, radius);

  // Counting sort by bin, the owned entries and the ghosts apart (in index
  // order within a bin).
  if (!scratch_) scratch_ = std::make_unique<Scratch>();  // (a moved-from list)
  Scratch& scratch = *scratch_;
  Sorted& owned_sorted = scratch.owned;
  Sorted& ghost_sorted = scratch.ghosts;
  owned_sorted.start.assign(bins.total + 1, 0);
  ghost_sorted.start.assign(bins.total + 1, 0);
  std::vector<std::uint32_t>& bin_of = scratch.bin_of;
  bin_of.resize(entries);
  for (std::size_t e = 0; e < entries; ++e) {
    const std::size_t b = bins.of(entry(e));
    bin_of[e] = static_cast<std::uint32_t>(b);
    ++(e < local ? owned_sorted : ghost_sorted).start[b + 1];
  }
  std::vector<std::uint32_t>& slot_of = scratch.slot_of;
  slot_of.resize(local);
  for (Sorted* sorted : {&owned_sorted, &ghost_sorted}) {
    for (std::size_t b = 0; b < bins.total; ++b) sorted->start[b + 1] += sorted->start[b];
    const std::size_t count = sorted->start.back();
    sorted->x.resize(count);
    sorted->y.resize(count);
    sorted->z.resize(count);
    sorted->entry.resize(count);
    std::vector<std::size_t>& fill = scratch.fill;
    fill.assign(sorted->start.begin(), sorted->start.end() - 1);
    const bool owned = sorted == &owned_sorted;
    for (std::size_t e = owned ? 0 : local; e < (owned ? local : entries); ++e) {
      const std::size_t at = fill[bin_of[e]]++;
      const Point& p = entry(e);
      sorted->x[at] = p[0];
      sorted->y[at] = p[1];
      sorted->z[at] = p[2];
      sorted->entry[at] = static_cast<std::uint32_t>(e);
      if (owned) slot_of[e] = static_cast<std::uint32_t>(at);
    }
  }

  // The lists, particle by particle: owned neighbours, then ghost ones.
  // (Into the previous build's arrays: their pages are mapped.)
  std::vector<std::size_t>& offsets = scratch.offsets;
  std::vector<std::size_t>& ghost_begin = scratch.ghost_begin;
  std::vector<std::uint32_t>& neighbors = scratch.neighbors;
  offsets.assign(local + 1, 0);
  ghost_begin.assign(local, 0);
  neighbors.clear();
  neighbors.reserve(std::max(neighbors_.size() + neighbors_.size() / 8, local * 8));
  Kept& owned = scratch.owned_kept;
  Kept& ghost = scratch.ghost_kept;
  owned.tested = ghost.tested = 0;
  const int me = local > 0 ? ghosts.source_of(0) : -1;  // this rank (an owned entry's source)
  const auto& os = owned_sorted.start;
  const auto& gs = ghost_sorted.start;
  for (std::size_t i = 0; i < local; ++i) {
    const Point& p = positions[i];
    const auto b = static_cast<std::ptrdiff_t>(bin_of[i]);
    const std::size_t slot = slot_of[i];
    owned.count = ghost.count = 0;
    // A row's runs: [start[first bin], start[last bin + 1]).
    auto from = [&](const std::vector<std::size_t>& start, const Row& row) {
      return start[static_cast<std::size_t>(b + row.first)];
    };
    auto to = [&](const std::vector<std::size_t>& start, const Row& row) {
      return start[static_cast<std::size_t>(b + row.first + row.bins)];
    };
    const Row own{-stencil.reach, 2 * stencil.reach + 1};
    const std::size_t own_end = os[static_cast<std::size_t>(b + stencil.reach + 1)];
    if (half) {
      // The own row: owned entries after i (its bin's later ones, the bins to
      // its right), ghosts by the rule.
      scan<false>(owned_sorted, slot + 1, own_end, p, radius2, ghosts, me, owned);
      scan<true>(ghost_sorted, from(gs, own), to(gs, own), p, radius2, ghosts, me, ghost);
      for (const Row& row : stencil.upper) {  // above in z: everything
        scan<false>(owned_sorted, from(os, row), to(os, row), p, radius2, ghosts, me, owned);
        scan<false>(ghost_sorted, from(gs, row), to(gs, row), p, radius2, ghosts, me, ghost);
      }
      for (const Row& row : stencil.plane_upper) {
        scan<false>(owned_sorted, from(os, row), to(os, row), p, radius2, ghosts, me, owned);
        scan<true>(ghost_sorted, from(gs, row), to(gs, row), p, radius2, ghosts, me, ghost);
      }
      for (const Row& row : stencil.plane_lower)
        scan<true>(ghost_sorted, from(gs, row), to(gs, row), p, radius2, ghosts, me, ghost);
    } else {
      scan<false>(owned_sorted, from(os, own), slot, p, radius2, ghosts, me, owned);
      scan<false>(owned_sorted, slot + 1, own_end, p, radius2, ghosts, me, owned);
      scan<false>(ghost_sorted, from(gs, own), to(gs, own), p, radius2, ghosts, me, ghost);
      for (const auto* rows : {&stencil.upper, &stencil.plane_upper, &stencil.plane_lower, &stencil.lower})
        for (const Row& row : *rows) {
          scan<false>(owned_sorted, from(os, row), to(os, row), p, radius2, ghosts, me, owned);
          scan<false>(ghost_sorted, from(gs, row), to(gs, row), p, radius2, ghosts, me, ghost);
        }
    }
    const std::size_t at = neighbors.size();
    neighbors.resize(at + owned.count + ghost.count);
    std::copy_n(owned.values.data(), owned.count, neighbors.data() + at);  // (memcpy of 0 from null is undefined)
    std::copy_n(ghost.values.data(), ghost.count, neighbors.data() + at + owned.count);
    ghost_begin[i] = at + owned.count;
    offsets[i + 1] = neighbors.size();
  }

  // The positions the skin check compares with (the last allocation).
  std::vector<Point>& held = scratch.held;
  held.assign(positions.begin(), positions.begin() + static_cast<std::ptrdiff_t>(local));

  // Commit (nothing below throws).
  NeighborStats stats;
  stats.owned = local;
  stats.entries = entries;
  stats.pairs = neighbors.size();
  for (std::size_t i = 0; i < local; ++i) stats.ghost_pairs += offsets[i + 1] - ghost_begin[i];
  stats.bins = static_cast<std::size_t>(bins.count[0] * bins.count[1] * bins.count[2]);
  stats.candidates = owned.tested + ghost.tested;
  stats.stencil = static_cast<std::size_t>(2 * stencil.reach + 1);
  for (const auto* rows : {&stencil.upper, &stencil.plane_upper, &stencil.plane_lower, &stencil.lower})
    for (const Row& row : *rows) stats.stencil += static_cast<std::size_t>(row.bins);
  offsets_.swap(offsets);
  ghost_begin_.swap(ghost_begin);
  neighbors_.swap(neighbors);
  held_.swap(held);
  stats_ = stats;
  built_ = true;
}

double NeighborList::max_displacement2(std::span<const Point> positions) const noexcept {
  if (!built_ || positions.size() < held_.size()) return HUGE_VAL;
  double most = 0;
  for (std::size_t i = 0; i < held_.size(); ++i) {
    double d2 = 0;
    for (int a = 0; a < 3; ++a) {
      const double d = positions[i][a] - held_[i][a];
      d2 += d * d;
    }
    most = d2 > most || d2 != d2 ? (d2 != d2 ? HUGE_VAL : d2) : most;
  }
  return most;
}

bool NeighborList::needs_rebuild(const Comm& comm, std::span<const Point> positions) const {
  double most = max_displacement2(positions);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_DOUBLE, MPI_MAX, comm.get()), "MPI_Allreduce");
  return most > options_.skin * options_.skin / 4;
}

}  // namespace domex

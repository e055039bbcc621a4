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

/// The stencil of bins within `radius` of a bin, by the half-list category
/// of each offset (dz, then dy, then dx decides "above").
struct Stencil {
  std::vector<std::ptrdiff_t> upper;        ///< dz > 0: every entry above in z
  std::vector<std::ptrdiff_t> plane_upper;  ///< dz = 0 and (dy, dx) > 0: owned entries kept, ghosts by the rule
  std::vector<std::ptrdiff_t> plane_lower;  ///< dz = 0 and (dy, dx) < 0: ghosts by the rule only
  std::vector<std::ptrdiff_t> lower;        ///< dz < 0 (full lists only)
};

Stencil stencil_of(const Bins& bins, const std::array<double, 3>& width, double radius) {
  Stencil stencil;
  for (long dz = -bins.pad[2]; dz <= bins.pad[2]; ++dz)
    for (long dy = -bins.pad[1]; dy <= bins.pad[1]; ++dy)
      for (long dx = -bins.pad[0]; dx <= bins.pad[0]; ++dx) {
        if (dx == 0 && dy == 0 && dz == 0) continue;  // the own bin: scanned apart
        const long d[3] = {dx, dy, dz};
        double gap2 = 0;  // the closest two points of the bins can be
        for (int a = 0; a < 3; ++a) {
          const double gap = static_cast<double>(std::max(0L, std::abs(d[a]) - 1)) * width[static_cast<std::size_t>(a)];
          gap2 += gap * gap;
        }
        if (gap2 > radius * radius) continue;
        const std::ptrdiff_t offset = dx * bins.stride[0] + dy * bins.stride[1] + dz * bins.stride[2];
        if (dz > 0) stencil.upper.push_back(offset);
        else if (dz < 0) stencil.lower.push_back(offset);
        else if (dy > 0 || (dy == 0 && dx > 0)) stencil.plane_upper.push_back(offset);
        else stencil.plane_lower.push_back(offset);
      }
  return stencil;
}

/// Entries sorted by bin: coordinates as three arrays, the entry index, and
/// per bin where its entries start and where its ghosts start (owned first).
struct Sorted {
  std::vector<double> x, y, z;
  std::vector<std::uint32_t> entry;
  std::vector<std::size_t> start, ghosts;  ///< total + 1; total
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
  out.room(to - from);
  out.tested += to - from;
  std::uint32_t* values = out.values.data();
  std::size_t n = out.count;
  const double* xs = sorted.x.data();
  const double* ys = sorted.y.data();
  const double* zs = sorted.z.data();
  const std::uint32_t* entries = sorted.entry.data();
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

NeighborList::NeighborList(NeighborOptions options) : options_(options) {
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
  // they would outnumber the entries eight times.
  Bins bins;
  std::array<double, 3> width{};
  double edge = options_.bin_size > 0 ? options_.bin_size : radius / 2;
  const double most = 8.0 * static_cast<double>(entries) + 64;
  for (int tries = 0;; ++tries, edge *= 1.26) {
    double total = 1;
    for (int a = 0; a < 3; ++a) {
      const double extent = entries > 0 ? hi[a] - lo[a] : 0;
      bins.count[a] = std::max(1L, static_cast<long>(std::min(extent / edge, 1e9)));
      total *= static_cast<double>(bins.count[a]);
    }
    if (total <= most || tries > 200) break;
  }
  for (int a = 0; a < 3; ++a) {
    const auto u = static_cast<std::size_t>(a);
    const double extent = entries > 0 ? hi[a] - lo[a] : 0;
    width[u] = extent > 0 ? extent / static_cast<double>(bins.count[a]) : radius;
    bins.inverse[u] = extent > 0 ? static_cast<double>(bins.count[a]) / extent : 0;
    bins.lo[a] = entries > 0 ? lo[a] : 0;
    // Reach: enough bins to cover the radius (and never more than the box has).
    bins.pad[a] = std::min(static_cast<long>(std::ceil(radius / width[u])), bins.count[a]);
  }
  bins.stride = {1, bins.count[0] + 2 * bins.pad[0], (bins.count[0] + 2 * bins.pad[0]) * (bins.count[1] + 2 * bins.pad[1])};
  bins.total = static_cast<std::size_t>(bins.stride[2] * (bins.count[2] + 2 * bins.pad[2]));
  const Stencil stencil = stencil_of(bins, width, radius);

  // Counting sort by bin: entries in index order, so each bin holds its
  // owned entries first, ascending, then its ghosts.
  Sorted sorted;
  sorted.start.assign(bins.total + 1, 0);
  std::vector<std::size_t> owned_in(bins.total, 0);
  std::vector<std::uint32_t> bin_of(entries);
  for (std::size_t e = 0; e < entries; ++e) {
    const std::size_t b = bins.of(entry(e));
    bin_of[e] = static_cast<std::uint32_t>(b);
    ++sorted.start[b + 1];
    if (e < local) ++owned_in[b];
  }
  for (std::size_t b = 0; b < bins.total; ++b) sorted.start[b + 1] += sorted.start[b];
  sorted.ghosts.resize(bins.total);
  for (std::size_t b = 0; b < bins.total; ++b) sorted.ghosts[b] = sorted.start[b] + owned_in[b];
  sorted.x.resize(entries);
  sorted.y.resize(entries);
  sorted.z.resize(entries);
  sorted.entry.resize(entries);
  std::vector<std::size_t> fill(sorted.start.begin(), sorted.start.end() - 1);
  std::vector<std::uint32_t> slot_of(local);
  for (std::size_t e = 0; e < entries; ++e) {
    const std::size_t at = fill[bin_of[e]]++;
    const Point& p = entry(e);
    sorted.x[at] = p[0];
    sorted.y[at] = p[1];
    sorted.z[at] = p[2];
    sorted.entry[at] = static_cast<std::uint32_t>(e);
    if (e < local) slot_of[e] = static_cast<std::uint32_t>(at);
  }

  // The lists, particle by particle: owned neighbours, then ghost ones.
  std::vector<std::size_t> offsets(local + 1, 0), ghost_begin(local, 0);
  std::vector<std::uint32_t> neighbors;
  neighbors.reserve(std::max(neighbors_.size() + neighbors_.size() / 8, local * 8));
  Kept owned, ghost;
  const int me = local > 0 ? ghosts.source_of(0) : -1;  // this rank (an owned entry's source)
  for (std::size_t i = 0; i < local; ++i) {
    const Point& p = positions[i];
    const std::size_t b = bin_of[i], slot = slot_of[i];
    owned.count = ghost.count = 0;
    auto bin = [&](std::ptrdiff_t offset) { return static_cast<std::size_t>(static_cast<std::ptrdiff_t>(b) + offset); };
    if (half) {
      // The own bin: owned entries after i, ghosts by the rule.
      scan<false>(sorted, slot + 1, sorted.ghosts[b], p, radius2, ghosts, me, owned);
      scan<true>(sorted, sorted.ghosts[b], sorted.start[b + 1], p, radius2, ghosts, me, ghost);
      for (const std::ptrdiff_t offset : stencil.upper) {  // above in z: everything
        const std::size_t n = bin(offset);
        scan<false>(sorted, sorted.start[n], sorted.ghosts[n], p, radius2, ghosts, me, owned);
        scan<false>(sorted, sorted.ghosts[n], sorted.start[n + 1], p, radius2, ghosts, me, ghost);
      }
      for (const std::ptrdiff_t offset : stencil.plane_upper) {
        const std::size_t n = bin(offset);
        scan<false>(sorted, sorted.start[n], sorted.ghosts[n], p, radius2, ghosts, me, owned);
        scan<true>(sorted, sorted.ghosts[n], sorted.start[n + 1], p, radius2, ghosts, me, ghost);
      }
      for (const std::ptrdiff_t offset : stencil.plane_lower) {
        const std::size_t n = bin(offset);
        scan<true>(sorted, sorted.ghosts[n], sorted.start[n + 1], p, radius2, ghosts, me, ghost);
      }
    } else {
      scan<false>(sorted, sorted.start[b], slot, p, radius2, ghosts, me, owned);
      scan<false>(sorted, slot + 1, sorted.ghosts[b], p, radius2, ghosts, me, owned);
      scan<false>(sorted, sorted.ghosts[b], sorted.start[b + 1], p, radius2, ghosts, me, ghost);
      for (const auto* offsets_of : {&stencil.upper, &stencil.plane_upper, &stencil.plane_lower, &stencil.lower})
        for (const std::ptrdiff_t offset : *offsets_of) {
          const std::size_t n = bin(offset);
          scan<false>(sorted, sorted.start[n], sorted.ghosts[n], p, radius2, ghosts, me, owned);
          scan<false>(sorted, sorted.ghosts[n], sorted.start[n + 1], p, radius2, ghosts, me, ghost);
        }
    }
    const std::size_t at = neighbors.size();
    neighbors.resize(at + owned.count + ghost.count);
    std::memcpy(neighbors.data() + at, owned.values.data(), owned.count * sizeof(std::uint32_t));
    std::memcpy(neighbors.data() + at + owned.count, ghost.values.data(), ghost.count * sizeof(std::uint32_t));
    ghost_begin[i] = at + owned.count;
    offsets[i + 1] = neighbors.size();
  }

  // Commit (nothing below throws).
  NeighborStats stats;
  stats.owned = local;
  stats.entries = entries;
  stats.pairs = neighbors.size();
  for (std::size_t i = 0; i < local; ++i) stats.ghost_pairs += offsets[i + 1] - ghost_begin[i];
  stats.bins = static_cast<std::size_t>(bins.count[0] * bins.count[1] * bins.count[2]);
  stats.candidates = owned.tested + ghost.tested;
  stats.stencil = 1 + stencil.upper.size() + stencil.plane_upper.size() + stencil.plane_lower.size() +
                  stencil.lower.size();
  offsets_ = std::move(offsets);
  ghost_begin_ = std::move(ghost_begin);
  neighbors_ = std::move(neighbors);
  held_.assign(positions.begin(), positions.begin() + static_cast<std::ptrdiff_t>(local));
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

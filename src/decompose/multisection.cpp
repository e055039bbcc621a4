// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/collective.hpp>
#include <domex/comm/simulated.hpp>
#include <domex/decompose/grid.hpp>
#include <domex/decompose/multisection.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <initializer_list>
#include <numeric>
#include <random>

namespace domex {

struct Multisection::Lines {
  // Rank (i, j, k) = (i ny + j) nz + k. x_line: same (j, k), by i; slab: same
  // i; y_line: same (i, k), by j; column: same (i, j), by k.
  Comm x_line, slab, y_line, column;
};

namespace {

constexpr double two_pi = 2 * std::numbers::pi;

struct Sample {
  Point at;
  double weight;
};

/// Index of the piece of [cuts[0], cuts[n]) holding x: O(log n).
int piece_of(const double* cuts, int n, double x) {
  return static_cast<int>(std::upper_bound(cuts + 1, cuts + n, x) - (cuts + 1));
}

void equal_cuts(int parts, double lo, double hi, double* cuts) {
  for (int k = 0; k <= parts; ++k) cuts[k] = equal_cut(lo, hi, k, parts);
}

/// Cuts [lo, hi) into `parts` pieces holding equal sample weight; the cut
/// between two samples is their midpoint. Sorts `samples` along `axis`, but
/// only when there is something to cut. Without samples: equal lengths.
void weighted_cuts(std::span<Sample> samples, int axis, int parts, double lo, double hi, double* cuts,
                   RebalanceStats& stats) {
  double total = 0;
  for (const auto& sample : samples) total += sample.weight;
  if (parts == 1 || samples.empty() || total <= 0) {
    equal_cuts(parts, lo, hi, cuts);
    return;
  }
  cuts[0] = lo;
  cuts[parts] = hi;
  std::sort(samples.begin(), samples.end(), [axis](const Sample& a, const Sample& b) {
    return a.at[axis] < b.at[axis] || (a.at[axis] == b.at[axis] && a.at < b.at);
  });
  stats.samples_sorted += samples.size();
  double running = 0;
  std::size_t i = 0;
  for (int k = 1; k < parts; ++k) {
    const double target = total * k / parts;
    while (i < samples.size() && running + samples[i].weight <= target) running += samples[i++].weight;
    double cut;
    if (i == 0) cut = samples[0].at[axis];
    else if (i >= samples.size()) cut = samples.back().at[axis];
    else cut = 0.5 * (samples[i - 1].at[axis] + samples[i].at[axis]);
    cuts[k] = std::clamp(cut, cuts[k - 1], hi);
  }
}

/// Exact weighted quantiles of `values` (integer `cost` each, 1 if empty)
/// over all ranks of `comm`: `parts` - 1 cuts in [lo, hi). Round 1 is a
/// histogram of `bins` equal bins of [lo, hi); each later round splits only
/// the bin that holds a cut not yet final into `bins` bins. Integer sums make
/// the reduced histograms, hence the cuts, bit-identical on every rank.
void histogram_cuts(const Comm& comm, std::span<const double> values, std::span<const std::uint64_t> cost, int parts,
                    double lo, double hi, int bins_per_cut, double tolerance, double* cuts, RebalanceStats& stats) {
  equal_cuts(parts, lo, hi, cuts);
  if (parts == 1) return;
  struct Bracket {
    double lo, hi;
    std::uint64_t below;  // cost below lo
  };
  std::vector<Bracket> brackets{{lo, hi, 0}};
  std::vector<int> pending(static_cast<std::size_t>(parts - 1));
  std::iota(pending.begin(), pending.end(), 1);
  std::vector<std::size_t> bracket_of(static_cast<std::size_t>(parts + 1), 0);
  std::vector<std::uint64_t> histogram;
  std::uint64_t total = 0;
  // Later rounds refine every pending cut's bin at once: with many cuts on
  // one axis (a ring's 1 x P x 1) bins_per_cut each would reduce O(parts x
  // bins) counts per round (2 MB at P = 1024), so the round's histogram is
  // capped at 2048 counts (16 KiB), at least 8 bins per cut: an extra round
  // or two of latency instead of megabytes of bandwidth (domex-ring at 256
  // simulated ranks: 2.3 -> 1.0 ms of communication per rebalance, sim/README.md).
  constexpr std::size_t round_counts = 2048;
  const auto later_bins = [&](std::size_t brackets_pending) {
    return std::max(std::min(bins_per_cut, static_cast<int>(round_counts / brackets_pending)),
                    std::min(bins_per_cut, 8));
  };
  // A final cut's bin holds about half of `tolerance` of a part: `resolution`
  // bins over the extent. Round 1 resolves near-uniform input alone where
  // that is at most 4096 bins (32 KiB; two parts at the default tolerance).
  // Otherwise round 2 is needed anyway, and round 1 has just enough bins
  // that round 2 resolves (at least bins_per_cut): more would not save a
  // round but multiply round 1's bytes (4096 bins in every round 1 cost
  // 0.46 ms per rebalance at 1024 simulated Tofu ranks, 0.34 ms without;
  // sim/README.md, "Decomposition at scale").
  constexpr int first_counts = 4096;  // round 1's cap, unless bins_per_cut is larger
  const double resolution = std::ceil(2 * parts / tolerance);
  const double first = resolution <= first_counts
                           ? resolution
                           : std::ceil(resolution / later_bins(static_cast<std::size_t>(parts - 1)));
  const int first_bins = static_cast<int>(
      std::clamp(first, static_cast<double>(bins_per_cut), static_cast<double>(std::max(bins_per_cut, first_counts))));
  for (int round = 1;; ++round) {
    const int bins = round == 1 ? first_bins : later_bins(brackets.size());
    const auto count = static_cast<std::size_t>(bins);
    histogram.assign(brackets.size() * count, 0);
    const auto add = [&](std::size_t b, double x, std::size_t i) {
      const Bracket& bracket = brackets[b];
      const double width = (bracket.hi - bracket.lo) / bins;
      auto t = static_cast<long>((x - bracket.lo) / width);
      t = std::clamp(t, 0L, static_cast<long>(bins - 1));
      // The bin edges are those the cuts are placed on: lo + width t.
      if (t > 0 && x < bracket.lo + width * static_cast<double>(t)) --t;
      else if (t + 1 < bins && x >= bracket.lo + width * static_cast<double>(t + 1)) ++t;
      histogram[b * count + static_cast<std::size_t>(t)] += cost.empty() ? 1 : cost[i];
    };
    simulated::Work binning("decompose: bin values");
    if (brackets.size() == 1) {
      const Bracket only = brackets[0];
      for (std::size_t i = 0; i < values.size(); ++i)
        if (values[i] >= only.lo && values[i] < only.hi) add(0, values[i], i);
    } else {
      for (std::size_t i = 0; i < values.size(); ++i) {
        const double x = values[i];
        const auto after = std::upper_bound(brackets.begin(), brackets.end(), x,
                                            [](double v, const Bracket& b) { return v < b.lo; });
        if (after == brackets.begin()) continue;
        const auto b = static_cast<std::size_t>(after - brackets.begin() - 1);
        if (x < brackets[b].hi) add(b, x, i);
      }
    }
    binning.done(static_cast<double>(values.size()));
    comm.allreduce_in_place(std::span<std::uint64_t>(histogram), MPI_SUM);
    stats.bytes_received += histogram.size() * sizeof(std::uint64_t);
    ++stats.rounds;
    if (round == 1) {
      for (auto h : histogram) total += h;
      if (total == 0) return;  // nothing anywhere: equal lengths
    }
    const long double share = static_cast<long double>(total) / parts;
    std::vector<Bracket> next;
    std::vector<int> still;
    // The pending cuts come in increasing order, so a bracket's cuts are
    // consecutive and their targets increase: each scan of the bracket's
    // bins goes on from where the previous cut's stopped. That gives the
    // same bin and sum as a scan from the first bin, in O(bins + cuts)
    // instead of O(bins x cuts). The full scans cost a ring's 128 sections
    // in phi 0.47 ms per rebalance on every rank, in round 1 alone (127
    // cuts, 4096 bins, one Zen 3 core). domex-ring at 256 simulated ranks
    // with computation charged: decompose 0.67-0.94 -> 0.42-0.51 ms per step
    // (sim/README.md).
    simulated::Work placing("decompose: place cuts");
    std::size_t scanned = brackets.size();  // the bracket whose scan is at (t, below)
    std::uint64_t below = 0;
    int t = 0;
    for (int k : pending) {
      const std::size_t b = bracket_of[static_cast<std::size_t>(k)];
      const Bracket bracket = brackets[b];
      const std::uint64_t* h = &histogram[b * count];
      const long double target = share * k;
      if (b != scanned) scanned = b, below = bracket.below, t = 0;
      while (t < bins - 1 && static_cast<long double>(below + h[t]) < target) below += h[t++];
      const double width = (bracket.hi - bracket.lo) / bins;
      const double a = bracket.lo + width * t;
      const double z = t + 1 == bins ? bracket.hi : bracket.lo + width * (t + 1);
      const bool final = static_cast<long double>(h[t]) <= tolerance * share || !(z - a > 1e-13 * (hi - lo)) ||
                         round >= 12;
      if (final) {
        const double fraction =
            h[t] == 0 ? 0.0 : static_cast<double>((target - static_cast<long double>(below)) / h[t]);
        cuts[k] = a + (z - a) * std::clamp(fraction, 0.0, 1.0);
        continue;
      }
      if (next.empty() || next.back().lo != a) next.push_back({a, z, below});
      bracket_of[static_cast<std::size_t>(k)] = next.size() - 1;
      still.push_back(k);
    }
    placing.done(static_cast<double>(histogram.size()));
    if (still.empty()) break;
    brackets = std::move(next);
    pending = std::move(still);
  }
  for (int k = 1; k < parts; ++k) cuts[k] = std::clamp(cuts[k], cuts[k - 1], hi);
}

/// FDPS-style sampled cuts of one level: `budget` samples in all, drawn on
/// each rank in proportion to its cost (stochastic rounding, seeded), all
/// particles when the level holds no more than the budget; gathered along
/// `chain` (column, y line, x line: each step an MPI_Allgatherv over a line),
/// so that every rank of `level` holds the same samples, then sorted.
void sampled_cuts(const Comm& level, std::initializer_list<const Comm*> chain, std::span<const double> values,
                  std::span<const std::uint64_t> cost, int parts, double lo, double hi, double budget,
                  std::uint64_t seed, double* cuts, RebalanceStats& stats) {
  equal_cuts(parts, lo, hi, cuts);
  if (parts == 1) return;
  std::uint64_t totals[2] = {0, values.size()};  // cost, count
  for (std::size_t i = 0; i < values.size(); ++i) totals[0] += cost.empty() ? 1 : cost[i];
  const std::uint64_t local = totals[0];
  level.allreduce_in_place(std::span<std::uint64_t>(totals), MPI_SUM);
  stats.bytes_received += sizeof totals;
  if (totals[0] == 0) return;
  struct Weighted {
    double value, weight;
  };
  std::vector<Weighted> samples;
  if (static_cast<double>(totals[1]) <= budget) {
    samples.reserve(values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
      samples.push_back({values[i], cost.empty() ? 1.0 : static_cast<double>(cost[i])});
  } else if (local > 0) {
    std::mt19937_64 random(seed);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const double expected = budget * static_cast<double>(local) / static_cast<double>(totals[0]);
    auto count = static_cast<std::size_t>(expected);
    if (uniform(random) < expected - static_cast<double>(count)) ++count;
    const double weight = static_cast<double>(local) / static_cast<double>(std::max<std::size_t>(count, 1));
    if (cost.empty()) {
      std::uniform_int_distribution<std::size_t> pick(0, values.size() - 1);
      for (std::size_t s = 0; s < count; ++s) samples.push_back({values[pick(random)], weight});
    } else {
      std::vector<double> cumulative(values.size());
      double running = 0;
      for (std::size_t i = 0; i < values.size(); ++i) cumulative[i] = running += static_cast<double>(cost[i]);
      std::uniform_real_distribution<double> at(0.0, running);
      for (std::size_t s = 0; s < count; ++s) {
        const auto i = static_cast<std::size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), at(random)) -
                                                cumulative.begin());
        samples.push_back({values[std::min(i, values.size() - 1)], weight});
      }
    }
  }
  for (const Comm* line : chain) {
    if (line->size() == 1) continue;
    const std::size_t before = samples.size();
    samples = line->allgatherv<Weighted>(samples);
    stats.bytes_received += (samples.size() - before) * sizeof(Weighted);
  }
  double total = 0;
  for (const auto& sample : samples) total += sample.weight;
  if (samples.empty() || !(total > 0)) return;
  // A total order: the same sorted sequence on every rank of the level.
  std::sort(samples.begin(), samples.end(), [](const Weighted& a, const Weighted& b) {
    return a.value < b.value || (a.value == b.value && a.weight < b.weight);
  });
  stats.samples_sorted += samples.size();
  double running = 0;
  std::size_t i = 0;
  for (int k = 1; k < parts; ++k) {
    const double target = total * k / parts;
    while (i < samples.size() && running + samples[i].weight <= target) running += samples[i++].weight;
    double cut;
    if (i == 0) cut = samples[0].value;
    else if (i >= samples.size()) cut = samples.back().value;
    else cut = 0.5 * (samples[i - 1].value + samples[i].value);
    cuts[k] = std::clamp(cut, cuts[k - 1], hi);
  }
}

/// Moves items[i] to rank where[i] of `line`; returns the items this rank
/// keeps followed by those it receives. MPI_Alltoall of counts +
/// MPI_Alltoallv over the line: O(line size) besides the items.
std::vector<detail::Rest> route(const Comm& line, std::vector<detail::Rest> items, const std::vector<int>& where,
                          RebalanceStats& stats) {
  const int size = line.size(), me = line.rank();
  std::vector<int> send_counts(static_cast<std::size_t>(size), 0), receive_counts(send_counts.size());
  for (int w : where) ++send_counts[static_cast<std::size_t>(w)];
  check_mpi(MPI_Alltoall(send_counts.data(), 1, MPI_INT, receive_counts.data(), 1, MPI_INT, line.get()),
            "MPI_Alltoall");
  std::vector<int> send_offsets(send_counts.size() + 1, 0), receive_offsets(send_counts.size() + 1, 0);
  for (std::size_t r = 0; r < send_counts.size(); ++r) {
    send_offsets[r + 1] = send_offsets[r] + (static_cast<int>(r) == me ? 0 : send_counts[r]);
    receive_offsets[r + 1] = receive_offsets[r] + (static_cast<int>(r) == me ? 0 : receive_counts[r]);
  }
  const std::size_t kept = static_cast<std::size_t>(send_counts[static_cast<std::size_t>(me)]);
  const auto arriving = static_cast<std::size_t>(receive_offsets.back());
  if (static_cast<double>(std::max(send_offsets.back(), receive_offsets.back())) * sizeof(detail::Rest) > INT_MAX)
    fail("Multisection::rebalance", "more than INT_MAX bytes of coordinates to route");
  // The kept items are compacted in place (most stay), the others packed.
  std::vector<detail::Rest> outgoing(static_cast<std::size_t>(send_offsets.back()));
  {
    std::vector<int> fill(send_offsets.begin(), send_offsets.end() - 1);
    std::size_t write = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (where[i] == me) items[write++] = items[i];
      else outgoing[static_cast<std::size_t>(fill[static_cast<std::size_t>(where[i])]++)] = items[i];
    }
  }
  std::vector<detail::Rest> result = std::move(items);
  // Byte counts and displacements for MPI_Alltoallv (self excluded: kept above).
  const auto bytes = [&](std::vector<int>& counts, const std::vector<int>& offsets, std::vector<int>& displs) {
    displs.resize(counts.size());
    for (std::size_t r = 0; r < counts.size(); ++r) {
      if (static_cast<int>(r) == me) counts[r] = 0;
      counts[r] *= static_cast<int>(sizeof(detail::Rest));
      displs[r] = offsets[r] * static_cast<int>(sizeof(detail::Rest));
    }
  };
  std::vector<int> send_displs, receive_displs;
  bytes(send_counts, send_offsets, send_displs);
  bytes(receive_counts, receive_offsets, receive_displs);
  result.resize(kept + arriving);
  check_mpi(MPI_Alltoallv(outgoing.data(), send_counts.data(), send_displs.data(), MPI_BYTE, result.data() + kept,
                          receive_counts.data(), receive_displs.data(), MPI_BYTE, line.get()),
            "MPI_Alltoallv");
  stats.bytes_received += arriving * sizeof(detail::Rest) + static_cast<std::size_t>(size) * sizeof(int);
  return result;
}

/// MPI_Allgather of `count` doubles per rank of `comm`.
void allgather_cuts(const Comm& comm, const double* mine, std::size_t count, double* all, RebalanceStats& stats) {
  std::vector<double> copy(mine, mine + count);  // `mine` lies inside `all`
  check_mpi(MPI_Allgather(copy.data(), static_cast<int>(count), MPI_DOUBLE, all, static_cast<int>(count), MPI_DOUBLE,
                          comm.get()),
            "MPI_Allgather");
  stats.bytes_received += count * sizeof(double) * static_cast<std::size_t>(comm.size());
}

std::uint64_t mix(std::uint64_t hash, std::uint64_t value) {
  hash ^= value + 0x9E3779B97F4A7C15ull + (hash << 6) + (hash >> 2);
  return hash;
}

Comm split(const Comm& comm, int colour, int key) {
  MPI_Comm part = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm.get(), colour, key, &part), "MPI_Comm_split");
  return Comm::adopt(part);
}

}  // namespace

Multisection::Multisection(const Comm& comm, Box domain, MultisectionOptions options)
    : comm_(&comm), domain_(domain), options_(options) {
  // Rank-local checks, plus a hash of domain and options: every rank must
  // pass the same (max(h) == -max(-h) after the reduction).
  double maxima[2] = {0, 0};
  agree(comm, "Multisection", [&] {
    if (options_.geometry == Geometry::cylindrical) {
      options_.periodic[1] = true;
      domain_.lo[1] = 0;
      domain_.hi[1] = two_pi;
      if (!(domain_.lo[0] >= 0))
        fail("Multisection", fmt::format("cylindrical radius range starts below 0: {}", domain_.lo[0]));
    }
    for (int a = 0; a < 3; ++a)
      if (!(domain_.hi[a] > domain_.lo[a]) || !std::isfinite(domain_.hi[a] - domain_.lo[a]))
        fail("Multisection", fmt::format("empty or infinite domain on axis {}: [{}, {})", a, domain_.lo[a],
                                         domain_.hi[a]));
    if (options_.bins < 2 || options_.bins > (1 << 20))
      fail("Multisection", fmt::format("bins {} not in [2, 2^20]", options_.bins));
    if (!(options_.tolerance > 0 && options_.tolerance < 1))
      fail("Multisection", fmt::format("tolerance {} not in (0, 1)", options_.tolerance));
    if (!(options_.smoothing >= 0 && options_.smoothing < 1))
      fail("Multisection", fmt::format("smoothing {} not in [0, 1)", options_.smoothing));
    if (options_.samples_per_rank == 0 && options_.total_samples == 0)
      fail("Multisection", "no samples: samples_per_rank and total_samples are 0");
    if (!(options_.neighbour_margin >= 0 && std::isfinite(options_.neighbour_margin)))
      fail("Multisection", fmt::format("neighbour_margin {} is negative or not finite", options_.neighbour_margin));
    divisions_ = grid_divisions(comm.size(), options_.divisions, "Multisection");
    std::uint64_t hash = 0;
    const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
    for (int a = 0; a < 3; ++a)
      for (std::uint64_t v : {bits(domain_.lo[a]), bits(domain_.hi[a]), static_cast<std::uint64_t>(divisions_[a]),
                              std::uint64_t{options_.periodic[a]}})
        hash = mix(hash, v);
    for (std::uint64_t v : {static_cast<std::uint64_t>(options_.geometry), static_cast<std::uint64_t>(options_.method),
                            std::uint64_t{options_.samples_per_rank}, std::uint64_t{options_.total_samples},
                            static_cast<std::uint64_t>(options_.bins), bits(options_.tolerance),
                            bits(options_.smoothing), options_.seed, bits(options_.neighbour_margin)})
      hash = mix(hash, v);
    maxima[0] = static_cast<double>(hash >> 12);
    maxima[1] = -maxima[0];
  }, maxima);
  if (maxima[0] != -maxima[1])
    fail("Multisection", "the ranks passed different domains or options (every rank must pass the same)");
  const auto [nx, ny, nz] = divisions_;
  const int rank = comm.rank();
  const auto [i, j, k] = grid_index(rank, divisions_);
  lines_ = std::make_shared<const Lines>(Lines{split(comm, j * nz + k, i), split(comm, i, j * nz + k),
                                               split(comm, i * nz + k, j), split(comm, i * ny + j, k)});
  cuts_.x.resize(static_cast<std::size_t>(nx + 1));
  cuts_.y.resize(static_cast<std::size_t>(nx * (ny + 1)));
  cuts_.z.resize(static_cast<std::size_t>(nx * ny * (nz + 1)));
  // Equal volumes (EqualBoxes: the same boxes without communication).
  equal_cuts(nx, domain_.lo[0], domain_.hi[0], cuts_.x.data());
  for (int s = 0; s < nx; ++s) {
    equal_cuts(ny, domain_.lo[1], domain_.hi[1], &cuts_.y[static_cast<std::size_t>(s * (ny + 1))]);
    for (int c = 0; c < ny; ++c)
      equal_cuts(nz, domain_.lo[2], domain_.hi[2], &cuts_.z[static_cast<std::size_t>((s * ny + c) * (nz + 1))]);
  }
  set_own_box(box_in(cuts_, rank));
  neighbours_ = neighbours_in(cuts_, rank);
}

void Multisection::set_own_box(const Box& own) noexcept {
  own_box_ = own;
  if (options_.geometry != Geometry::cylindrical) return;
  constexpr double relative = 1e-12;
  wedge_.r2_lo = own.lo[0] * own.lo[0] * (1 + relative) + 1e-300;
  wedge_.r2_hi = own.hi[0] * own.hi[0] * (1 - relative);
  wedge_.lo_x = std::cos(own.lo[1]);
  wedge_.lo_y = std::sin(own.lo[1]);
  wedge_.hi_x = std::cos(own.hi[1]);
  wedge_.hi_y = std::sin(own.hi[1]);
  wedge_.full = divisions_[1] == 1;
  wedge_.wide = own.hi[1] - own.lo[1] > std::numbers::pi;
}

Point Multisection::coordinates(const Point& p) const noexcept {
  if (options_.geometry == Geometry::cartesian) return p;
  double phi = std::atan2(p[1], p[0]);
  if (phi < 0) phi += two_pi;
  if (phi >= two_pi) phi -= two_pi;
  return {std::sqrt(p[0] * p[0] + p[1] * p[1]), phi, p[2]};  // not hypot: 5x slower, no overflow to guard here
}

Point Multisection::wrap(const Point& c) const noexcept { return wrap_periodic(domain_, options_.periodic, c); }

int Multisection::owner_in(const Cuts& cuts, const Point& c) const noexcept {
  for (int a = 0; a < 3; ++a)
    if (!(c[a] >= domain_.lo[a] && c[a] < domain_.hi[a])) return -1;  // NaN fails too
  const auto [nx, ny, nz] = divisions_;
  const int i = piece_of(cuts.x.data(), nx, c[0]);
  const int j = piece_of(&cuts.y[static_cast<std::size_t>(i * (ny + 1))], ny, c[1]);
  const int k = piece_of(&cuts.z[static_cast<std::size_t>((i * ny + j) * (nz + 1))], nz, c[2]);
  return grid_rank({i, j, k}, divisions_);
}

int Multisection::try_owner(const Point& position) const noexcept {
  return owner_in(cuts_, wrap(coordinates(position)));
}

void Multisection::owners(std::span<const Point> positions, std::span<int> owners) const noexcept {
  const int me = comm_->rank();
  const Box mine = own_box_;
  if (options_.geometry == Geometry::cartesian) {
    // One box test per particle, branch-free so that it vectorises; the
    // owner search (wrap + binary searches) only for those outside.
    for (std::size_t i = 0; i < positions.size(); ++i) {
      const Point& p = positions[i];
      const bool inside = (p[0] >= mine.lo[0]) & (p[0] < mine.hi[0]) & (p[1] >= mine.lo[1]) & (p[1] < mine.hi[1]) &
                          (p[2] >= mine.lo[2]) & (p[2] < mine.hi[2]);
      owners[i] = inside ? me : -2;
    }
    for (std::size_t i = 0; i < positions.size(); ++i)
      if (owners[i] == -2) owners[i] = try_owner(positions[i]);
    return;
  }
  // Cylindrical: r^2 and the signs of two cross products decide, with a
  // margin of 1e-9 rad and 1e-12 relative in r; the few positions within
  // the margins (or outside) take the full conversion (atan2, sqrt).
  const Wedge w = wedge_;
  constexpr double angle_margin = 1e-9;
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const Point& p = positions[i];
    const double r2 = p[0] * p[0] + p[1] * p[1];
    const double scale = angle_margin * (std::abs(p[0]) + std::abs(p[1]));  // >= margin * r
    const double after_lo = w.lo_x * p[1] - w.lo_y * p[0];                 // r sin(phi - phi_lo)
    const double before_hi = p[0] * w.hi_y - p[1] * w.hi_x;                // r sin(phi_hi - phi)
    const bool in_phi = w.full || (w.wide ? (after_lo > scale) | (before_hi > scale)
                                          : (after_lo > scale) & (before_hi > scale));
    const bool inside = (r2 > w.r2_lo) & (r2 < w.r2_hi) & in_phi & (p[2] >= mine.lo[2]) & (p[2] < mine.hi[2]);
    owners[i] = inside ? me : -2;
  }
  for (std::size_t i = 0; i < positions.size(); ++i)
    if (owners[i] == -2) owners[i] = try_owner(positions[i]);
}

int Multisection::owner(const Point& position) const {
  const int rank = try_owner(position);
  if (rank < 0)
    fail("Multisection::owner",
         fmt::format("position ({}, {}, {}) is NaN or outside the domain [{}, {}) x [{}, {}) x [{}, {}) on a "
                     "non-periodic axis",
                     position[0], position[1], position[2], domain_.lo[0], domain_.hi[0], domain_.lo[1],
                     domain_.hi[1], domain_.lo[2], domain_.hi[2]));
  return rank;
}

Box Multisection::box_in(const Cuts& cuts, int rank) const {
  const auto [nx, ny, nz] = divisions_;
  const auto [i, j, k] = grid_index(rank, divisions_);
  const double* y = &cuts.y[static_cast<std::size_t>(i * (ny + 1))];
  const double* z = &cuts.z[static_cast<std::size_t>((i * ny + j) * (nz + 1))];
  return {{cuts.x[static_cast<std::size_t>(i)], y[j], z[k]},
          {cuts.x[static_cast<std::size_t>(i + 1)], y[j + 1], z[k + 1]}};
}

Box Multisection::box(int rank) const {
  if (rank < 0 || rank >= comm_->size()) fail("Multisection::box", fmt::format("rank {} out of range", rank));
  return box_in(cuts_, rank);
}

std::vector<double> Multisection::cuts() const {
  std::vector<double> all(cuts_.x);
  all.insert(all.end(), cuts_.y.begin(), cuts_.y.end());
  all.insert(all.end(), cuts_.z.begin(), cuts_.z.end());
  return all;
}

void Multisection::restore(std::span<const double> cuts) {
  const auto [nx, ny, nz] = divisions_;
  Cuts next = cuts_;
  std::string problem;
  if (cuts.size() != next.x.size() + next.y.size() + next.z.size()) {
    problem = fmt::format("{} cuts for divisions {} x {} x {} (need {})", cuts.size(), nx, ny, nz,
                          next.x.size() + next.y.size() + next.z.size());
  } else {
    std::copy(cuts.begin(), cuts.begin() + static_cast<std::ptrdiff_t>(next.x.size()), next.x.begin());
    std::copy(cuts.begin() + static_cast<std::ptrdiff_t>(next.x.size()),
              cuts.begin() + static_cast<std::ptrdiff_t>(next.x.size() + next.y.size()), next.y.begin());
    std::copy(cuts.end() - static_cast<std::ptrdiff_t>(next.z.size()), cuts.end(), next.z.begin());
    // Each run of cuts spans the domain on its axis, in order.
    const auto check = [&](const std::vector<double>& axis_cuts, int parts, int axis) {
      for (std::size_t first = 0; first < axis_cuts.size() && problem.empty(); first += static_cast<std::size_t>(parts + 1)) {
        if (axis_cuts[first] != domain_.lo[axis] || axis_cuts[first + static_cast<std::size_t>(parts)] != domain_.hi[axis])
          problem = fmt::format("cuts on axis {} do not span the domain [{}, {})", axis, domain_.lo[axis], domain_.hi[axis]);
        for (int k = 0; k < parts && problem.empty(); ++k)
          if (!(axis_cuts[first + static_cast<std::size_t>(k)] <= axis_cuts[first + static_cast<std::size_t>(k) + 1]))
            problem = fmt::format("cuts on axis {} are not ascending (or NaN)", axis);
      }
    };
    check(next.x, nx, 0);
    check(next.y, ny, 1);
    check(next.z, nz, 2);
  }
  // The same cuts on every rank: compare a checksum of their bits.
  std::uint64_t hash = 1469598103934665603ull;
  for (double c : cuts) hash = (hash ^ std::bit_cast<std::uint64_t>(c)) * 1099511628211ull;
  std::uint64_t range[2] = {hash, ~hash};
  comm_->allreduce_in_place(std::span<std::uint64_t>(range), MPI_MAX);
  if (problem.empty() && range[0] != hash) problem = "the cuts differ between ranks";
  if (problem.empty() && ~range[1] != hash) problem = "the cuts differ between ranks";
  agree(*comm_, "Multisection::restore", problem);
  auto neighbours = neighbours_in(next, comm_->rank());
  const Box own = box_in(next, comm_->rank());
  cuts_ = std::move(next);
  neighbours_ = std::move(neighbours);
  set_own_box(own);
}

std::vector<int> Multisection::neighbours_in(const Cuts& cuts, int rank) const {
  const Box mine = box_in(cuts, rank);
  const double margin = options_.neighbour_margin;
  const auto [nx, ny, nz] = divisions_;
  // The pieces of one level (cuts c[0..n]) that overlap `mine` on `axis`,
  // for any periodic shift: two binary searches per shift, since the
  // overlap test below is monotone in the piece index.
  const auto pieces = [&](const double* c, int n, int axis, std::vector<int>& out) {
    out.clear();
    const double tolerance = 1e-12 * domain_.extent(axis) + margin;
    const double length = domain_.extent(axis);
    const bool periodic = options_.periodic[axis];
    for (double shift : {0.0, length, -length}) {
      if (shift != 0.0 && !periodic) continue;
      // overlap: c[p] + shift <= hi + tol && lo - tol <= c[p+1] + shift
      const auto first = std::partition_point(c + 1, c + n + 1, [&](double upper) {
        return !(mine.lo[axis] - tolerance <= upper + shift);
      });
      const auto last = std::partition_point(c, c + n, [&](double lower) {
        return lower + shift <= mine.hi[axis] + tolerance;
      });
      for (auto p = static_cast<int>(first - (c + 1)); p < static_cast<int>(last - c); ++p) out.push_back(p);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  };
  std::vector<int> result, slabs, columns, layers;
  pieces(cuts.x.data(), nx, 0, slabs);
  for (int i : slabs) {
    pieces(&cuts.y[static_cast<std::size_t>(i * (ny + 1))], ny, 1, columns);
    for (int j : columns) {
      pieces(&cuts.z[static_cast<std::size_t>((i * ny + j) * (nz + 1))], nz, 2, layers);
      for (int k : layers) {
        const int other = (i * ny + j) * nz + k;
        if (other != rank) result.push_back(other);
      }
    }
  }
  std::sort(result.begin(), result.end());
  return result;
}

std::vector<int> Multisection::neighbours_of(int rank) const {
  if (rank < 0 || rank >= comm_->size()) fail("Multisection::neighbours_of", fmt::format("rank {} out of range", rank));
  return neighbours_in(cuts_, rank);
}

void Multisection::rebalance(std::span<const Point> positions, std::span<const double> weights) {
  // 1. One pass over the positions: validation and conversion, agreed over
  //    all ranks in one reduction that also brings the global maximum weight
  //    and count. The histogram method keeps x apart (the first level reads
  //    only x) and the rest only when there are further levels.
  const bool by_level = options_.method != CutMethod::global && options_.method != CutMethod::root_broadcast;
  const bool further = divisions_[1] * divisions_[2] > 1;
  std::vector<Point> at;
  std::vector<double> x;
  std::vector<detail::Rest> rest;
  if (!by_level) at.resize(positions.size());
  else if (divisions_[0] > 1) x.resize(positions.size());
  if (by_level && further) rest.resize(positions.size());
  double maxima[2] = {0, static_cast<double>(positions.size())};  // max weight, max count
  agree(*comm_, "Multisection::rebalance", [&] {
    simulated::Work work("decompose: positions");
    if (!weights.empty() && weights.size() != positions.size())
      fail("Multisection::rebalance", fmt::format("{} weights for {} positions", weights.size(), positions.size()));
    const Box& d = domain_;
    // Cylindrical with one section in phi: phi is never cut, so no atan2
    // (only a check that the position is finite).
    const bool skip_phi = options_.geometry == Geometry::cylindrical && divisions_[1] == 1;
    for (std::size_t i = 0; i < positions.size(); ++i) {
      const Point& p = positions[i];
      Point c = skip_phi ? Point{std::sqrt(p[0] * p[0] + p[1] * p[1]),
                                 std::isfinite(p[0] + p[1]) ? d.lo[1] : p[0] + p[1], p[2]}
                         : coordinates(p);
      if (!((c[0] >= d.lo[0]) & (c[0] < d.hi[0]) & (c[1] >= d.lo[1]) & (c[1] < d.hi[1]) & (c[2] >= d.lo[2]) &
            (c[2] < d.hi[2]))) {
        c = wrap(c);
        for (int a = 0; a < 3; ++a)
          if (!(c[a] >= d.lo[a] && c[a] < d.hi[a]))
            fail("Multisection::rebalance",
                 fmt::format("particle {} at ({}, {}, {}) is NaN, infinite or outside the domain: coordinate {} = {} "
                             "not in [{}, {})",
                             i, positions[i][0], positions[i][1], positions[i][2], a, c[a], d.lo[a], d.hi[a]));
      }
      if (!at.empty()) at[i] = c;
      if (!x.empty()) x[i] = c[0];
      if (!rest.empty()) rest[i] = {c[1], c[2], 1};
    }
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (!(weights[i] >= 0 && std::isfinite(weights[i])))
        fail("Multisection::rebalance",
             fmt::format("particle {} has cost weight {} (must be finite and >= 0)", i, weights[i]));
      maxima[0] = std::max(maxima[0], weights[i]);
    }
    work.done(static_cast<double>(positions.size()));
  }, maxima);
  // 2. Integer cost: weights scaled by the global maximum so that the sum
  //    over all particles stays below 2^62 (exact, never overflows, the
  //    same on every rank); all-zero weights: cost 1 each.
  std::vector<std::uint64_t> cost;
  if (!weights.empty() && maxima[0] > 0) {
    const double bound = static_cast<double>(comm_->size()) * std::max(maxima[1], 1.0);
    const int bits = std::max(1, 61 - static_cast<int>(std::ceil(std::log2(bound + 1))));
    const int exponent = std::ilogb(maxima[0]) + 1;  // max < 2^exponent
    cost.resize(weights.size());
    for (std::size_t i = 0; i < weights.size(); ++i)
      cost[i] = static_cast<std::uint64_t>(std::ldexp(weights[i], bits - exponent));
    for (std::size_t i = 0; i < rest.size(); ++i) rest[i].cost = cost[i];
  }
  // 3. New cuts into a copy: the object changes only when all went well.
  Cuts next = cuts_;
  RebalanceStats stats;
  if (by_level) cuts_by_level(x, cost, std::move(rest), next, stats);
  else cuts_global(at, cost, next, stats);
  if (options_.smoothing > 0) {
    const double s = options_.smoothing;
    for (auto [fresh, old] : {std::pair{&next.x, &cuts_.x}, {&next.y, &cuts_.y}, {&next.z, &cuts_.z}})
      for (std::size_t c = 0; c < fresh->size(); ++c) (*fresh)[c] = (1 - s) * (*fresh)[c] + s * (*old)[c];
  }
  auto neighbours = neighbours_in(next, comm_->rank());
  const Box own = box_in(next, comm_->rank());
  cuts_ = std::move(next);
  neighbours_ = std::move(neighbours);
  set_own_box(own);
  stats_ = stats;
}

namespace {

int checked_int(std::size_t value, const char* call) {
  if (value > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    fail(call, fmt::format("{} elements in one MPI call: more than INT_MAX", value));
  return static_cast<int>(value);
}

}  // namespace

void Multisection::cuts_global(std::span<const Point> at, std::span<const std::uint64_t> cost, Cuts& cuts,
                               RebalanceStats& stats) const {
  const auto [nx, ny, nz] = divisions_;
  if (comm_->size() == 1) return;
  const auto weight = [&](std::size_t i) { return cost.empty() ? 1.0 : static_cast<double>(cost[i]); };
  double local[2] = {0, static_cast<double>(at.size())};  // cost, count (exact below 2^53)
  for (std::size_t i = 0; i < at.size(); ++i) local[0] += weight(i);
  double total[2] = {local[0], local[1]};
  comm_->allreduce_in_place(std::span<double>(total), MPI_SUM);
  stats.bytes_received += sizeof total;
  // This rank's samples: all particles if the ranks hold no more than the
  // budget (exact cuts), else a share proportional to this rank's cost,
  // drawn with probability proportional to each particle's cost.
  const double budget = options_.total_samples > 0
                            ? static_cast<double>(options_.total_samples)
                            : static_cast<double>(options_.samples_per_rank) * comm_->size();
  std::vector<Sample> mine;
  if (total[1] <= budget) {
    mine.reserve(at.size());
    for (std::size_t i = 0; i < at.size(); ++i) mine.push_back({at[i], weight(i)});
  } else if (local[0] > 0 && total[0] > 0) {
    const auto count = static_cast<std::size_t>(std::max(1.0, std::round(budget * local[0] / total[0])));
    std::mt19937_64 random(options_.seed + static_cast<std::uint64_t>(comm_->rank()) * 7919u);
    mine.reserve(count);
    if (cost.empty()) {
      std::uniform_int_distribution<std::size_t> pick(0, at.size() - 1);
      for (std::size_t s = 0; s < count; ++s) mine.push_back({at[pick(random)], local[0] / static_cast<double>(count)});
    } else {
      std::vector<double> cumulative(at.size());
      double running = 0;
      for (std::size_t i = 0; i < at.size(); ++i) cumulative[i] = running += weight(i);
      std::uniform_real_distribution<double> uniform(0.0, running);
      for (std::size_t s = 0; s < count; ++s) {
        const auto i = static_cast<std::size_t>(
            std::upper_bound(cumulative.begin(), cumulative.end(), uniform(random)) - cumulative.begin());
        mine.push_back({at[std::min(i, at.size() - 1)], local[0] / static_cast<double>(count)});
      }
    }
  }
  std::vector<Sample> samples;
  const bool root_only = options_.method == CutMethod::root_broadcast;
  if (root_only) {
    // The legacy path: rank 0 gathers every sample, computes all cuts alone
    // and broadcasts them (the MPI_Bcast FDPS replaced).
    const int ranks = comm_->size(), me = comm_->rank();
    const int bytes = checked_int(mine.size() * sizeof(Sample), "Multisection::rebalance");
    std::vector<int> counts(me == 0 ? static_cast<std::size_t>(ranks) : 0), displs(counts.size(), 0);
    check_mpi(MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm_->get()), "MPI_Gather");
    std::size_t total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r)
      displs[r] = checked_int(total, "Multisection::rebalance"), total += static_cast<std::size_t>(counts[r]);
    samples.resize(total / sizeof(Sample));
    check_mpi(MPI_Gatherv(mine.data(), bytes, MPI_BYTE, samples.data(), counts.data(), displs.data(), MPI_BYTE, 0,
                          comm_->get()),
              "MPI_Gatherv");
    stats.bytes_received += me == 0 ? (samples.size() - mine.size()) * sizeof(Sample) : 0;
    if (me != 0) {
      broadcast_cuts(cuts, stats);
      return;
    }
  } else {
    samples = comm_->allgatherv<Sample>(mine);
    stats.bytes_received += (samples.size() - mine.size()) * sizeof(Sample);
  }
  // Rank 0's cuts alone (root_only) or every rank's same cuts.
  simulated::Work work("decompose: cuts from samples");
  weighted_cuts(samples, 0, nx, domain_.lo[0], domain_.hi[0], cuts.x.data(), stats);
  // Samples sorted by x (when nx > 1): slab i holds those between its cuts.
  std::size_t begin = 0;
  for (int i = 0; i < nx; ++i) {
    std::size_t end = begin;
    while (end < samples.size() && (i == nx - 1 || piece_of(cuts.x.data(), nx, samples[end].at[0]) == i)) ++end;
    std::span<Sample> slab(samples.data() + begin, end - begin);
    double* y = &cuts.y[static_cast<std::size_t>(i * (ny + 1))];
    weighted_cuts(slab, 1, ny, domain_.lo[1], domain_.hi[1], y, stats);
    std::size_t column_begin = 0;
    for (int j = 0; j < ny; ++j) {
      std::size_t column_end = column_begin;
      while (column_end < slab.size() && (j == ny - 1 || piece_of(y, ny, slab[column_end].at[1]) == j)) ++column_end;
      weighted_cuts(slab.subspan(column_begin, column_end - column_begin), 2, nz, domain_.lo[2], domain_.hi[2],
                    &cuts.z[static_cast<std::size_t>((i * ny + j) * (nz + 1))], stats);
      column_begin = column_end;
    }
    begin = end;
  }
  work.done(static_cast<double>(samples.size()));
  if (root_only) broadcast_cuts(cuts, stats);
}

void Multisection::broadcast_cuts(Cuts& cuts, RebalanceStats& stats) const {
  for (std::vector<double>* part : {&cuts.x, &cuts.y, &cuts.z}) {
    check_mpi(MPI_Bcast(part->data(), checked_int(part->size(), "Multisection::rebalance"), MPI_DOUBLE, 0, comm_->get()),
              "MPI_Bcast");
    if (comm_->rank() != 0) stats.bytes_received += part->size() * sizeof(double);
  }
}

void Multisection::cuts_by_level(std::span<const double> x, std::span<const std::uint64_t> cost,
                                 std::vector<detail::Rest> items, Cuts& cuts, RebalanceStats& stats) const {
  const auto [nx, ny, nz] = divisions_;
  const auto index = grid_index(comm_->rank(), divisions_);
  const int i = index[0], j = index[1];
  const Lines& lines = *lines_;
  // One level: exact histogram cuts over the level's communicator, or
  // samples gathered along `chain` (the level's communicator, line by line).
  const auto level_cuts = [&](int axis, const Comm& level, std::initializer_list<const Comm*> chain,
                              std::span<const double> values, std::span<const std::uint64_t> costs, int parts,
                              double* out) {
    if (options_.method == CutMethod::histogram) {
      histogram_cuts(level, values, costs, parts, domain_.lo[axis], domain_.hi[axis], options_.bins,
                     options_.tolerance, out, stats);
      return;
    }
    const double budget = options_.total_samples > 0
                              ? static_cast<double>(options_.total_samples)
                              : static_cast<double>(options_.samples_per_rank) * parts;
    const std::uint64_t seed = options_.seed + 7919u * static_cast<std::uint64_t>(comm_->rank()) +
                               104729u * static_cast<std::uint64_t>(axis);
    sampled_cuts(level, chain, values, costs, parts, domain_.lo[axis], domain_.hi[axis], budget, seed, out, stats);
  };
  // Level x over all ranks.
  if (nx > 1) level_cuts(0, *comm_, {&lines.column, &lines.y_line, &lines.x_line}, x, cost, nx, cuts.x.data());
  if (ny == 1 && nz == 1) return;
  // Level y within slab i, after routing each coordinate pair along the x
  // line to the rank of its slab (few move when the cuts moved little).
  std::vector<int> where;
  if (nx > 1) {
    where.resize(x.size());
    for (std::size_t n = 0; n < x.size(); ++n) where[n] = piece_of(cuts.x.data(), nx, x[n]);
    items = route(lines.x_line, std::move(items), where, stats);
  }
  // Unweighted: every cost is 1, no array needed.
  std::vector<std::uint64_t> item_cost(cost.empty() ? 0 : items.size());
  for (std::size_t n = 0; n < item_cost.size(); ++n) item_cost[n] = items[n].cost;
  double* y = &cuts.y[static_cast<std::size_t>(i * (ny + 1))];
  if (ny > 1) {
    std::vector<double> values(items.size());
    for (std::size_t n = 0; n < items.size(); ++n) values[n] = items[n].y;
    level_cuts(1, lines.slab, {&lines.column, &lines.y_line}, values, item_cost, ny, y);
    if (nx > 1) {  // every rank holds every slab's y cuts
      const auto per = static_cast<std::size_t>(ny + 1);
      allgather_cuts(lines.x_line, y, per, cuts.y.data(), stats);
    }
  }
  if (nz == 1) return;
  // Level z within column (i, j), after routing along the y line.
  if (ny > 1) {
    where.resize(items.size());
    for (std::size_t n = 0; n < items.size(); ++n) where[n] = piece_of(y, ny, items[n].y);
    items = route(lines.y_line, std::move(items), where, stats);
  }
  std::vector<double> values(items.size());
  item_cost.resize(cost.empty() ? 0 : items.size());
  for (std::size_t n = 0; n < items.size(); ++n) values[n] = items[n].z;
  for (std::size_t n = 0; n < item_cost.size(); ++n) item_cost[n] = items[n].cost;
  const auto per = static_cast<std::size_t>(nz + 1);
  double* z = &cuts.z[static_cast<std::size_t>(i * ny + j) * per];
  level_cuts(2, lines.column, {&lines.column}, values, item_cost, nz, z);
  // Share: the columns of the slab over the y line, then the slabs over the x line.
  if (ny > 1) allgather_cuts(lines.y_line, z, per, &cuts.z[static_cast<std::size_t>(i * ny) * per], stats);
  if (nx > 1)
    allgather_cuts(lines.x_line, &cuts.z[static_cast<std::size_t>(i * ny) * per], per * static_cast<std::size_t>(ny),
                   cuts.z.data(), stats);
}

}  // namespace domex

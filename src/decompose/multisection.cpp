#include <domex/decompose/multisection.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

namespace domex {

namespace {

constexpr double two_pi = 2 * std::numbers::pi;

struct Sample {
  Point at;
  double weight;
};

/// Cuts [lo, hi) into `parts` pieces holding equal sample weight; the cut
/// between two samples is their midpoint. Sorts `samples` along `axis`.
/// Without samples the cut is by equal length.
void weighted_cuts(std::span<Sample> samples, int axis, int parts, double lo, double hi, double* cuts) {
  cuts[0] = lo;
  cuts[parts] = hi;
  double total = 0;
  for (const auto& sample : samples) total += sample.weight;
  if (samples.empty() || total <= 0) {
    for (int k = 1; k < parts; ++k) cuts[k] = lo + (hi - lo) * k / parts;
    return;
  }
  std::sort(samples.begin(), samples.end(), [axis](const Sample& a, const Sample& b) {
    return a.at[axis] < b.at[axis] || (a.at[axis] == b.at[axis] && a.at < b.at);
  });
  double running = 0;
  std::size_t i = 0;
  for (int k = 1; k < parts; ++k) {
    const double target = total * k / parts;
    while (i < samples.size() && running + samples[i].weight <= target) running += samples[i++].weight;
    // Samples [0, i) hold at most the target weight: cut before sample i.
    double cut;
    if (i == 0) cut = samples[0].at[axis];
    else if (i >= samples.size()) cut = samples.back().at[axis];
    else cut = 0.5 * (samples[i - 1].at[axis] + samples[i].at[axis]);
    cuts[k] = std::clamp(cut, cuts[k - 1], hi);
  }
}

/// Index of the piece of [cuts[0], cuts[n]) holding x: O(log n).
int piece_of(const double* cuts, int n, double x) {
  return static_cast<int>(std::upper_bound(cuts + 1, cuts + n, x) - (cuts + 1));
}

}  // namespace

Multisection::Multisection(const Comm& comm, Box domain, MultisectionOptions options)
    : comm_(&comm), domain_(domain), options_(options) {
  if (options_.geometry == Geometry::cylindrical) {
    options_.periodic[1] = true;
    domain_.lo[1] = 0;
    domain_.hi[1] = two_pi;
    if (domain_.lo[0] < 0) fail("Multisection", fmt::format("cylindrical radius range starts below 0: {}", domain_.lo[0]));
  }
  for (int a = 0; a < 3; ++a)
    if (!(domain_.hi[a] > domain_.lo[a]))
      fail("Multisection", fmt::format("empty domain on axis {}: [{}, {})", a, domain_.lo[a], domain_.hi[a]));
  divisions_ = options_.divisions;
  check_mpi(MPI_Dims_create(comm.size(), 3, divisions_.data()), "MPI_Dims_create");
  if (divisions_[0] * divisions_[1] * divisions_[2] != comm.size())
    fail("Multisection", fmt::format("divisions {}x{}x{} do not multiply to {} ranks", divisions_[0], divisions_[1],
                                     divisions_[2], comm.size()));
  const auto [nx, ny, nz] = divisions_;
  x_cuts_.resize(static_cast<std::size_t>(nx + 1));
  y_cuts_.resize(static_cast<std::size_t>(nx * (ny + 1)));
  z_cuts_.resize(static_cast<std::size_t>(nx * ny * (nz + 1)));
  weighted_cuts({}, 0, nx, domain_.lo[0], domain_.hi[0], x_cuts_.data());
  for (int i = 0; i < nx; ++i) {
    weighted_cuts({}, 1, ny, domain_.lo[1], domain_.hi[1], &y_cuts_[static_cast<std::size_t>(i * (ny + 1))]);
    for (int j = 0; j < ny; ++j)
      weighted_cuts({}, 2, nz, domain_.lo[2], domain_.hi[2],
                    &z_cuts_[static_cast<std::size_t>((i * ny + j) * (nz + 1))]);
  }
  compute_neighbours();
}

Point Multisection::coordinates(const Point& p) const noexcept {
  if (options_.geometry == Geometry::cartesian) return p;
  double phi = std::atan2(p[1], p[0]);
  if (phi < 0) phi += two_pi;
  if (phi >= two_pi) phi -= two_pi;
  return {std::hypot(p[0], p[1]), phi, p[2]};
}

Point Multisection::wrap(const Point& c) const noexcept {
  Point w = c;
  for (int a = 0; a < 3; ++a)
    if (options_.periodic[a] && std::isfinite(w[a])) {
      const double length = domain_.extent(a);
      w[a] = domain_.lo[a] + std::fmod(w[a] - domain_.lo[a], length);
      if (w[a] < domain_.lo[a]) w[a] += length;
      if (w[a] >= domain_.hi[a]) w[a] = domain_.lo[a];
    }
  return w;
}

int Multisection::try_owner(const Point& position) const noexcept {
  const Point c = wrap(coordinates(position));
  for (int a = 0; a < 3; ++a)
    if (!(c[a] >= domain_.lo[a] && c[a] < domain_.hi[a])) return -1;  // NaN fails too
  const auto [nx, ny, nz] = divisions_;
  const int i = piece_of(x_cuts_.data(), nx, c[0]);
  const int j = piece_of(&y_cuts_[static_cast<std::size_t>(i * (ny + 1))], ny, c[1]);
  const int k = piece_of(&z_cuts_[static_cast<std::size_t>((i * ny + j) * (nz + 1))], nz, c[2]);
  return (i * ny + j) * nz + k;
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

Box Multisection::box(int rank) const {
  const auto [nx, ny, nz] = divisions_;
  if (rank < 0 || rank >= nx * ny * nz) fail("Multisection::box", fmt::format("rank {} out of range", rank));
  const int i = rank / (ny * nz), j = (rank / nz) % ny, k = rank % nz;
  const double* y = &y_cuts_[static_cast<std::size_t>(i * (ny + 1))];
  const double* z = &z_cuts_[static_cast<std::size_t>((i * ny + j) * (nz + 1))];
  return {{x_cuts_[static_cast<std::size_t>(i)], y[j], z[k]},
          {x_cuts_[static_cast<std::size_t>(i + 1)], y[j + 1], z[k + 1]}};
}

std::vector<int> Multisection::neighbours_of(int rank) const {
  const Box mine = box(rank);
  const double margin = options_.neighbour_margin;
  std::vector<int> result;
  const int size = divisions_[0] * divisions_[1] * divisions_[2];
  for (int other = 0; other < size; ++other) {
    if (other == rank) continue;
    const Box theirs = box(other);
    bool touches = true;
    for (int a = 0; a < 3 && touches; ++a) {
      const double tolerance = 1e-12 * domain_.extent(a) + margin;
      const auto overlaps = [&](double shift) {
        return theirs.lo[a] + shift <= mine.hi[a] + tolerance && mine.lo[a] - tolerance <= theirs.hi[a] + shift;
      };
      const double length = domain_.extent(a);
      touches = overlaps(0) || (options_.periodic[a] && (overlaps(length) || overlaps(-length)));
    }
    if (touches) result.push_back(other);
  }
  return result;
}

void Multisection::compute_neighbours() { neighbours_ = neighbours_of(comm_->rank()); }

void Multisection::rebalance(std::span<const Point> positions, std::span<const double> weights) {
  if (!weights.empty() && weights.size() != positions.size())
    fail("Multisection::rebalance",
         fmt::format("{} weights for {} positions", weights.size(), positions.size()));
  const auto weight = [&](std::size_t i) { return weights.empty() ? 1.0 : weights[i]; };
  double local[2] = {0, static_cast<double>(positions.size())};  // cost, count
  for (std::size_t i = 0; i < positions.size(); ++i) {
    if (!(weight(i) >= 0) || !std::isfinite(weight(i)))
      fail("Multisection::rebalance", fmt::format("particle {} has invalid cost weight {}", i, weight(i)));
    local[0] += weight(i);
  }
  double total[2] = {local[0], local[1]};
  comm_->allreduce_in_place(std::span<double>(total), MPI_SUM);

  // This rank's samples: all particles if the ranks hold no more than the
  // sample budget (exact cuts), else a share proportional to this rank's
  // cost, drawn with probability proportional to each particle's cost, so
  // every sample stands for the same cost.
  std::vector<Sample> mine;
  const auto budget = static_cast<double>(options_.samples);
  const auto sample_of = [&](std::size_t i, double w) {
    return Sample{wrap(coordinates(positions[i])), w};
  };
  if (total[1] <= budget) {
    mine.reserve(positions.size());
    for (std::size_t i = 0; i < positions.size(); ++i) mine.push_back(sample_of(i, weight(i)));
  } else if (local[0] > 0 && total[0] > 0) {
    const auto count = static_cast<std::size_t>(std::llround(budget * local[0] / total[0]));
    std::vector<double> cumulative(positions.size());
    double running = 0;
    for (std::size_t i = 0; i < positions.size(); ++i) cumulative[i] = running += weight(i);
    std::mt19937_64 random(options_.seed + static_cast<std::uint64_t>(comm_->rank()) * 7919u);
    std::uniform_real_distribution<double> uniform(0.0, running);
    for (std::size_t s = 0; s < count; ++s) {
      const auto i = static_cast<std::size_t>(
          std::upper_bound(cumulative.begin(), cumulative.end(), uniform(random)) - cumulative.begin());
      mine.push_back(sample_of(std::min(i, positions.size() - 1), local[0] / static_cast<double>(count)));
    }
  }
  for (const auto& sample : mine)
    for (int a = 0; a < 3; ++a)
      if (!(sample.at[a] >= domain_.lo[a] && sample.at[a] < domain_.hi[a]))
        fail("Multisection::rebalance",
             fmt::format("a particle at ({}, {}, {}) is NaN or outside the domain on axis {}", sample.at[0],
                         sample.at[1], sample.at[2], a));
  // Every rank computes the same cuts from the same gathered samples.
  auto samples = comm_->allgatherv<Sample>(mine);
  const auto [nx, ny, nz] = divisions_;
  const auto old_x = x_cuts_, old_y = y_cuts_, old_z = z_cuts_;
  weighted_cuts(samples, 0, nx, domain_.lo[0], domain_.hi[0], x_cuts_.data());
  // Samples sorted by x: slab i holds those between its cuts.
  std::size_t begin = 0;
  for (int i = 0; i < nx; ++i) {
    std::size_t end = begin;
    while (end < samples.size() && (i == nx - 1 || piece_of(x_cuts_.data(), nx, samples[end].at[0]) == i)) ++end;
    std::span<Sample> slab(samples.data() + begin, end - begin);
    double* y = &y_cuts_[static_cast<std::size_t>(i * (ny + 1))];
    weighted_cuts(slab, 1, ny, domain_.lo[1], domain_.hi[1], y);
    std::size_t column_begin = 0;
    for (int j = 0; j < ny; ++j) {
      std::size_t column_end = column_begin;
      while (column_end < slab.size() && (j == ny - 1 || piece_of(y, ny, slab[column_end].at[1]) == j)) ++column_end;
      weighted_cuts(slab.subspan(column_begin, column_end - column_begin), 2, nz, domain_.lo[2], domain_.hi[2],
                    &z_cuts_[static_cast<std::size_t>((i * ny + j) * (nz + 1))]);
      column_begin = column_end;
    }
    begin = end;
  }
  if (options_.smoothing > 0) {
    const double s = std::clamp(options_.smoothing, 0.0, 1.0);
    for (std::size_t c = 0; c < x_cuts_.size(); ++c) x_cuts_[c] = (1 - s) * x_cuts_[c] + s * old_x[c];
    for (std::size_t c = 0; c < y_cuts_.size(); ++c) y_cuts_[c] = (1 - s) * y_cuts_[c] + s * old_y[c];
    for (std::size_t c = 0; c < z_cuts_.size(); ++c) z_cuts_[c] = (1 - s) * z_cuts_[c] + s * old_z[c];
  }
  compute_neighbours();
}

}  // namespace domex

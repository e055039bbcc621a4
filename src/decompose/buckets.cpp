// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/collective.hpp>
#include <domex/decompose/buckets.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numeric>

namespace domex {

namespace {

/// Interleaves the bits of (i, j, k): the Morton key of a bucket.
std::uint64_t morton(std::uint32_t i, std::uint32_t j, std::uint32_t k) {
  std::uint64_t key = 0;
  for (int bit = 0; bit < 21; ++bit)
    key |= (std::uint64_t{(i >> bit) & 1u} << (3 * bit)) | (std::uint64_t{(j >> bit) & 1u} << (3 * bit + 1)) |
           (std::uint64_t{(k >> bit) & 1u} << (3 * bit + 2));
  return key;
}

}  // namespace

BucketDecomposition::BucketDecomposition(const Comm& comm, Box domain, BucketOptions options)
    : comm_(&comm), domain_(domain), options_(options) {
  double maxima[2] = {0, 0};  // hash of domain and options, and its negative: equal on every rank?
  agree(comm, "BucketDecomposition", [&] {
    const auto [nx, ny, nz] = options_.buckets;
    if (nx < 1 || ny < 1 || nz < 1 || static_cast<long>(nx) * ny * nz > (1L << 30))
      fail("BucketDecomposition", fmt::format("bad bucket counts {}x{}x{}", nx, ny, nz));
    std::uint64_t hash = 0;
    for (int a = 0; a < 3; ++a) {
      if (!(domain_.hi[a] > domain_.lo[a]) || !std::isfinite(domain_.hi[a] - domain_.lo[a]))
        fail("BucketDecomposition",
             fmt::format("empty or infinite domain on axis {}: [{}, {})", a, domain_.lo[a], domain_.hi[a]));
      for (std::uint64_t v : {std::bit_cast<std::uint64_t>(domain_.lo[a]), std::bit_cast<std::uint64_t>(domain_.hi[a]),
                              static_cast<std::uint64_t>(options_.buckets[a]), std::uint64_t{options_.periodic[a]}})
        hash ^= v + 0x9E3779B97F4A7C15ull + (hash << 6) + (hash >> 2);
    }
    maxima[0] = static_cast<double>(hash >> 12);
    maxima[1] = -maxima[0];
  }, maxima);
  if (maxima[0] != -maxima[1])
    fail("BucketDecomposition", "the ranks passed different domains or options (every rank must pass the same)");
  const auto [nx, ny, nz] = options_.buckets;
  const int count = nx * ny * nz;
  curve_.resize(static_cast<std::size_t>(count));
  std::iota(curve_.begin(), curve_.end(), 0);
  std::vector<std::uint64_t> keys(curve_.size());
  for (int b = 0; b < count; ++b)
    keys[static_cast<std::size_t>(b)] = morton(static_cast<std::uint32_t>(b % nx),
                                               static_cast<std::uint32_t>((b / nx) % ny),
                                               static_cast<std::uint32_t>(b / (nx * ny)));
  std::sort(curve_.begin(), curve_.end(), [&](int a, int b) {
    return keys[static_cast<std::size_t>(a)] < keys[static_cast<std::size_t>(b)];
  });
  owner_.resize(curve_.size());
  assign(std::vector<std::uint64_t>(curve_.size(), 1), owner_, neighbours_);
}

int BucketDecomposition::bucket_of(const Point& position) const noexcept {
  int index[3];
  for (int a = 0; a < 3; ++a) {
    double x = position[a];
    const double length = domain_.extent(a);
    if (options_.periodic[a] && !(x >= domain_.lo[a] && x < domain_.hi[a]) && std::isfinite(x)) {
      x = domain_.lo[a] + std::fmod(x - domain_.lo[a], length);
      if (x < domain_.lo[a]) x += length;
      if (x >= domain_.hi[a]) x = domain_.lo[a];  // -tiny + length rounds to length
    }
    if (!(x >= domain_.lo[a] && x < domain_.hi[a])) return -1;
    index[a] = std::min(static_cast<int>((x - domain_.lo[a]) / length * options_.buckets[a]), options_.buckets[a] - 1);
  }
  return index[0] + options_.buckets[0] * (index[1] + options_.buckets[1] * index[2]);
}

Box BucketDecomposition::bucket_box(int bucket) const noexcept {
  const auto [nx, ny, nz] = options_.buckets;
  const int index[3] = {bucket % nx, (bucket / nx) % ny, bucket / (nx * ny)};
  Box box;
  for (int a = 0; a < 3; ++a) {
    const double width = domain_.extent(a) / options_.buckets[a];
    box.lo[a] = domain_.lo[a] + index[a] * width;
    box.hi[a] = index[a] + 1 == options_.buckets[a] ? domain_.hi[a] : domain_.lo[a] + (index[a] + 1) * width;
  }
  return box;
}

int BucketDecomposition::try_owner(const Point& position) const noexcept {
  const int bucket = bucket_of(position);
  return bucket < 0 ? -1 : owner_[static_cast<std::size_t>(bucket)];
}

int BucketDecomposition::owner(const Point& position) const {
  const int rank = try_owner(position);
  if (rank < 0)
    fail("BucketDecomposition::owner", fmt::format("position ({}, {}, {}) is NaN or outside the domain on a "
                                                   "non-periodic axis",
                                                   position[0], position[1], position[2]));
  return rank;
}

std::vector<int> BucketDecomposition::buckets_of(int rank) const {
  std::vector<int> result;
  for (int bucket : curve_)
    if (owner_[static_cast<std::size_t>(bucket)] == rank) result.push_back(bucket);
  return result;
}

void BucketDecomposition::rebalance(std::span<const Point> positions, std::span<const double> weights) {
  // Rank-local validation, agreed over all ranks in one reduction that also
  // brings the global maximum weight and particle count.
  std::vector<int> bucket(positions.size());
  double maxima[2] = {0, static_cast<double>(positions.size())};
  agree(*comm_, "BucketDecomposition::rebalance", [&] {
    if (!weights.empty() && weights.size() != positions.size())
      fail("BucketDecomposition::rebalance",
           fmt::format("{} weights for {} positions", weights.size(), positions.size()));
    for (std::size_t i = 0; i < positions.size(); ++i) {
      bucket[i] = bucket_of(positions[i]);
      if (bucket[i] < 0)
        fail("BucketDecomposition::rebalance",
             fmt::format("particle {} at ({}, {}, {}) is NaN, infinite or outside the domain on a non-periodic axis",
                         i, positions[i][0], positions[i][1], positions[i][2]));
    }
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (!(weights[i] >= 0 && std::isfinite(weights[i])))
        fail("BucketDecomposition::rebalance",
             fmt::format("particle {} has cost weight {} (must be finite and >= 0)", i, weights[i]));
      maxima[0] = std::max(maxima[0], weights[i]);
    }
  }, maxima);
  // Integer cost per bucket: weights scaled by the global maximum so that the
  // total stays below 2^62 (exact sums, identical on every rank, no
  // overflow for any finite weights); no or all-zero weights: counts.
  std::vector<std::uint64_t> cost(curve_.size(), 0);
  if (!weights.empty() && maxima[0] > 0) {
    const double bound = static_cast<double>(comm_->size()) * std::max(maxima[1], 1.0);
    const int bits = std::max(1, 61 - static_cast<int>(std::ceil(std::log2(bound + 1))));
    const int exponent = std::ilogb(maxima[0]) + 1;
    for (std::size_t i = 0; i < positions.size(); ++i)
      cost[static_cast<std::size_t>(bucket[i])] += static_cast<std::uint64_t>(std::ldexp(weights[i], bits - exponent));
  } else {
    for (int b : bucket) ++cost[static_cast<std::size_t>(b)];
  }
  comm_->allreduce_in_place(std::span<std::uint64_t>(cost), MPI_SUM);
  // Strong guarantee: the assignment changes only once it is complete.
  std::vector<int> owner(owner_.size()), neighbours;
  assign(cost, owner, neighbours);
  owner_.swap(owner);
  neighbours_.swap(neighbours);
}

void BucketDecomposition::assign(std::span<const std::uint64_t> cost, std::vector<int>& owner,
                                 std::vector<int>& neighbours) const {
  const int ranks = comm_->size();
  std::uint64_t total = 0;
  for (auto c : cost) total += c;
  // Walk the curve; a bucket goes to the rank whose share its cost midpoint
  // falls in. Runs are contiguous and every rank's share is total / P up to
  // one bucket. Integer costs and long double arithmetic: the same on every rank.
  std::uint64_t running = 0;
  for (std::size_t n = 0; n < curve_.size(); ++n) {
    const auto bucket = static_cast<std::size_t>(curve_[n]);
    int rank;
    if (total > 0) {
      const long double middle = static_cast<long double>(running) + 0.5L * static_cast<long double>(cost[bucket]);
      rank = static_cast<int>(std::min<long double>(middle / static_cast<long double>(total) * ranks, ranks - 1));
    } else {
      rank = static_cast<int>(n * static_cast<std::size_t>(ranks) / curve_.size());
    }
    owner[bucket] = rank;
    running += cost[bucket];
  }
  // Neighbours: owners of the 26 buckets around each of this rank's buckets.
  const auto [nx, ny, nz] = options_.buckets;
  std::vector<char> seen(static_cast<std::size_t>(ranks), 0);
  for (int b = 0; b < nx * ny * nz; ++b) {
    if (owner[static_cast<std::size_t>(b)] != comm_->rank()) continue;
    const int i = b % nx, j = (b / nx) % ny, k = b / (nx * ny);
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          int at[3] = {i + dx, j + dy, k + dz};
          bool inside = true;
          for (int a = 0; a < 3; ++a) {
            const int n = options_.buckets[a];
            if (at[a] < 0 || at[a] >= n) {
              if (!options_.periodic[a]) inside = false;
              at[a] = (at[a] + n) % n;
            }
          }
          if (inside) seen[static_cast<std::size_t>(owner[static_cast<std::size_t>(at[0] + nx * (at[1] + ny * at[2]))])] = 1;
        }
  }
  seen[static_cast<std::size_t>(comm_->rank())] = 0;
  neighbours.clear();
  for (int r = 0; r < ranks; ++r)
    if (seen[static_cast<std::size_t>(r)]) neighbours.push_back(r);
}

}  // namespace domex

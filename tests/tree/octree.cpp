// SPDX-License-Identifier: BSD-3-Clause
#include <domex/tree/octree.hpp>
#include <domex/tree/sort.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace {

struct SortedSet {
  std::vector<domex::MortonKey> keys;
  std::vector<domex::Point> positions;
  std::vector<double> masses;
};

SortedSet random_set(std::size_t n, std::uint64_t seed, const domex::Box& root) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<domex::Point> x(n);
  std::vector<double> m(n);
  std::vector<domex::KeyIndex> order(n);
  for (std::size_t i = 0; i < n; ++i) {
    // Half uniform, half in a small clump: deep and shallow branches.
    const double scale = i % 2 ? 1.0 : 0.01;
    for (int a = 0; a < 3; ++a) x[i][a] = root.lo[a] + root.extent(a) * (i % 2 ? u(random) : 0.3 + scale * u(random));
    m[i] = 0.5 + u(random);
    order[i] = {domex::morton_key(x[i], root), i};
  }
  domex::sort_by_key(order, 1);
  SortedSet set;
  for (const auto& item : order) {
    set.keys.push_back(item.key);
    set.positions.push_back(x[item.index]);
    set.masses.push_back(m[item.index]);
  }
  return set;
}

TEST(Octree, CellsPartitionTheirParentsAndLeavesRespectTheLimit) {
  const domex::Box root{{0, 0, 0}, {2, 2, 2}};
  const auto set = random_set(20000, 17, root);
  for (int leaf_limit : {1, 8, 64}) {
    domex::Octree tree;
    tree.build(set.keys, root, leaf_limit);
    const auto& cells = tree.cells();
    ASSERT_EQ(tree.root().count(), set.keys.size());
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const auto& cell = cells[c];
      ASSERT_GT(cell.count(), 0u) << c;  // no empty cell is ever created below the root
      for (std::uint32_t k = cell.begin; k < cell.end; ++k)
        ASSERT_EQ(domex::morton_cell_of(set.keys[k], cell.level), cell.key) << "item " << k << " outside cell " << c;
      if (cell.leaf()) {
        EXPECT_TRUE(cell.count() <= static_cast<std::uint32_t>(leaf_limit) || cell.level == domex::morton_levels);
        continue;
      }
      std::uint32_t next = cell.begin;
      for (std::uint32_t k = 0; k < cell.child_count; ++k) {
        const auto& child = cells[cell.first_child + k];
        ASSERT_GT(cell.first_child + k, c);
        ASSERT_EQ(child.begin, next);
        ASSERT_EQ(child.level, cell.level + 1);
        next = child.end;
      }
      ASSERT_EQ(next, cell.end);
    }
  }
}

TEST(Octree, MomentsEqualDirectSumsAndGroupsCoverEveryItemOnce) {
  const domex::Box root{{0, 0, 0}, {1, 1, 1}};
  const auto set = random_set(5000, 23, root);
  domex::Octree tree;
  tree.build(set.keys, root, 8);
  tree.compute_moments(set.positions, set.masses, {}, {}, true);
  for (const auto& cell : tree.cells()) {
    double mass = 0;
    domex::Point weighted{0, 0, 0};
    for (std::uint32_t k = cell.begin; k < cell.end; ++k) {
      mass += set.masses[k];
      for (int a = 0; a < 3; ++a) weighted[a] += set.masses[k] * set.positions[k][a];
    }
    ASSERT_NEAR(cell.moments.mass, mass, 1e-12 * mass);
    domex::Quadrupole q{};
    for (int a = 0; a < 3; ++a) ASSERT_NEAR(cell.moments.centre[a], weighted[a] / mass, 1e-12);
    for (std::uint32_t k = cell.begin; k < cell.end; ++k) {
      domex::Point d;
      for (int a = 0; a < 3; ++a) d[a] = set.positions[k][a] - cell.moments.centre[a];
      const double m = set.masses[k];
      q[0] += m * d[0] * d[0], q[1] += m * d[1] * d[1], q[2] += m * d[2] * d[2];
      q[3] += m * d[0] * d[1], q[4] += m * d[0] * d[2], q[5] += m * d[1] * d[2];
    }
    const double scale = mass * cell.size * cell.size;
    for (int k = 0; k < 6; ++k) ASSERT_NEAR(cell.moments.quadrupole[k], q[k], 1e-10 * scale);
  }
  for (std::size_t limit : {1ul, 64ul, 10000ul}) {
    std::vector<int> covered(set.keys.size(), 0);
    for (std::uint32_t c : tree.groups(limit)) {
      const auto& cell = tree.cells()[c];
      EXPECT_TRUE(cell.count() <= limit || cell.leaf());
      for (std::uint32_t k = cell.begin; k < cell.end; ++k) ++covered[k];
    }
    for (int times : covered) ASSERT_EQ(times, 1);
  }
}

TEST(Octree, BmaxBoundsEveryItemAndIsExactInLeaves) {
  // b_max (the opening length of Opening::particles) must never be too
  // small, or a cell would be used whole too close; with extents (LET
  // pseudo-particles) it covers each item's sphere. Above the leaves it is
  // a bound, but never looser than the farthest corner of the Morton cell
  // when no item has an extent.
  const domex::Box root{{0, 0, 0}, {1, 1, 1}};
  const auto set = random_set(5000, 29, root);
  std::mt19937_64 random(31);
  std::uniform_real_distribution<double> u(0, 0.02);
  std::vector<double> extents(set.positions.size());
  for (std::size_t k = 0; k < extents.size(); ++k) extents[k] = k % 3 == 0 ? u(random) : 0.0;
  for (bool with_extents : {false, true}) {
    domex::Octree tree;
    tree.build(set.keys, root, 8);
    const std::span<const double> item_extents = with_extents ? std::span<const double>(extents) : std::span<const double>();
    tree.compute_moments(set.positions, set.masses, {}, item_extents, false);
    for (const auto& cell : tree.cells()) {
      double farthest = 0;
      for (std::uint32_t k = cell.begin; k < cell.end; ++k) {
        double d2 = 0;
        for (int a = 0; a < 3; ++a) d2 += std::pow(set.positions[k][a] - cell.moments.centre[a], 2);
        farthest = std::max(farthest, std::sqrt(d2) + (with_extents ? extents[k] : 0.0));
      }
      ASSERT_GE(cell.bmax, farthest * (1 - 1e-12));
      if (cell.leaf()) {
        ASSERT_NEAR(cell.bmax, farthest, 1e-12);
      }
      if (!with_extents) {
        ASSERT_LE(cell.bmax, cell.opening * (1 + 1e-12));
      }
    }
  }
}

TEST(Octree, EmptyAndSingleItem) {
  const domex::Box root{{0, 0, 0}, {1, 1, 1}};
  domex::Octree tree;
  tree.build({}, root, 8);
  tree.compute_moments({}, {}, {}, {}, false);
  EXPECT_EQ(tree.cells().size(), 1u);
  EXPECT_EQ(tree.root().moments.mass, 0.0);
  EXPECT_TRUE(tree.groups(64).empty());
  const std::vector<domex::MortonKey> key{domex::morton_key({0.25, 0.5, 0.75}, root)};
  const std::vector<domex::Point> x{{0.25, 0.5, 0.75}};
  const std::vector<double> m{2.0};
  tree.build(key, root, 8);
  tree.compute_moments(x, m, {}, {}, true);
  EXPECT_EQ(tree.root().moments.mass, 2.0);
  EXPECT_EQ(tree.root().moments.centre, x[0]);
  EXPECT_EQ(tree.groups(64).size(), 1u);
}

TEST(Octree, CoincidentItemsStopAtTheDeepestLevel) {
  // More items than the leaf limit at one point: split down to the deepest
  // Morton level, one cell a level, and kept there in one leaf; the same on
  // any number of threads.
  const domex::Box root{{0, 0, 0}, {1, 1, 1}};
  const domex::Point at{0.3, 0.6, 0.9};
  const std::vector<domex::MortonKey> keys(100, domex::morton_key(at, root));
  const std::vector<domex::Point> x(100, at);
  const std::vector<double> m(100, 0.5);
  domex::Octree serial;
  serial.build(keys, root, 8, 1);
  serial.compute_moments(x, m, {}, {}, true, 1);
  ASSERT_EQ(serial.cells().size(), static_cast<std::size_t>(domex::morton_levels) + 1);
  const auto& deepest = serial.cells().back();
  EXPECT_TRUE(deepest.leaf());
  EXPECT_EQ(deepest.level, domex::morton_levels);
  EXPECT_EQ(deepest.count(), 100u);
  EXPECT_EQ(serial.root().moments.mass, 50.0);
  for (int a = 0; a < 3; ++a) EXPECT_NEAR(serial.root().moments.centre[a], at[a], 1e-12);
  for (int threads : {2, 3}) {
    domex::Octree parallel;
    parallel.build(keys, root, 8, threads);
    parallel.compute_moments(x, m, {}, {}, true, threads);
    ASSERT_EQ(parallel.cells().size(), serial.cells().size());
    for (std::size_t c = 0; c < serial.cells().size(); ++c) {
      EXPECT_EQ(parallel.cells()[c].moments.mass, serial.cells()[c].moments.mass);
      EXPECT_EQ(parallel.cells()[c].bmax, serial.cells()[c].bmax);
    }
  }
}

}  // namespace

namespace {

// Links and moments run level by level on several threads: every field of
// every cell is the same bits as on one thread (clumped and uniform items,
// quadrupoles and item extents included).
/// Every cell of two trees equal: structure bitwise, moments and boxes bytewise.
void expect_same_cells(const domex::Octree& got, const domex::Octree& expected) {
  ASSERT_EQ(got.cells().size(), expected.cells().size());
  for (std::size_t c = 0; c < expected.cells().size(); ++c) {
    const auto &a = expected.cells()[c], &b = got.cells()[c];
    ASSERT_TRUE(a.begin == b.begin && a.end == b.end && a.first_child == b.first_child &&
                a.child_count == b.child_count && a.level == b.level && a.key == b.key)
        << "cell " << c;
    ASSERT_EQ(std::memcmp(&a.moments, &b.moments, sizeof(a.moments)), 0) << "cell " << c;
    ASSERT_EQ(std::memcmp(&a.box, &b.box, sizeof(a.box)), 0) << "cell " << c;
    ASSERT_EQ(a.size, b.size);
    ASSERT_EQ(a.opening, b.opening);
    ASSERT_EQ(a.bmax, b.bmax);
  }
}

TEST(Octree, CellsDoNotDependOnTheThreads) {
  const domex::Box root{{0, 0, 0}, {1, 1, 1}};
  const auto set = random_set(30000, 29, root);
  std::vector<domex::Quadrupole> item_quadrupoles(set.keys.size());
  std::vector<double> item_extents(set.keys.size());
  for (std::size_t i = 0; i < set.keys.size(); ++i) {
    item_extents[i] = i % 3 == 0 ? 1e-3 * static_cast<double>(i % 7) : 0.0;
    for (int k = 0; k < 6; ++k) item_quadrupoles[i][static_cast<std::size_t>(k)] = 1e-6 * static_cast<double>((i + k) % 5);
  }
  for (int leaf_limit : {1, 8}) {
    domex::Octree serial;
    serial.build(set.keys, root, leaf_limit, 1);
    serial.compute_moments(set.positions, set.masses, item_quadrupoles, item_extents, true, 1);
    for (int threads : {2, 3, 5}) {
      domex::Octree parallel;
      parallel.build(set.keys, root, leaf_limit, threads);
      parallel.compute_moments(set.positions, set.masses, item_quadrupoles, item_extents, true, threads);
      SCOPED_TRACE(std::to_string(threads) + " threads");
      expect_same_cells(parallel, serial);
    }
  }
}

TEST(Octree, ARebuiltTreeEqualsAFreshOne) {
  // A tree keeps its cells from build to build and overwrites them: larger,
  // smaller and other inputs, one after the other, give the cells of a
  // fresh tree.
  const domex::Box root{{0, 0, 0}, {1, 1, 1}};
  domex::Octree reused;
  for (const auto& [n, seed, leaf_limit] : {std::tuple{20000, 3, 8}, std::tuple{3000, 4, 8}, std::tuple{9000, 5, 1},
                                            std::tuple{0, 6, 8}, std::tuple{25000, 7, 16}}) {
    SCOPED_TRACE(std::to_string(n) + " items");
    const auto set = random_set(static_cast<std::size_t>(n), static_cast<std::uint64_t>(seed), root);
    domex::Octree fresh;
    fresh.build(set.keys, root, leaf_limit, 2);
    fresh.compute_moments(set.positions, set.masses, {}, {}, true, 2);
    reused.build(set.keys, root, leaf_limit, 2);
    reused.compute_moments(set.positions, set.masses, {}, {}, true, 2);
    expect_same_cells(reused, fresh);
  }
}

}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
// Octree linking and moments.

#include <domex/comm/error.hpp>
#include <domex/tree/octree.hpp>

#include "threads.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace domex {

void Octree::build(std::span<const MortonKey> sorted_keys, const Box& root, int leaf_limit, int threads) {
  if (leaf_limit < 1) fail("Octree::build", "leaf_limit " + std::to_string(leaf_limit) + " < 1");
  if (sorted_keys.size() > std::numeric_limits<std::uint32_t>::max())
    fail("Octree::build", std::to_string(sorted_keys.size()) + " items, more than 2^32 - 1");
  root_ = root;
  // The previous build's cells stay allocated and are overwritten: cells_
  // grows (zeroing the new cells, on one thread) only past its previous
  // size, and is cut to the cells made at the end. (Growing it from empty
  // at every build zeroed 64 MB at 1e6 uniform particles, leaf 8: 9 ms of
  // the build's 23 on 2 threads, Zen 3, instrumented domex-bench tree.)
  std::size_t made = 1;  // cells written so far
  const std::size_t expected = sorted_keys.size() / 2 + 16;  // (1e6 uniform, leaf 8: 0.32 cells per key)
  if (cells_.capacity() < expected) {  // room without copying the old cells (they are overwritten)
    cells_ = std::vector<TreeCell>();
    cells_.reserve(expected);
  }
  if (cells_.empty()) cells_.resize(1);
  TreeCell& top = cells_[0];
  top = TreeCell{};
  top.end = static_cast<std::uint32_t>(sorted_keys.size());
  top.box = root;
  top.size = std::max({root.extent(0), root.extent(1), root.extent(2)});
  levels_.assign({0, 1});
  const auto limit = static_cast<std::uint32_t>(leaf_limit);
  constexpr std::uint32_t linear_split = 1024;  // cells of at most this many keys are split by a scan
  const MortonKey* keys = sorted_keys.data();
  // Level by level (breadth first, the same cell order as a serial sweep):
  // each cell of a level finds its octants' ends (a counting pass over a
  // small cell's keys, binary searches in a large one; in parallel), a
  // prefix sum places the children, which are then written in
  // parallel. One parallel region for the whole build: six barriers a
  // level, no fork per level, no allocation inside the loops (cells_ grows,
  // when it must, in the single section, between them). A level's cells are
  // read from a compact copy (`frontier_`: range and key, 16 bytes) and
  // each cell of 176 bytes is written once, when its children are: three
  // passes over the cells of a level (read, first child, children) missed
  // the cache on large levels (a third of the build, 1e6 uniform particles,
  // Xeon, perf).
  // The scratch arrays only grow: growing one value-initialises the new
  // elements on one thread (resizing split_ and next_frontier_ at every level
  // took 1.0 ms a build at 1e6 uniform particles, 2 threads, Xeon).
  const auto at_least = [](auto& scratch, std::size_t size) {
    if (scratch.size() < size) scratch.resize(size);
  };
  at_least(frontier_, 1);
  frontier_[0] = {0, top.end, 0};
  std::size_t first = 0, last = 1;  // the level being split, cells [first, last)
  int level = 0;
  double size = top.size;  // the edge of the level's cells
  at_least(split_, 10);
  // The first child of each thread's share of a level's cells (then, past
  // the last share, the level's end).
  std::vector<std::size_t> share_first(static_cast<std::size_t>(std::max(1, threads)) + 1);
#pragma omp parallel num_threads(std::max(1, threads))
  while (first < last) {
    const auto share = tree_detail::thread_share(first, last);
    const int shift = 3 * (morton_levels - (level + 1));
#pragma omp for schedule(dynamic, 64)
    for (std::size_t c = first; c < last; ++c) {
      // 8 octant ends, the child count, then (below) the first child
      std::uint32_t* ends = split_.data() + 10 * (c - first);
      const Frontier& cell = frontier_[c - first];
      ends[8] = 0;
      if (cell.end - cell.begin <= limit || level >= morton_levels) continue;
      if (cell.end - cell.begin <= linear_split) {
        // A small cell: one pass over its keys finds each octant's end
        // (they are sorted: the end of the last key seen in it); cheaper
        // than 7 binary searches whose probes miss the cache. Stores only:
        // counting each octant chained every key's increment to the last
        // (the split 5.3 -> 4.3 ms a build at 1e6 uniform particles, Xeon).
        std::uint32_t last_end[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // 0: no key in the octant
        for (std::uint32_t i = cell.begin; i < cell.end; ++i) last_end[(keys[i] >> shift) & 7] = i + 1;
        std::uint32_t end = cell.begin;
        for (int octant = 0; octant < 8; ++octant) {
          if (last_end[octant] != 0) end = last_end[octant], ++ends[8];
          ends[octant] = end;
        }
        continue;
      }
      std::uint32_t begin = cell.begin;
      for (MortonKey octant = 0; octant < 8; ++octant) {
        const MortonKey next = cell.key + ((octant + 1) << shift);  // first key past this octant
        const std::uint32_t end =
            octant == 7 ? cell.end
                        : static_cast<std::uint32_t>(std::lower_bound(keys + begin, keys + cell.end, next) - keys);
        ends[octant] = end;
        ends[8] += end > begin ? 1 : 0;
        begin = end;
      }
    }
    // Exclusive prefix sum of the child counts: each cell's first child.
    // Each thread sums its share of the level, one thread adds up the
    // shares, each numbers its share. (The sum on one thread was 1.2 ms of
    // the build at 1e6 uniform particles, whatever the thread count, Xeon.)
    std::size_t children = 0;
    for (std::size_t c = share.first; c < share.last; ++c) children += split_[10 * (c - first) + 8];
    share_first[share.thread + 1] = children;
#pragma omp barrier
#pragma omp single
    {
      share_first[0] = made;
      for (std::size_t k = 1; k <= share.threads; ++k) share_first[k] += share_first[k - 1];
      if (share_first[share.threads] > cells_.size()) cells_.resize(share_first[share.threads]);
      at_least(next_frontier_, share_first[share.threads] - made);
    }
    std::size_t next = share_first[share.thread];
    for (std::size_t c = share.first; c < share.last; ++c) {
      std::uint32_t* ends = split_.data() + 10 * (c - first);
      ends[9] = static_cast<std::uint32_t>(next);
      next += ends[8];
    }
#pragma omp barrier
#pragma omp for schedule(dynamic, 64)
    for (std::size_t c = first; c < last; ++c) {
      const std::uint32_t* ends = split_.data() + 10 * (c - first);
      if (ends[8] == 0) continue;  // a leaf: first_child and child_count stay 0
      const Frontier& cell = frontier_[c - first];
      TreeCell& parent = cells_[c];
      parent.first_child = ends[9];
      parent.child_count = static_cast<std::uint8_t>(ends[8]);
      const int child_level = level + 1;
      std::uint32_t begin = cell.begin, slot = ends[9];
      for (MortonKey octant = 0; octant < 8; ++octant) {
        const std::uint32_t end = ends[octant];
        if (end > begin) {
          TreeCell& child = cells_[slot];
          child = TreeCell{};
          child.begin = begin;
          child.end = end;
          child.level = static_cast<std::uint8_t>(child_level);
          child.key = cell.key + (octant << shift);
          child.box = morton_cell_box(child.key, child_level, root);
          child.size = size * 0.5;
          next_frontier_[slot - last] = {begin, end, child.key};
          ++slot;
        }
        begin = end;
      }
    }
#pragma omp single
    {
      std::swap(frontier_, next_frontier_);
      made = share_first[share.threads];
      first = last;
      last = made;
      ++level;
      size *= 0.5;
      if (last > first) levels_.push_back(static_cast<std::uint32_t>(last));
      at_least(split_, 10 * (last - first));
    }
  }
  cells_.resize(made);
}

namespace {

/// Adds m d d^T for an offset d to a second moment (the parallel-axis shift).
void add_point_quadrupole(Quadrupole& q, double m, const Point& d) {
  q[0] += m * d[0] * d[0];
  q[1] += m * d[1] * d[1];
  q[2] += m * d[2] * d[2];
  q[3] += m * d[0] * d[1];
  q[4] += m * d[0] * d[2];
  q[5] += m * d[1] * d[2];
}

double distance(const Point& a, const Point& b) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

/// The largest distance from p to a point of the box.
double farthest_corner(const Box& box, const Point& p) {
  double d2 = 0;
  for (int a = 0; a < 3; ++a) {
    const double far = std::max({p[a] - box.lo[a], box.hi[a] - p[a], 0.0});
    d2 += far * far;
  }
  return std::sqrt(d2);
}

Point centre_of(const Box& box) {
  return {0.5 * (box.lo[0] + box.hi[0]), 0.5 * (box.lo[1] + box.hi[1]), 0.5 * (box.lo[2] + box.hi[2])};
}

}  // namespace

void Octree::compute_moments(std::span<const Point> positions, std::span<const double> masses,
                             std::span<const Quadrupole> item_quadrupoles, std::span<const double> item_extents,
                             bool quadrupole, int threads) {
  // The box of each cell's items, widened by their extents: a second bound on
  // b_max (each cell's is set from its items or children below).
  constexpr double inf = std::numeric_limits<double>::infinity();
  tight_.resize(cells_.size());
  // One cell from its items (a leaf) or its children: the same arithmetic
  // whichever thread runs it, so the moments do not depend on the threads.
  const auto moments_of = [&](std::size_t c) {
    TreeCell& cell = cells_[c];
    Moments m;
    if (cell.leaf()) {
      Point weighted{0, 0, 0};
      for (std::uint32_t i = cell.begin; i < cell.end; ++i) {
        m.mass += masses[i];
        for (int a = 0; a < 3; ++a) weighted[a] += masses[i] * positions[i][a];
      }
      m.centre = centre_of(cell.box);
      if (m.mass > 0)
        for (int a = 0; a < 3; ++a) m.centre[a] = weighted[a] / m.mass;
      if (quadrupole)
        for (std::uint32_t i = cell.begin; i < cell.end; ++i) {
          if (!item_quadrupoles.empty())
            for (int k = 0; k < 6; ++k) m.quadrupole[k] += item_quadrupoles[i][k];
          add_point_quadrupole(m.quadrupole, masses[i],
                               {positions[i][0] - m.centre[0], positions[i][1] - m.centre[1],
                                positions[i][2] - m.centre[2]});
        }
    } else {
      Point weighted{0, 0, 0};
      for (std::uint32_t k = 0; k < cell.child_count; ++k) {
        const Moments& child = cells_[cell.first_child + k].moments;
        m.mass += child.mass;
        for (int a = 0; a < 3; ++a) weighted[a] += child.mass * child.centre[a];
      }
      m.centre = centre_of(cell.box);
      if (m.mass > 0)
        for (int a = 0; a < 3; ++a) m.centre[a] = weighted[a] / m.mass;
      if (quadrupole)
        for (std::uint32_t k = 0; k < cell.child_count; ++k) {
          const Moments& child = cells_[cell.first_child + k].moments;
          for (int q = 0; q < 6; ++q) m.quadrupole[q] += child.quadrupole[q];
          add_point_quadrupole(m.quadrupole, child.mass,
                               {child.centre[0] - m.centre[0], child.centre[1] - m.centre[1],
                                child.centre[2] - m.centre[2]});
        }
    }
    cell.moments = m;
    double b2 = 0;
    for (int a = 0; a < 3; ++a) {
      const double far = std::max(m.centre[a] - cell.box.lo[a], cell.box.hi[a] - m.centre[a]);
      b2 += far * far;
    }
    cell.opening = std::max(cell_edge_factor * cell.size, std::sqrt(b2));
    double bmax = 0;
    Box& box = tight_[c];
    box = Box{{inf, inf, inf}, {-inf, -inf, -inf}};
    if (cell.leaf()) {
      // Items without extent (all of them unless LET pseudo-particles are
      // among them) by their squared distance: one square root per leaf.
      double farthest2 = 0;
      for (std::uint32_t i = cell.begin; i < cell.end; ++i) {
        const double extent = item_extents.empty() ? 0.0 : item_extents[i];
        const Point& p = positions[i];
        if (extent == 0) {
          const double dx = p[0] - m.centre[0], dy = p[1] - m.centre[1], dz = p[2] - m.centre[2];
          farthest2 = std::max(farthest2, dx * dx + dy * dy + dz * dz);
        } else {
          bmax = std::max(bmax, distance(p, m.centre) + extent);
        }
        for (int a = 0; a < 3; ++a) {
          box.lo[a] = std::min(box.lo[a], p[a] - extent);
          box.hi[a] = std::max(box.hi[a], p[a] + extent);
        }
      }
      bmax = std::max(bmax, std::sqrt(farthest2));
    } else {
      for (std::uint32_t k = 0; k < cell.child_count; ++k) {
        const TreeCell& child = cells_[cell.first_child + k];
        if (child.count() == 0) continue;
        const Box& child_box = tight_[cell.first_child + k];
        bmax = std::max(bmax, std::min(distance(child.moments.centre, m.centre) + child.bmax,
                                       farthest_corner(child_box, m.centre)));
        for (int a = 0; a < 3; ++a)
          box.lo[a] = std::min(box.lo[a], child_box.lo[a]), box.hi[a] = std::max(box.hi[a], child_box.hi[a]);
      }
    }
    cell.bmax = bmax;
  };
  // Bottom up. The subtrees under the first level with enough cells for the
  // threads are handed out whole, each in post-order (a cell right after its
  // children, which are then still in cache: a level at a time, a parent
  // read its children's 176-byte cells back from memory on large levels);
  // the levels above go a level at a time. One parallel region.
  if (levels_.size() < 2) return;
  const std::size_t level_count = levels_.size() - 1;
  const std::size_t wanted = 64 * static_cast<std::size_t>(std::max(1, threads));
  std::size_t split = 0;  // the level whose cells root the subtrees
  while (split + 1 < level_count && levels_[split + 1] - levels_[split] < wanted) ++split;
  const auto subtree = [&](const auto& self, std::size_t c) -> void {
    const TreeCell& cell = cells_[c];
    for (std::uint32_t k = 0; k < cell.child_count; ++k) self(self, cell.first_child + k);
    moments_of(c);
  };
#pragma omp parallel num_threads(std::max(1, threads))
  {
#pragma omp for schedule(dynamic, 16)
    for (std::size_t c = levels_[split]; c < levels_[split + 1]; ++c) subtree(subtree, c);
    for (std::size_t level = split; level-- > 0;) {
#pragma omp for schedule(dynamic, 64)
      for (std::size_t c = levels_[level]; c < levels_[level + 1]; ++c) moments_of(c);
    }
  }
}

std::vector<std::uint32_t> Octree::groups(std::size_t group_limit) const {
  std::vector<std::uint32_t> result;
  if (cells_.empty()) return result;
  std::vector<std::uint32_t> stack{0};
  while (!stack.empty()) {
    const std::uint32_t c = stack.back();
    stack.pop_back();
    const TreeCell& cell = cells_[c];
    if (cell.count() == 0) continue;
    if (cell.count() <= group_limit || cell.leaf()) {
      result.push_back(c);
      continue;
    }
    // Push in reverse so that children pop in Morton order.
    for (std::uint32_t k = cell.child_count; k-- > 0;) stack.push_back(cell.first_child + k);
  }
  return result;
}

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
// NeighborList against brute force: every rank gathers every particle and
// lists every pair within the radius over all periodic images; the full
// lists must hold exactly each owned particle's pairs, and the half lists of
// all ranks together every pair exactly once.
#include <domex/comm/collective.hpp>
#include <domex/ghost/ghost.hpp>
#include <domex/migrate/migrate.hpp>
#include <domex/neighbor/neighbor.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

using domex::Box;
using domex::Point;

constexpr std::uint64_t seed = 20261129;

/// A pair as (id, id, image of the second relative to the first), ordered
/// so that the two ranks that see it name it alike.
struct Pair {
  std::int64_t first, second;
  int sx, sy, sz;
  auto operator<=>(const Pair&) const = default;
};

Pair canonical(std::int64_t a, std::int64_t b, std::array<int, 3> s) {
  if (a > b || (a == b && std::make_tuple(s[2], s[1], s[0]) < std::make_tuple(0, 0, 0))) {
    std::swap(a, b);
    for (int& c : s) c = -c;
  }
  return {a, b, s[0], s[1], s[2]};
}

struct Particles {
  std::vector<Point> x;
  std::vector<std::int64_t> id;
};

/// flat: uniform in x and y, every particle at z = 0 but one at z = 1e-310
/// (a subnormal extent: bins must not divide by it).
enum class Layout { uniform, clustered, one_rank, lattice, flat };

Particles make_particles(const domex::Comm& comm, const Box& domain, Layout layout, std::size_t count,
                         std::uint64_t salt, const std::array<bool, 3>& periodic = {true, true, true}) {
  Particles mine;
  std::mt19937_64 random(seed + salt + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (layout == Layout::lattice) {  // on the faces: 0, 1/6, ..., 6/6 (the upper face, where periodic) per axis
    if (comm.rank() != 0) return mine;
    const int last[3] = {periodic[0] ? 6 : 5, periodic[1] ? 6 : 5, periodic[2] ? 6 : 5};
    for (int k = 0; k <= last[2]; ++k)
      for (int j = 0; j <= last[1]; ++j)
        for (int i = 0; i <= last[0]; ++i) {
          const int index[3] = {i, j, k};
          Point p;
          for (int a = 0; a < 3; ++a) p[a] = domain.lo[a] + domain.extent(a) * index[a] / 6.0;
          mine.x.push_back(p);
          mine.id.push_back(static_cast<std::int64_t>(mine.id.size()));
        }
    return mine;
  }
  if (layout == Layout::one_rank && comm.rank() != 0) return mine;
  if (layout == Layout::one_rank) count *= static_cast<std::size_t>(comm.size());
  for (std::size_t n = 0; n < count; ++n) {
    Point p;
    for (int a = 0; a < 3; ++a) {
      double t = u(random);
      if (layout == Layout::clustered) t = 0.5 + 0.5 * t * t * t;
      if (layout == Layout::one_rank) t = 0.1 + 0.2 * t;  // one corner: every particle on rank 0
      p[a] = domain.lo[a] + t * domain.extent(a);
    }
    if (layout == Layout::flat) p[2] = comm.rank() == 0 && n == 0 ? 1e-310 : 0.0;
    mine.x.push_back(p);
    mine.id.push_back(static_cast<std::int64_t>(comm.rank()) * 1000000 + static_cast<std::int64_t>(n));
  }
  return mine;
}

/// Every pair within `radius` over all particles of all ranks and their
/// periodic images (the positions wrapped first).
std::vector<Pair> brute_force(const domex::Comm& comm, const Particles& mine, const Box& domain,
                              const std::array<bool, 3>& periodic, double radius) {
  auto x = comm.allgatherv(std::span<const Point>(mine.x));
  const auto id = comm.allgatherv(std::span<const std::int64_t>(mine.id));
  for (Point& p : x) p = domex::wrap_periodic(domain, periodic, p);
  std::vector<Pair> pairs;
  for (std::size_t a = 0; a < x.size(); ++a)
    for (std::size_t b = a; b < x.size(); ++b)
      for (int sz = -1; sz <= 1; ++sz)
        for (int sy = -1; sy <= 1; ++sy)
          for (int sx = -1; sx <= 1; ++sx) {
            const std::array<int, 3> s{sx, sy, sz};
            if (a == b && sx == 0 && sy == 0 && sz == 0) continue;
            double d2 = 0;
            bool allowed = true;
            for (int c = 0; c < 3; ++c) {
              if (s[c] != 0 && !periodic[c]) allowed = false;
              const double d = x[b][c] + s[c] * domain.extent(c) - x[a][c];
              d2 += d * d;
            }
            if (allowed && d2 <= radius * radius) {
              const Pair pair = canonical(id[a], id[b], s);
              if (a != b || pair == Pair{id[a], id[b], sx, sy, sz}) pairs.push_back(pair);  // a self pair once
            }
          }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

/// The pairs of this rank's lists, named by ids and images (ids of ghosts
/// through update(); images from the ghosts' positions against the owners').
std::vector<Pair> listed_pairs(const domex::Comm& comm, const domex::GhostPlan& plan, domex::GhostPlan& update_plan,
                               const domex::NeighborList& list, const Particles& mine, const Box& domain,
                               const std::array<bool, 3>& periodic) {
  const auto all_x = comm.allgatherv(std::span<const Point>(mine.x));
  const auto all_id = comm.allgatherv(std::span<const std::int64_t>(mine.id));
  std::map<std::int64_t, Point> where;
  for (std::size_t n = 0; n < all_x.size(); ++n) where[all_id[n]] = domex::wrap_periodic(domain, periodic, all_x[n]);
  std::vector<std::int64_t> ids(mine.id);
  ids.resize(plan.size(), -1);
  update_plan.update(ids);
  std::vector<Pair> pairs;
  for (std::size_t i = 0; i < list.size(); ++i)
    for (const std::uint32_t j : list[i]) {
      const Point& pj = j < plan.local_count() ? mine.x[j] : plan.ghost_positions()[j - plan.local_count()];
      const Point& pi = mine.x[i];
      std::array<int, 3> s{0, 0, 0};
      const Point& owner_j = where.at(ids[j]);
      const Point& owner_i = where.at(ids[i]);
      for (int c = 0; c < 3; ++c)
        if (periodic[c])  // the image of j seen from i, from both sides' wrapped places
          s[c] = static_cast<int>(std::lround(((pj[c] - pi[c]) - (owner_j[c] - owner_i[c])) / domain.extent(c)));
      pairs.push_back(canonical(ids[i], ids[j], s));
    }
  return pairs;
}

struct Case {
  std::string name;
  Layout layout;
  std::array<bool, 3> periodic;
  double radius;
  bool buckets;
  Box domain{{-1, 0, 2}, {1, 1.5, 3.5}};
};

void expect_lists_equal_brute_force(const Case& c) {
  domex::Comm comm{MPI_COMM_WORLD};
  const Box& domain = c.domain;
  const double cutoff = 0.8 * c.radius, skin = c.radius - cutoff;
  auto mine = make_particles(comm, domain, c.layout, 160, c.name.size(), c.periodic);
  SCOPED_TRACE(c.name + " at np " + std::to_string(comm.size()) + ", seed " + std::to_string(seed));
  auto check = [&](const auto& decomposition) {
    domex::MigrationPlan migration(comm, decomposition, std::span<const Point>(mine.x));
    domex::migrate(migration, domex::wrapped(mine.x), mine.id);
    for (const Point& p : mine.x)
      for (int a = 0; a < 3; ++a)
        if (c.periodic[a]) {
          EXPECT_GE(p[a], domain.lo[a]);
          EXPECT_LT(p[a], domain.hi[a]);
        }
    domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = c.radius});
    domex::GhostPlan ids_plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = c.radius});
    const auto expected = brute_force(comm, mine, domain, c.periodic, c.radius);
    for (const auto kind : {domex::NeighborKind::half, domex::NeighborKind::full}) {
      domex::NeighborList list({.cutoff = cutoff, .skin = skin, .kind = kind});
      list.build(plan, mine.x);
      ASSERT_EQ(list.size(), mine.x.size());
      // Owned neighbours first, then ghosts; no particle is its own neighbour.
      for (std::size_t i = 0; i < list.size(); ++i) {
        for (const std::uint32_t j : list.owned_neighbors(i)) {
          EXPECT_LT(j, plan.local_count());
          EXPECT_NE(j, i);
        }
        for (const std::uint32_t j : list.ghost_neighbors(i)) EXPECT_GE(j, plan.local_count());
      }
      auto mine_pairs = listed_pairs(comm, plan, ids_plan, list, mine, domain, c.periodic);
      if (kind == domex::NeighborKind::half) {
        auto all = comm.allgatherv(std::span<const Pair>(mine_pairs));
        std::sort(all.begin(), all.end());
        ASSERT_EQ(all.size(), expected.size()) << "half lists over all ranks";
        EXPECT_TRUE(all == expected) << "every pair exactly once over all ranks";
        EXPECT_EQ(comm.allreduce(list.pairs(), MPI_SUM), expected.size());
      } else {
        // Full: exactly the brute-force pairs that have an owned particle of this rank on a side, from each side.
        std::vector<std::int64_t> own(mine.id);
        std::sort(own.begin(), own.end());
        std::vector<Pair> want;
        for (const Pair& pair : expected) {
          const bool first = std::binary_search(own.begin(), own.end(), pair.first);
          const bool second = std::binary_search(own.begin(), own.end(), pair.second);
          if (first) want.push_back(pair);
          if (second) want.push_back(pair);
        }
        std::sort(want.begin(), want.end());
        std::sort(mine_pairs.begin(), mine_pairs.end());
        EXPECT_TRUE(mine_pairs == want) << "full lists: " << mine_pairs.size() << " pairs, expected " << want.size();
      }
    }
  };
  if (c.buckets) {
    std::array<int, 3> count{};
    for (int a = 0; a < 3; ++a) count[a] = std::max(1, static_cast<int>(domain.extent(a) / c.radius));
    domex::BucketDecomposition decomposition(comm, domain, {.buckets = count, .periodic = c.periodic});
    decomposition.rebalance(std::span<const Point>(mine.x));
    check(decomposition);
  } else {
    domex::Multisection decomposition(comm, domain, {.periodic = c.periodic});
    decomposition.rebalance(std::span<const Point>(mine.x));
    check(decomposition);
  }
}

TEST(NeighborList, HalfAndFullListsEqualBruteForce) {
  const std::array<bool, 3> all{true, true, true}, none{false, false, false}, some{true, false, true};
  for (const Case& c : {Case{"uniform, periodic", Layout::uniform, all, 0.3, false},
                        Case{"clustered, periodic", Layout::clustered, all, 0.25, false},
                        Case{"all on one rank", Layout::one_rank, all, 0.3, false},
                        Case{"on the faces (a lattice to the upper face)", Layout::lattice, all, 0.34, false},
                        Case{"on the faces, mixed axes", Layout::lattice, some, 0.26, false},
                        Case{"open, cutoff of several domain widths", Layout::uniform, none, 0.9, false},
                        Case{"buckets, periodic", Layout::uniform, all, 0.3, true},
                        Case{"buckets, on the faces", Layout::lattice, some, 0.34, true},
                        Case{"flat: z = 0 and one at 1e-310", Layout::flat, {true, true, false}, 0.3, false,
                             Box{{-1, 0, -1}, {1, 1.5, 1}}}})
    expect_lists_equal_brute_force(c);
}

TEST(NeighborList, NeedsRebuildIsAgreedAndTrueExactlyBeyondHalfTheSkin) {
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0, 0, 0}, {1, 1, 1}};
  domex::Multisection decomposition(comm, domain, {.periodic = {true, true, true}});
  auto mine = make_particles(comm, domain, Layout::uniform, 200, 7);
  domex::MigrationPlan migration(comm, decomposition, std::span<const Point>(mine.x));
  domex::migrate(migration, domex::wrapped(mine.x), mine.id);
  domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = 0.25});
  domex::NeighborList list({.cutoff = 0.2, .skin = 0.05});
  EXPECT_TRUE(list.needs_rebuild(comm, mine.x)) << "before the first build";
  list.build(plan, mine.x);
  EXPECT_FALSE(list.needs_rebuild(comm, mine.x));
  const int mover = comm.size() - 1;
  for (const double moved : {0.024, 0.02499, 0.02501, 0.03}) {
    auto x = mine.x;
    if (comm.rank() == mover && !x.empty()) x[0][1] += moved;
    const bool any = comm.allreduce(comm.rank() == mover && !x.empty() ? 1 : 0, MPI_MAX) == 1;
    EXPECT_EQ(list.needs_rebuild(comm, x), any && moved > 0.025) << "moved " << moved;
  }
  // A changed particle count on one rank is a rebuild everywhere.
  auto fewer = mine.x;
  if (comm.rank() == mover && !fewer.empty()) fewer.pop_back();
  const bool any = comm.allreduce(comm.rank() == mover && !mine.x.empty() ? 1 : 0, MPI_MAX) == 1;
  EXPECT_EQ(list.needs_rebuild(comm, fewer), any);
}

TEST(NeighborList, BadInputIsALocalErrorNamingTheValue) {
  domex::Comm comm{MPI_COMM_WORLD};
  auto message_of = [](auto&& call) {
    try {
      call();
    } catch (const domex::Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_NE(message_of([] { domex::NeighborList({.cutoff = 0}); }).find("cutoff 0"), std::string::npos);
  EXPECT_NE(message_of([] { domex::NeighborList({.cutoff = 1, .skin = -1}); }).find("skin -1"), std::string::npos);
  EXPECT_NE(message_of([] { domex::NeighborList({.cutoff = 1, .bin_size = std::nan("")}); }).find("bin_size"),
            std::string::npos);
  const Box domain{{0, 0, 0}, {1, 1, 1}};
  domex::Multisection decomposition(comm, domain, {.periodic = {true, true, true}});
  std::vector<Point> x;
  if (comm.rank() == 0) x = {{0.1, 0.1, 0.1}, {1.0, 0.5, 0.5}};  // the second on the upper face, not wrapped
  domex::GhostPlan plan(comm, decomposition, std::span<const Point>(x), {.cutoff = 0.2});
  domex::NeighborList half({.cutoff = 0.15, .skin = 0.05});
  const std::string outside = message_of([&] { half.build(plan, x); });
  if (comm.rank() == 0) {
    EXPECT_NE(outside.find("particle 1 at (1, 0.5, 0.5) lies outside"), std::string::npos) << outside;
  }
  domex::NeighborList full({.cutoff = 0.15, .skin = 0.05, .kind = domex::NeighborKind::full});
  EXPECT_EQ(message_of([&] { full.build(plan, x); }), "") << "a full list takes unwrapped positions";
  domex::NeighborList wide({.cutoff = 0.2, .skin = 0.05});
  EXPECT_NE(message_of([&] { wide.build(plan, x); }).find("below cutoff + skin"), std::string::npos);
  std::vector<Point> short_x(plan.size() + 1);
  EXPECT_NE(message_of([&] { full.build(plan, short_x); }).find("positions given"), std::string::npos);
}

}  // namespace

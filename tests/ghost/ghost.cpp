// SPDX-License-Identifier: BSD-3-Clause
// GhostPlan against brute force: every rank gathers every particle of every
// rank, forms every periodic image, and keeps those within the cutoff of its
// own domain (box, annular sector or union of buckets); the plan's ghosts must
// be exactly that set (ids and shifted positions).
#include <domex/comm/collective.hpp>
#include <domex/ghost/ghost.hpp>
#include <domex/migrate/migrate.hpp>

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numbers>
#include <numeric>
#include <random>
#include <string>
#include <tuple>

namespace {

using domex::Box;
using domex::Point;

constexpr double two_pi = 2 * std::numbers::pi;

struct Ghost {
  std::int64_t id;
  Point position;
};

bool same(const Point& a, const Point& b) {
  for (int c = 0; c < 3; ++c)
    if (std::abs(a[c] - b[c]) > 1e-12 * (1 + std::abs(b[c]))) return false;
  return true;
}

/// Sorted by id, then position (rounded, so that images of one particle sort alike on both sides).
void sort_ghosts(std::vector<Ghost>& ghosts) {
  std::sort(ghosts.begin(), ghosts.end(), [](const Ghost& a, const Ghost& b) {
    if (a.id != b.id) return a.id < b.id;
    for (int c = 0; c < 3; ++c) {
      const double x = std::round(a.position[c] * 1e9), y = std::round(b.position[c] * 1e9);
      if (x != y) return x < y;
    }
    return false;
  });
}

double box_distance(const Point& p, const Box& box) {
  double sum = 0;
  for (int a = 0; a < 3; ++a) {
    const double d = p[a] < box.lo[a] ? box.lo[a] - p[a] : p[a] > box.hi[a] ? p[a] - box.hi[a] : 0.0;
    sum += d * d;
  }
  return std::sqrt(sum);
}

/// Distance from p to the annular sector [r0, r1) x [phi0, phi1) x [z0, z1),
/// by brute force over the sector's boundary (fine sampling refined by
/// golden-section search on each edge), independent of the library's formula.
double sector_distance(const Point& p, const Box& s) {
  const double r = std::hypot(p[0], p[1]);
  double phi = std::atan2(p[1], p[0]);
  if (phi < 0) phi += two_pi;
  const double dz = p[2] < s.lo[2] ? s.lo[2] - p[2] : p[2] > s.hi[2] ? p[2] - s.hi[2] : 0.0;
  const bool inside_angle = s.hi[1] - s.lo[1] >= two_pi || (phi >= s.lo[1] && phi < s.hi[1]);
  double planar;
  if (inside_angle) {
    planar = r < s.lo[0] ? s.lo[0] - r : r > s.hi[0] ? r - s.hi[0] : 0.0;
  } else {
    // Minimise |p - q| over q on the sector's boundary edges phi = phi0, phi1
    // (points t in [r0, r1]) and the arcs (whose minimum outside the angles
    // is at an end): sample, then refine.
    planar = std::numeric_limits<double>::infinity();
    for (double edge : {s.lo[1], s.hi[1]}) {
      auto d = [&](double t) { return std::hypot(p[0] - t * std::cos(edge), p[1] - t * std::sin(edge)); };
      double lo = s.lo[0], hi = s.hi[0];
      for (int it = 0; it < 200; ++it) {  // convex in t: golden section
        const double a = lo + (hi - lo) * 0.381966, b = lo + (hi - lo) * 0.618034;
        (d(a) < d(b) ? hi : lo) = d(a) < d(b) ? b : a;
      }
      planar = std::min({planar, d(lo), d(s.lo[0]), d(s.hi[0])});
    }
  }
  return std::hypot(planar, dz);
}

struct Particles {
  std::vector<Point> x;
  std::vector<std::int64_t> id;
};

/// Every (id, image position) within `cutoff` of this rank's domain, but
/// the image of each of this rank's own particles that is its owned entry
/// (image 0 of a position inside the domain; of one outside a periodic
/// axis, the image at its own place: a particle on the upper face has its
/// image at the lower one).
template <class Distance>
std::vector<Ghost> brute_force(const domex::Comm& comm, const Particles& mine, const Box& domain,
                               std::array<bool, 3> periodic, double cutoff, const Distance& distance_to_mine) {
  const auto all_x = comm.allgatherv(std::span<const Point>(mine.x));
  const auto all_id = comm.allgatherv(std::span<const std::int64_t>(mine.id));
  std::vector<Ghost> ghosts;
  std::vector<std::int64_t> own(mine.id);
  std::sort(own.begin(), own.end());
  for (std::size_t n = 0; n < all_x.size(); ++n) {
    Point w = all_x[n];
    int owned_at[3] = {0, 0, 0};  // the owned entry's image of w
    for (int a = 0; a < 3; ++a)
      if (periodic[a]) {
        const double L = domain.extent(a);
        w[a] = domain.lo[a] + std::fmod(w[a] - domain.lo[a], L);
        if (w[a] < domain.lo[a]) w[a] += L;
        if (w[a] >= domain.hi[a]) w[a] = domain.lo[a];
        owned_at[a] = static_cast<int>(std::lround((all_x[n][a] - w[a]) / L));
      }
    const bool is_mine = std::binary_search(own.begin(), own.end(), all_id[n]);
    for (int sz = -1; sz <= 1; ++sz)
      for (int sy = -1; sy <= 1; ++sy)
        for (int sx = -1; sx <= 1; ++sx) {
          const int s[3] = {sx, sy, sz};
          bool allowed = true;
          Point q = w;
          for (int a = 0; a < 3; ++a) {
            if (s[a] && !periodic[a]) allowed = false;
            q[a] += s[a] * domain.extent(a);
          }
          if (!allowed || (is_mine && sx == owned_at[0] && sy == owned_at[1] && sz == owned_at[2])) continue;
          if (distance_to_mine(q) <= cutoff) ghosts.push_back({all_id[n], q});
        }
  }
  sort_ghosts(ghosts);
  return ghosts;
}

/// The plan's ghosts as (id, position): ids through update().
std::vector<Ghost> plan_ghosts(domex::GhostPlan& plan, Particles& mine) {
  std::vector<std::int64_t> id(mine.id);
  id.resize(plan.size(), -1);
  std::vector<Point> x(mine.x);
  x.resize(plan.size(), Point{-1, -1, -1});
  plan.update(domex::shifted(x), id);
  std::vector<Ghost> ghosts;
  for (std::size_t g = 0; g < plan.ghost_count(); ++g) {
    const std::size_t at = plan.local_count() + g;
    EXPECT_TRUE(same(x[at], plan.ghost_positions()[g])) << "ghost " << g;
    ghosts.push_back({id[at], x[at]});
  }
  sort_ghosts(ghosts);
  return ghosts;
}

void expect_same_ghosts(const std::vector<Ghost>& got, const std::vector<Ghost>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t n = 0; n < got.size(); ++n) {
    EXPECT_EQ(got[n].id, expected[n].id) << "entry " << n;
    EXPECT_TRUE(same(got[n].position, expected[n].position))
        << "id " << got[n].id << ": (" << got[n].position[0] << ", " << got[n].position[1] << ", " << got[n].position[2]
        << ") vs (" << expected[n].position[0] << ", " << expected[n].position[1] << ", " << expected[n].position[2]
        << ")";
  }
}

enum class Layout { uniform, clustered, one_rank };

Particles make_particles(const domex::Comm& comm, const Box& domain, Layout layout, std::size_t count,
                         std::uint64_t seed) {
  Particles mine;
  if (layout == Layout::one_rank && comm.rank() != 0) return mine;
  if (layout == Layout::one_rank) count *= static_cast<std::size_t>(comm.size());
  std::mt19937_64 random(seed + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t n = 0; n < count; ++n) {
    Point p;
    for (int a = 0; a < 3; ++a) {
      double t = u(random);
      if (layout == Layout::clustered) t = 0.5 + 0.5 * t * t * t;  // crowded near the middle, one side
      p[a] = domain.lo[a] + t * domain.extent(a);
    }
    mine.x.push_back(p);
    mine.id.push_back(static_cast<std::int64_t>(comm.rank()) * 1000000 + static_cast<std::int64_t>(n));
  }
  return mine;
}

/// Moves the particles to their owners (the usual state before a build).
template <class Decomposition>
void migrate_to_owners(domex::Comm& comm, const Decomposition& decomposition, Particles& mine) {
  domex::MigrationPlan migration(comm, decomposition, std::span<const Point>(mine.x));
  domex::migrate(migration, mine.x, mine.id);
}

struct Case {
  std::array<bool, 3> periodic;
  double cutoff;
  Layout layout;
  bool migrate;
};

std::string describe(const Case& c) {
  return "periodic " + std::to_string(c.periodic[0]) + std::to_string(c.periodic[1]) + std::to_string(c.periodic[2]) +
         " cutoff " + std::to_string(c.cutoff) + " layout " + std::to_string(static_cast<int>(c.layout)) +
         (c.migrate ? " migrated" : " not migrated");
}

const std::uint64_t seed = 20261125;

TEST(GhostPlan, CartesianMultisectionEqualsBruteForce) {
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0, 0, 0}, {1, 2, 1}};
  const std::vector<Case> cases = {
      {{true, true, true}, 0.1, Layout::uniform, true},    {{true, true, true}, 0.45, Layout::uniform, true},
      {{true, false, false}, 0.2, Layout::clustered, true}, {{false, false, false}, 1.6, Layout::uniform, true},
      {{false, true, false}, 0.3, Layout::uniform, false},  {{true, true, true}, 0.25, Layout::one_rank, false},
      {{false, false, false}, 0.15, Layout::clustered, false}};
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (const Case& c : cases) {
    SCOPED_TRACE(describe(c));
    domex::Multisection decomposition(comm, domain, {.periodic = c.periodic});
    auto mine = make_particles(comm, domain, c.layout, 600, seed);
    decomposition.rebalance(std::span<const Point>(mine.x));
    if (c.migrate) migrate_to_owners(comm, decomposition, mine);
    domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = c.cutoff});
    const Box own = decomposition.box(comm.rank());
    const auto expected = brute_force(comm, mine, domain, c.periodic, c.cutoff,
                                      [&](const Point& q) { return box_distance(q, own); });
    expect_same_ghosts(plan_ghosts(plan, mine), expected);
    EXPECT_EQ(plan.stats().ghosts, expected.size());
    // What is sent equals what is received, over all ranks.
    const auto sent = comm.allreduce(plan.stats().sent, MPI_SUM), received = comm.allreduce(plan.stats().ghosts, MPI_SUM);
    EXPECT_EQ(sent, received);
  }
}

TEST(GhostPlan, CylindricalMultisectionEqualsBruteForce) {
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0.5, 0, 0}, {2, two_pi, 1}};  // (r, phi, z)
  for (const double cutoff : {0.08, 0.3, 1.2}) {
    for (const bool periodic_z : {false, true}) {
      if (periodic_z && cutoff > 0.5) continue;
      SCOPED_TRACE("cutoff " + std::to_string(cutoff) + (periodic_z ? " periodic z" : ""));
      domex::Multisection decomposition(
          comm, domain, {.periodic = {false, true, periodic_z}, .geometry = domex::Geometry::cylindrical});
      Particles mine;
      std::mt19937_64 random(seed + 7 + static_cast<std::uint64_t>(comm.rank()));
      std::uniform_real_distribution<double> u(0.0, 1.0);
      for (int n = 0; n < 500; ++n) {
        const double r = 0.5 + 1.5 * std::sqrt(u(random)), phi = two_pi * u(random);
        mine.x.push_back({r * std::cos(phi), r * std::sin(phi), u(random)});
        mine.id.push_back(comm.rank() * 1000000 + n);
      }
      decomposition.rebalance(std::span<const Point>(mine.x));
      migrate_to_owners(comm, decomposition, mine);
      domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = cutoff});
      const Box own = decomposition.box(comm.rank());
      // Cartesian z is the only axis with images; phi wraps by itself.
      const Box cartesian{{-2, -2, 0}, {2, 2, 1}};
      const auto expected = brute_force(comm, mine, cartesian, {false, false, periodic_z}, cutoff,
                                        [&](const Point& q) { return sector_distance(q, own); });
      expect_same_ghosts(plan_ghosts(plan, mine), expected);
      EXPECT_EQ(plan.stats().vector_blocks, 0U);  // (sectors: one (particle, piece) pair at a time)
    }
  }
}

TEST(GhostPlan, BucketDecompositionEqualsBruteForce) {
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0, 0, 0}, {1, 1, 2}};
  const std::vector<Case> cases = {{{true, true, true}, 0.1, Layout::uniform, true},
                                   {{false, true, false}, 0.35, Layout::clustered, true},
                                   {{false, false, false}, 0.9, Layout::uniform, true},
                                   {{true, true, false}, 0.2, Layout::one_rank, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(describe(c));
    domex::BucketDecomposition decomposition(comm, domain, {.buckets = {6, 5, 10}, .periodic = c.periodic});
    auto mine = make_particles(comm, domain, c.layout, 500, seed + 1);
    decomposition.rebalance(std::span<const Point>(mine.x));
    if (c.migrate) migrate_to_owners(comm, decomposition, mine);
    domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = c.cutoff});
    std::vector<Box> own;
    for (int b : decomposition.buckets_of(comm.rank())) own.push_back(decomposition.bucket_box(b));
    const auto expected = brute_force(comm, mine, domain, c.periodic, c.cutoff, [&](const Point& q) {
      double best = std::numeric_limits<double>::infinity();
      for (const Box& box : own) best = std::min(best, box_distance(q, box));
      return best;
    });
    expect_same_ghosts(plan_ghosts(plan, mine), expected);
  }
}

struct Atom {
  double mass;
  Point position;
  std::int64_t id;
};

TEST(GhostPlan, UpdateCarriesManyFieldsAndStructsAndReverseSumsIntoOwners) {
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0, 0, 0}, {1, 1, 1}};
  domex::Multisection decomposition(comm, domain, {.periodic = {true, true, false}});
  auto mine = make_particles(comm, domain, Layout::uniform, 800, seed + 2);
  decomposition.rebalance(std::span<const Point>(mine.x));
  migrate_to_owners(comm, decomposition, mine);
  domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = 0.2});
  const std::size_t local = plan.local_count(), size = plan.size();

  // Structs with a position member, and separate arrays of several types, in one update.
  std::vector<Atom> atoms(size);
  std::vector<float> charge(size, -1);
  std::vector<std::array<double, 3>> velocity(size);
  for (std::size_t i = 0; i < local; ++i) {
    atoms[i] = {1.0 + static_cast<double>(mine.id[i] % 7), mine.x[i], mine.id[i]};
    charge[i] = static_cast<float>(mine.id[i] % 13);
    velocity[i] = {static_cast<double>(mine.id[i]), 2.0, -static_cast<double>(mine.id[i])};
  }
  plan.update(domex::shifted(atoms, &Atom::position), charge, velocity);
  // A plan built from the structs themselves (a member pointer as projection) is the same plan.
  const domex::GhostPlan from_structs(comm, decomposition, std::span<const Atom>(atoms.data(), local), &Atom::position,
                                      {.cutoff = 0.2});
  EXPECT_EQ(from_structs.ghost_count(), plan.ghost_count());
  EXPECT_TRUE(std::equal(from_structs.send_indices().begin(), from_structs.send_indices().end(),
                         plan.send_indices().begin(), plan.send_indices().end()));
  for (std::size_t g = 0; g < plan.ghost_count(); ++g) {
    const Atom& atom = atoms[local + g];
    EXPECT_TRUE(same(atom.position, plan.ghost_positions()[g]));
    EXPECT_EQ(atom.mass, 1.0 + static_cast<double>(atom.id % 7));
    EXPECT_EQ(charge[local + g], static_cast<float>(atom.id % 13));
    EXPECT_EQ(velocity[local + g][0], static_cast<double>(atom.id));
    EXPECT_EQ(velocity[local + g][2], -static_cast<double>(atom.id));
  }

  // Reverse: every ghost holds (its rank + 1) and id; owners receive the sums.
  std::vector<double> weight(size, 0);
  std::vector<std::array<std::int64_t, 2>> pair(size, {0, 0});
  for (std::size_t i = 0; i < local; ++i) weight[i] = 0.5, pair[i] = {1, 0};
  for (std::size_t g = 0; g < plan.ghost_count(); ++g) {
    weight[local + g] = comm.rank() + 1;
    pair[local + g] = {1, atoms[local + g].id};
  }
  plan.reverse_sum(weight, pair);
  // Expected: per id, the sum over every rank's ghost copies of that rank + 1.
  std::vector<std::int64_t> ghost_ids;
  for (std::size_t g = 0; g < plan.ghost_count(); ++g) ghost_ids.push_back(atoms[local + g].id);
  const auto all_ghost_ids = comm.allgatherv(std::span<const std::int64_t>(ghost_ids));
  const auto counts = comm.allgather(ghost_ids.size());
  std::map<std::int64_t, std::pair<double, std::int64_t>> expected;  // id -> (sum of rank + 1, copies)
  std::size_t at = 0;
  for (int r = 0; r < comm.size(); ++r)
    for (std::size_t n = 0; n < counts[static_cast<std::size_t>(r)]; ++n, ++at) {
      expected[all_ghost_ids[at]].first += r + 1;
      expected[all_ghost_ids[at]].second += 1;
    }
  for (std::size_t i = 0; i < local; ++i) {
    const auto found = expected.find(mine.id[i]);
    const double sum = found == expected.end() ? 0 : found->second.first;
    const std::int64_t copies = found == expected.end() ? 0 : found->second.second;
    EXPECT_EQ(weight[i], 0.5 + sum) << "id " << mine.id[i];
    EXPECT_EQ(pair[i][0], 1 + copies);
    EXPECT_EQ(pair[i][1], copies * mine.id[i]);
  }
  // A user-given operation: the maximum.
  std::vector<double> top(size, 0);
  for (std::size_t g = 0; g < plan.ghost_count(); ++g) top[local + g] = comm.rank() + 1;
  plan.reverse([](double& owner, const double& ghost) { owner = std::max(owner, ghost); }, top);
  for (std::size_t i = 0; i < local; ++i) {
    const auto found = expected.find(mine.id[i]);
    if (found == expected.end()) EXPECT_EQ(top[i], 0);
    else EXPECT_GE(top[i], 1);
  }
  // Overlap form: begin, work, finish.
  std::vector<double> mass(size, 0);
  for (std::size_t i = 0; i < local; ++i) mass[i] = atoms[i].mass;
  plan.begin(mass);
  plan.finish();
  for (std::size_t g = 0; g < plan.ghost_count(); ++g) EXPECT_EQ(mass[local + g], atoms[local + g].mass);
}

TEST(GhostPlan, OneRanksBadInputIsAnErrorOnEveryRankAndThePlanStaysUsable) {
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0, 0, 0}, {1, 1, 1}};
  domex::Multisection decomposition(comm, domain, {.periodic = {true, true, true}});
  auto mine = make_particles(comm, domain, Layout::uniform, 300, seed + 3);
  decomposition.rebalance(std::span<const Point>(mine.x));
  migrate_to_owners(comm, decomposition, mine);
  domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x),
                        {.cutoff = 0.15, .checks = domex::GhostChecks::collective});
  const int bad = comm.size() - 1;
  auto expect_everywhere = [&](auto&& call, const std::string& text) {
    std::string message;
    try {
      call();
    } catch (const domex::Error& error) {
      message = error.what();
    }
    EXPECT_NE(message.find(text), std::string::npos) << "got: '" << message << "', expected '" << text << "'";
  };
  // Cutoffs: NaN, zero, negative, over half the period; different on one rank.
  for (const double cutoff : {std::nan(""), 0.0, -1.0, 0.51}) {
    const double mine_cutoff = comm.rank() == bad ? cutoff : 0.1;
    expect_everywhere([&] { domex::GhostPlan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = mine_cutoff}); },
                      "cutoff");
  }
  if (comm.size() > 1)  // the ranks with each value named
    expect_everywhere(
        [&] {
          domex::GhostPlan(comm, decomposition, std::span<const Point>(mine.x),
                           {.cutoff = comm.rank() == bad ? 0.2 : 0.1});
        },
        "different cutoffs: rank 0 passed 0.1, rank " + std::to_string(bad) + " passed 0.2");
  // A NaN position: named on every rank.
  auto broken = mine.x;
  if (comm.rank() == bad) broken.push_back({0.5, std::nan(""), 0.5});
  expect_everywhere([&] { plan.rebuild(decomposition, std::span<const Point>(broken)); }, "NaN");
  // The plan survived the failed rebuild: a field of the wrong length on one rank.
  std::vector<double> field(plan.size(), 1.0);
  if (comm.rank() == bad) field.resize(plan.size() + 1);
  expect_everywhere([&] { plan.update(field); }, "entries");
  expect_everywhere([&] { plan.reverse_sum(field); }, "entries");
  // The particle count changed (a migration) without a rebuild.
  std::vector<std::int64_t> ids(mine.id);
  if (comm.rank() == bad) ids.pop_back();
  ids.resize(ids.size() + plan.ghost_count());
  expect_everywhere([&] { plan.update(ids); }, "rebuild");
  // Still usable: a correct update and a rebuild work.
  field.assign(plan.size(), 0.0);
  for (std::size_t i = 0; i < plan.local_count(); ++i) field[i] = static_cast<double>(mine.id[i]);
  std::vector<std::int64_t> good_ids(mine.id);
  good_ids.resize(plan.size(), -1);
  plan.update(field, good_ids);
  for (std::size_t g = 0; g < plan.ghost_count(); ++g)
    EXPECT_EQ(field[plan.local_count() + g], static_cast<double>(good_ids[plan.local_count() + g]));
  plan.rebuild(decomposition, std::span<const Point>(mine.x));
  const Box own = decomposition.box(comm.rank());
  expect_same_ghosts(plan_ghosts(plan, mine), brute_force(comm, mine, domain, {true, true, true}, 0.15,
                                                          [&](const Point& q) { return box_distance(q, own); }));
}

TEST(GhostPlan, LocalChecksThrowOnTheBadRankAndItsPartnersWithoutACollective) {
  // GhostChecks::local (the default): a field of the wrong length on one
  // rank throws there; the ranks that receive from it in that direction get
  // its empty messages and throw naming it; the others go on. No message is
  // left behind: the next operations are correct on every rank.
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0, 0, 0}, {1, 1, 1}};
  domex::Multisection decomposition(comm, domain, {.periodic = {true, true, true}});
  auto mine = make_particles(comm, domain, Layout::uniform, 300, seed + 4);
  decomposition.rebalance(std::span<const Point>(mine.x));
  migrate_to_owners(comm, decomposition, mine);
  domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = 0.15});
  ASSERT_EQ(plan.options().checks, domex::GhostChecks::local);
  const int bad = comm.size() - 1, me = comm.rank();
  const auto sources = plan.sources(), destinations = plan.destinations();
  const bool bad_sends_here = me != bad && std::find(sources.begin(), sources.end(), bad) != sources.end();
  const bool bad_sums_here = me != bad && std::find(destinations.begin(), destinations.end(), bad) != destinations.end();
  auto message_of = [&](auto&& call) {
    try {
      call();
    } catch (const domex::Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  for (const bool reverse : {false, true}) {
    std::vector<double> field(plan.size(), 1.0);
    if (me == bad) field.resize(plan.size() + 1);
    const std::string message = message_of([&] {
      if (reverse) plan.reverse_sum(field);
      else plan.update(field);
    });
    const bool partner = reverse ? bad_sums_here : bad_sends_here;
    if (me == bad) EXPECT_NE(message.find("entries"), std::string::npos) << message;
    else if (partner)
      EXPECT_NE(message.find("rank " + std::to_string(bad) + " (of the plan's communicator) refused"), std::string::npos)
          << message;
    else EXPECT_EQ(message, "");
  }
  // Still usable, on every rank: ids arrive where they belong.
  std::vector<std::int64_t> ids(mine.id);
  ids.resize(plan.size(), -1);
  std::vector<double> ones(plan.size(), 1.0);
  plan.update(ids);
  plan.reverse_sum(ones);
  std::vector<Point> x = mine.x;
  x.resize(plan.size());
  plan.update(domex::shifted(x));
  const auto expected = brute_force(comm, mine, domain, {true, true, true}, 0.15,
                                    [&](const Point& q) { return box_distance(q, decomposition.box(me)); });
  std::vector<Ghost> got;
  for (std::size_t g = 0; g < plan.ghost_count(); ++g)
    got.push_back({ids[plan.local_count() + g], x[plan.local_count() + g]});
  sort_ghosts(got);
  expect_same_ghosts(got, expected);
  // Each owned entry gained one per ghost copy of it.
  const auto copies = plan.send_indices();
  std::vector<double> count(plan.local_count(), 1.0);
  for (const std::size_t i : copies) count[i] += 1;
  for (std::size_t i = 0; i < plan.local_count(); ++i) EXPECT_EQ(ones[i], count[i]) << "owned " << i;
}

TEST(GhostPlan, UpdateShiftsPositionsGivenOutsideThePeriodicBox) {
  // Positions a period (or two) outside the box are searched at their
  // wrapped place; the owned entry is then the image at its own place, so
  // the ghosts are every other image within the cutoff (brute force), and
  // update() brings them to their images' positions (to rounding: the
  // shift carries the wrap). Inside the box, update() gives the build's
  // ghost positions bitwise.
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0, 0, 0}, {1, 1, 1}};
  domex::Multisection decomposition(comm, domain, {.periodic = {true, true, true}});
  auto mine = make_particles(comm, domain, Layout::uniform, 700, seed + 5);
  decomposition.rebalance(std::span<const Point>(mine.x));
  migrate_to_owners(comm, decomposition, mine);
  Particles outside = mine;
  for (std::size_t i = 0; i < outside.x.size(); i += 3) outside.x[i][i % 2] += i % 4 == 0 ? 1.0 : -2.0;
  domex::GhostPlan inside_plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = 0.2});
  domex::GhostPlan outside_plan(comm, decomposition, std::span<const Point>(outside.x), {.cutoff = 0.2});
  const Box own = decomposition.box(comm.rank());
  const auto near_own = [&](const Point& q) { return box_distance(q, own); };
  expect_same_ghosts(plan_ghosts(outside_plan, outside),
                     brute_force(comm, outside, domain, {true, true, true}, 0.2, near_own));
  std::vector<Point> x = mine.x;
  x.resize(inside_plan.size(), Point{-7, -7, -7});
  inside_plan.update(domex::shifted(x));
  for (std::size_t g = 0; g < inside_plan.ghost_count(); ++g)
    for (int a = 0; a < 3; ++a) EXPECT_EQ(x[inside_plan.local_count() + g][a], inside_plan.ghost_positions()[g][a]);
}

TEST(GhostPlan, AParticleOnAPeriodicUpperFaceHasItsImageAtTheLowerFace) {
  // The cases: at (1, 0.5, 0.5) in the periodic [0, 1)^3, cutoff
  // 0.3, and at (0.225, 1, 1). The owned entry stays at the upper face; its
  // image at the lower face (0, ...) is a ghost, and no ghost sits on the
  // owned entry itself (before the fix: a ghost at (1, 0.5, 0.5) with shift
  // 0 and the image at 0 lost: a pair at distance 0 in a neighbour list).
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0, 0, 0}, {1, 1, 1}};
  for (const Point& face : {Point{1, 0.5, 0.5}, Point{0.225, 1, 1}, Point{1, 1, 1}, Point{0, 1, 0.5}}) {
    domex::Multisection decomposition(comm, domain, {.periodic = {true, true, true}});
    Particles mine;
    if (comm.rank() == decomposition.owner(face)) {
      mine.x.push_back(face);
      mine.id.push_back(7);
    }
    domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = 0.3});
    const Box own = decomposition.box(comm.rank());
    const auto ghosts = plan_ghosts(plan, mine);
    expect_same_ghosts(ghosts, brute_force(comm, mine, domain, {true, true, true}, 0.3,
                                           [&](const Point& q) { return box_distance(q, own); }));
    for (const Ghost& ghost : ghosts)
      for (const Point& owned : mine.x)
        EXPECT_FALSE(same(ghost.position, owned)) << "a ghost on its own owned entry, face (" << face[0] << ", "
                                                  << face[1] << ", " << face[2] << ")";
    // The wrapped place is among the ghosts wherever it is within the cutoff of this rank's box.
    const Point wrapped = decomposition.wrap(face);
    const bool near = box_distance(wrapped, own) <= 0.3;
    EXPECT_EQ(near, std::any_of(ghosts.begin(), ghosts.end(), [&](const Ghost& g) { return same(g.position, wrapped); }))
        << "face (" << face[0] << ", " << face[1] << ", " << face[2] << ")";
  }
}

/// Rank 0's particles `mine` moved to their owners in a bucket
/// decomposition (`buckets` per axis) and in a multisection (`divisions`),
/// then the plan's ghosts against brute force in each.
void expect_lattice_ghosts(domex::Comm& comm, const Box& domain, const std::array<bool, 3>& periodic, double cutoff,
                           const Particles& lattice, std::array<int, 3> buckets, std::array<int, 3> divisions) {
  for (const bool use_buckets : {false, true}) {
    SCOPED_TRACE(use_buckets ? "buckets" : "multisection");
    Particles mine = lattice;
    auto check = [&](const auto& decomposition, auto&& distance) {
      migrate_to_owners(comm, decomposition, mine);
      domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = cutoff});
      expect_same_ghosts(plan_ghosts(plan, mine), brute_force(comm, mine, domain, periodic, cutoff, distance));
    };
    if (use_buckets) {
      domex::BucketDecomposition decomposition(comm, domain, {.buckets = buckets, .periodic = periodic});
      decomposition.rebalance(std::span<const Point>(mine.x));
      std::vector<Box> own;
      for (int b : decomposition.buckets_of(comm.rank())) own.push_back(decomposition.bucket_box(b));
      check(decomposition, [&](const Point& q) {
        double best = std::numeric_limits<double>::infinity();
        for (const Box& box : own) best = std::min(best, box_distance(q, box));
        return best;
      });
    } else {
      domex::Multisection decomposition(comm, domain, {.divisions = divisions, .periodic = periodic});
      decomposition.rebalance(std::span<const Point>(mine.x));
      const Box own = decomposition.box(comm.rank());
      check(decomposition, [&](const Point& q) { return box_distance(q, own); });
    }
  }
}

TEST(GhostPlan, FlatLatticeOfATwoDimensionalProblem) {
  // Particles on a lattice in one plane (as a 2-D MPS or SPH code keeps
  // them): the search region is flat; ghosts still equal brute force.
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0, 0, 0}, {1, 1, 0.1}};
  Particles lattice;
  if (comm.rank() == 0)
    for (int j = 0; j < 40; ++j)
      for (int i = 0; i < 40; ++i) {
        lattice.x.push_back({(i + 0.5) / 40, (j + 0.5) / 40, 0.05});
        lattice.id.push_back(j * 40 + i);
      }
  expect_lattice_ghosts(comm, domain, {true, false, false}, 0.1234, lattice, {10, 10, 1}, {0, 0, 1});
}

TEST(GhostPlan, LatticeOnTheSearchGridsEdgesAndAtTheCutoff) {
  // The search decides most candidates from per-axis slots of an eighth of
  // the cutoff (inside a piece along two axes, nearer than the cutoff along
  // the third) without a distance test. A lattice of spacing about
  // cutoff / 8 puts particles on or next to the slots' edges, and about
  // the cutoff from the domains' faces (bucket edges are lattice planes).
  // The cutoff is 1e-12 more or less than 8 spacings: no particle is at an
  // exact tie, which brute force and the plan may round apart, but many
  // are within 1e-12 of one. Ghosts equal brute force, for boxes and for
  // buckets.
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0, 0, 0}, {1, 1, 1}};
  constexpr int side = 24;
  const double spacing = 1.0 / side;
  Particles lattice;
  if (comm.rank() == 0)
    for (int k = 0; k < side; ++k)
      for (int j = 0; j < side; ++j)
        for (int i = 0; i < side; ++i) {
          lattice.x.push_back({i * spacing, j * spacing, k * spacing});
          lattice.id.push_back((k * side + j) * side + i);
        }
  for (const double cutoff : {8 * spacing * (1 + 1e-12), 8 * spacing * (1 - 1e-12)}) {
    SCOPED_TRACE(cutoff);
    expect_lattice_ghosts(comm, domain, {true, true, false}, cutoff, lattice, {6, 4, 3}, {0, 0, 0});
  }
}

TEST(GhostPlan, ParticlesOnTheirBoxesFacesAndJustOutsideEqualBruteForce) {
  // A multisection build first searches the rank's own box and falls back
  // to the particles' bounding box when one lies outside it: particles
  // exactly on the box's faces (lower: inside; upper: the neighbour's), on
  // the periodic domain's upper face (wrapped) and a step outside the box
  // (not yet migrated) must all give brute force's ghosts, in both paths.
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0, 0, 0}, {1, 1, 2}};
  for (const std::array<bool, 3> periodic : {std::array<bool, 3>{true, true, true}, {false, true, false}}) {
    SCOPED_TRACE(std::to_string(periodic[0]) + std::to_string(periodic[2]));
    domex::Multisection decomposition(comm, domain, {.periodic = periodic});
    auto mine = make_particles(comm, domain, Layout::uniform, 400, seed + 11);
    decomposition.rebalance(std::span<const Point>(mine.x));
    migrate_to_owners(comm, decomposition, mine);
    const Box own = decomposition.box(comm.rank());
    const Point middle{(own.lo[0] + own.hi[0]) / 2, (own.lo[1] + own.hi[1]) / 2, (own.lo[2] + own.hi[2]) / 2};
    std::int64_t next = 900000 + 1000 * comm.rank();
    auto add = [&](Point p) {
      mine.x.push_back(p);
      mine.id.push_back(next++);
    };
    for (int a = 0; a < 3; ++a) {
      Point face = middle;
      face[a] = own.lo[a];
      add(face);
      face[a] = own.hi[a];
      add(face);
    }
    domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = 0.12});
    expect_same_ghosts(plan_ghosts(plan, mine),
                       brute_force(comm, mine, domain, periodic, 0.12,
                                   [&](const Point& q) { return box_distance(q, own); }));
    // A step outside the box, on the last rank only: the others keep the first path.
    if (comm.rank() == comm.size() - 1) {
      Point out = middle;
      out[0] = own.hi[0] + 0.03;
      add(out);
    }
    plan.rebuild(decomposition, std::span<const Point>(mine.x));
    expect_same_ghosts(plan_ghosts(plan, mine),
                       brute_force(comm, mine, domain, periodic, 0.12,
                                   [&](const Point& q) { return box_distance(q, own); }));
    // A cutoff so small that the box spans more of the search's slots than
    // it has: the bounding-box path only (the face particles are ghosts).
    domex::GhostPlan fine(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = 2e-4});
    const auto fine_expected = brute_force(comm, mine, domain, periodic, 2e-4,
                                           [&](const Point& q) { return box_distance(q, own); });
    expect_same_ghosts(plan_ghosts(fine, mine), fine_expected);
    EXPECT_GT(comm.allreduce(fine_expected.size(), MPI_SUM), 0u);
  }
}

TEST(GhostPlan, EmptyRanksAndNoGhosts) {
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{0, 0, 0}, {1, 1, 1}};
  domex::BucketDecomposition decomposition(comm, domain, {.buckets = {4, 4, 4}});
  Particles none;
  domex::GhostPlan plan(comm, decomposition, std::span<const Point>(none.x), {.cutoff = 0.3});
  EXPECT_EQ(plan.size(), 0u);
  std::vector<double> field;
  plan.update(field);
  plan.reverse_sum(field);
}

/// Positions of `mine` wrapped into the periodic axes (what rebalance() wants).
std::vector<Point> wrapped(const Particles& mine, const Box& domain, std::array<bool, 3> periodic) {
  std::vector<Point> in(mine.x);
  for (Point& p : in)
    for (int a = 0; a < 3; ++a)
      if (periodic[a]) {
        const double L = domain.extent(a);
        p[a] = domain.lo[a] + std::fmod(p[a] - domain.lo[a], L);
        if (p[a] < domain.lo[a]) p[a] += L;
      }
  return in;
}

TEST(GhostPlan, RandomBoxesNearAndFarFromTheOriginEqualBruteForce) {
  // Random domains (corners up to 5e6 from the origin), periodic axes,
  // cutoffs (some exactly half a period), decompositions and layouts. The
  // clustered layout puts many particles at exactly a domain's middle far
  // from the origin, so their images lie at the cutoff to the last bit: the
  // plan once left such ghosts out (a bucket or box moved by a period
  // rounded away from the search).
  domex::Comm comm{MPI_COMM_WORLD};
  std::mt19937_64 shared(seed + 11);  // the same on every rank
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 60; ++trial) {
    const double offset = trial % 2 == 0 ? 5.0 : 5e6;
    Box domain;
    for (int a = 0; a < 3; ++a) {
      domain.lo[a] = offset * (2 * u(shared) - 1);
      domain.hi[a] = domain.lo[a] + 0.3 + 3 * u(shared);
    }
    std::array<bool, 3> periodic{u(shared) < 0.6, u(shared) < 0.6, u(shared) < 0.6};
    double half = std::numeric_limits<double>::infinity();
    for (int a = 0; a < 3; ++a)
      if (periodic[a]) half = std::min(half, domain.extent(a) / 2);
    double cutoff = std::min(0.02 + 1.5 * u(shared) * u(shared), half);
    if (u(shared) < 0.4 && std::isfinite(half)) cutoff = half;
    bool buckets = u(shared) < 0.4, migrate = u(shared) < 0.6, stray = u(shared) < 0.4;
    auto layout = static_cast<Layout>(static_cast<int>(3 * u(shared)));
    std::array<int, 3> counts{1 + static_cast<int>(6 * u(shared)), 1 + static_cast<int>(6 * u(shared)),
                              1 + static_cast<int>(6 * u(shared))};
    if (trial < 2) {  // the case found first: clustered, y periodic, cutoff half of y's period
      domain = {{-3377839.9399902988, -1440090.2878219513, 244463.93453755137},
                {-3377836.6920559113, -1440089.830000096, 244465.48096014999}};
      periodic = {false, true, true};
      cutoff = domain.extent(1) / 2;
      buckets = trial == 0, migrate = true, stray = false, layout = Layout::clustered, counts = {3, 4, 2};
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + " cutoff " + std::to_string(cutoff) +
                 (buckets ? " buckets" : " multisection") + " periodic " + std::to_string(periodic[0]) +
                 std::to_string(periodic[1]) + std::to_string(periodic[2]) + (stray ? " stray" : "") +
                 (migrate ? " migrated" : ""));
    auto mine = make_particles(comm, domain, layout, 300, seed + 100 + static_cast<std::uint64_t>(trial));
    if (stray) {  // some positions outside the periodic axes (unwrapped, as between rebuilds)
      std::mt19937_64 local(seed + static_cast<std::uint64_t>(trial * 97 + comm.rank()));
      for (Point& p : mine.x)
        for (int a = 0; a < 3; ++a)
          if (periodic[a] && u(local) < 0.1) p[a] += 0.6 * (u(local) - 0.5) * domain.extent(a);
    }
    auto check = [&](auto& decomposition, auto distance_to_mine) {
      decomposition.rebalance(std::span<const Point>(wrapped(mine, domain, periodic)));
      if (migrate) migrate_to_owners(comm, decomposition, mine);
      domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = cutoff});
      expect_same_ghosts(plan_ghosts(plan, mine),
                         brute_force(comm, mine, domain, periodic, cutoff, distance_to_mine(decomposition)));
    };
    if (buckets) {
      std::array<int, 3> n = counts;
      if (n[0] * n[1] * n[2] < comm.size()) n[0] = comm.size();
      domex::BucketDecomposition decomposition(comm, domain, {.buckets = n, .periodic = periodic});
      check(decomposition, [&](const domex::BucketDecomposition& d) {
        std::vector<Box> own;
        for (int b : d.buckets_of(comm.rank())) own.push_back(d.bucket_box(b));
        return [own](const Point& q) {
          double best = std::numeric_limits<double>::infinity();
          for (const Box& box : own) best = std::min(best, box_distance(q, box));
          return best;
        };
      });
    } else {
      domex::Multisection decomposition(comm, domain, {.periodic = periodic});
      check(decomposition, [&](const domex::Multisection& d) {
        return [own = d.box(comm.rank())](const Point& q) { return box_distance(q, own); };
      });
    }
  }
}

TEST(GhostPlan, ParticlesInCellOrderEqualBruteForceOnEverySimdTarget) {
  // Particles sorted by cell, as MD codes keep them: blocks of neighbours
  // share their candidate domains, and the search tests them piece by
  // piece, a vector of particles at a time (in random order mostly one
  // (particle, piece) pair at a time; at the largest cutoff most particles
  // are candidates, and blocks go the vector way in both orders). Both
  // orders must find the same ghosts, with every SIMD target this CPU has
  // (here AVX-512: 8 lanes; AVX2: 4, as on a Zen 3; SSE4 and SSSE3: 2), and
  // in the same order on every target.
  domex::Comm comm{MPI_COMM_WORLD};
  const Box domain{{-1, 0, 2}, {1, 1, 3.5}};
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed + 7));
  struct ResetTargets {
    ~ResetTargets() { hwy::SetSupportedTargetsForTest(0); }
  } reset;
  // The targets every rank has (ranks on different CPUs must loop alike).
  std::int64_t targets = 0;
  for (const std::int64_t target : hwy::SupportedAndGeneratedTargets()) targets |= target;
  targets = comm.allreduce(targets, MPI_BAND);
  std::map<int, std::vector<Point>> first_target;  // per case: the ghosts, in order, with the first target
  std::map<int, std::size_t> first_blocks;         // per case: the blocks that went the vector way
  // The same blocks go the vector way on every target (the choice counts
  // steps of eight lanes whatever the CPU's width).
  auto same_blocks = [&](int case_number, std::size_t blocks) {
    const auto [first, made] = first_blocks.try_emplace(case_number, blocks);
    if (!made) {
      EXPECT_EQ(blocks, first->second);
    }
  };
  for (std::int64_t left = targets; left != 0; left &= left - 1) {
    const std::int64_t target = left & -left;
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(std::string("target ") + hwy::TargetName(target));
    int case_number = 0;
    std::size_t cell_order_blocks = 0, cell_order_interior = 0;  // over the multisection cases
    for (const double cutoff : {0.04, 0.2, 0.5}) {
      for (const std::array<bool, 3> periodic : {std::array<bool, 3>{true, true, true}, {false, true, false}}) {
        SCOPED_TRACE("cutoff " + std::to_string(cutoff) + " periodic " + std::to_string(periodic[0]) +
                     std::to_string(periodic[1]) + std::to_string(periodic[2]));
        domex::Multisection decomposition(comm, domain, {.periodic = periodic});
        auto mine = make_particles(comm, domain, Layout::uniform, 3000, seed + 7);
        decomposition.rebalance(std::span<const Point>(mine.x));
        migrate_to_owners(comm, decomposition, mine);
        const Box own = decomposition.box(comm.rank());
        const auto expected = brute_force(comm, mine, domain, periodic, cutoff,
                                          [&](const Point& q) { return box_distance(q, own); });
        domex::GhostPlan random_order(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = cutoff});
        expect_same_ghosts(plan_ghosts(random_order, mine), expected);
        // Cells of a tenth of the box, x fastest.
        std::vector<std::size_t> order(mine.x.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        auto cell = [&](const Point& p) {
          long key = 0;
          for (int a = 2; a >= 0; --a)
            key = key * 10 + std::clamp(static_cast<long>((p[a] - own.lo[a]) / own.extent(a) * 10), 0L, 9L);
          return key;
        };
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return cell(mine.x[a]) < cell(mine.x[b]); });
        Particles sorted;
        for (std::size_t k : order) {
          sorted.x.push_back(mine.x[k]);
          sorted.id.push_back(mine.id[k]);
        }
        domex::GhostPlan cell_order(comm, decomposition, std::span<const Point>(sorted.x), {.cutoff = cutoff});
        expect_same_ghosts(plan_ghosts(cell_order, sorted), expected);
        EXPECT_EQ(cell_order.stats().sent, random_order.stats().sent);
        cell_order_blocks += cell_order.stats().vector_blocks;
        cell_order_interior += cell_order.stats().interior_skipped;
        same_blocks(case_number, cell_order.stats().vector_blocks);
        // The order of the ghosts does not depend on the SIMD width.
        const auto ghosts = cell_order.ghost_positions();
        const auto [first, made] = first_target.try_emplace(case_number++, ghosts.begin(), ghosts.end());
        if (!made) {
          EXPECT_TRUE(std::equal(ghosts.begin(), ghosts.end(), first->second.begin(), first->second.end()));
        }
      }
    }
    // (the vector path was taken: at the largest cutoff most particles of a
    // block are candidates with the same pieces)
    EXPECT_GT(cell_order_blocks, 0U);
    // (and the interior skip: at the smallest cutoff most of a rank's box is
    // deep inside, in runs of particles; how many depends on the lanes)
    EXPECT_GT(cell_order_interior, 0U);
    // A bucket decomposition in slabs (one bucket across y and z): one
    // piece per (rank, image), so its blocks can go the vector way too.
    {
      SCOPED_TRACE("bucket slabs");
      const std::array<bool, 3> periodic{true, true, true};
      domex::BucketDecomposition decomposition(comm, domain,
                                               {.buckets = {2 * comm.size(), 1, 1}, .periodic = periodic});
      auto mine = make_particles(comm, domain, Layout::uniform, 3000, seed + 8);
      decomposition.rebalance(std::span<const Point>(mine.x));
      migrate_to_owners(comm, decomposition, mine);
      std::vector<Box> own;
      for (int b : decomposition.buckets_of(comm.rank())) own.push_back(decomposition.bucket_box(b));
      auto cell = [&](const Point& p) {  // cells of a tenth of the domain, x fastest
        long key = 0;
        for (int a = 2; a >= 0; --a)
          key = key * 10 + std::clamp(static_cast<long>((p[a] - domain.lo[a]) / domain.extent(a) * 10), 0L, 9L);
        return key;
      };
      std::sort(mine.x.begin(), mine.x.end(), [&](const Point& p, const Point& q) { return cell(p) < cell(q); });
      mine.id.assign(mine.x.size(), 0);
      for (std::size_t k = 0; k < mine.x.size(); ++k)
        mine.id[k] = static_cast<std::int64_t>(comm.rank()) * 1000000 + static_cast<std::int64_t>(k);
      const double cutoff = 0.45;  // (most particles candidates: the vector way even at np 1)
      const auto expected = brute_force(comm, mine, domain, periodic, cutoff, [&](const Point& q) {
        double best = std::numeric_limits<double>::infinity();
        for (const Box& box : own) best = std::min(best, box_distance(q, box));
        return best;
      });
      domex::GhostPlan plan(comm, decomposition, std::span<const Point>(mine.x), {.cutoff = cutoff});
      expect_same_ghosts(plan_ghosts(plan, mine), expected);
      EXPECT_GT(plan.stats().vector_blocks, 0U);
      same_blocks(case_number, plan.stats().vector_blocks);
      const auto ghosts = plan.ghost_positions();
      const auto [first, made] = first_target.try_emplace(case_number++, ghosts.begin(), ghosts.end());
      if (!made) {
        EXPECT_TRUE(std::equal(ghosts.begin(), ghosts.end(), first->second.begin(), first->second.end()));
      }
    }
  }
}

}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
#include <domex/decompose/buckets.hpp>
#include <domex/migrate/migrate.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <limits>
#include <random>
#include <string>

namespace {

using domex::Point;

struct Particle {
  Point x;
  Point v;
  double mass;
  std::uint64_t id;
};

double wrap01(double x) { return x - std::floor(x); }

/// The mass a particle is born with: a function of its id, so that every
/// particle can be checked after any number of moves.
double mass_of(std::uint64_t id) { return 1.0 + static_cast<double>(id % 97) / 7.0; }

/// Sum of the fields that never change (id and mass) as bit patterns, so any
/// corrupted byte shows.
std::uint64_t checksum(const Particle& p) {
  std::uint64_t bits;
  std::memcpy(&bits, &p.mass, sizeof bits);
  return p.id * 0x9E3779B97F4A7C15ull + bits;
}

struct Totals {
  unsigned long long count = 0, id_sum = 0, checksum = 0;
};

Totals totals(const domex::Comm& comm, const std::vector<Particle>& particles) {
  unsigned long long local[3] = {particles.size(), 0, 0};
  for (const auto& p : particles) {
    local[1] += p.id;
    local[2] += checksum(p);
  }
  comm.allreduce_in_place(std::span<unsigned long long>(local), MPI_SUM);
  return {local[0], local[1], local[2]};
}

std::vector<Point> positions_of(const std::vector<Particle>& particles) {
  std::vector<Point> positions;
  for (const auto& p : particles) positions.push_back(p.x);
  return positions;
}

TEST(Migrate, ConservesEverythingOverAThousandStepsWithRebalancing) {
  domex::Comm comm{MPI_COMM_WORLD};
  const std::uint64_t seed = 31;
  if (comm.rank() == 0) std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 random(seed + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  // All particles start on rank 0: the first step scatters them.
  std::vector<Particle> particles;
  if (comm.rank() == 0)
    for (std::uint64_t i = 0; i < 300 * static_cast<std::uint64_t>(comm.size()); ++i)
      particles.push_back({{u(random), u(random), u(random)}, {0, 0, 0}, mass_of(i + 1), i + 1});
  const Totals before = totals(comm, particles);
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}}, {.periodic = {true, true, true}});
  const double step = 0.004;
  for (int t = 0; t < 1000; ++t) {
    if (t % 10 == 0) decomposition.rebalance(positions_of(particles));
    for (auto& p : particles)  // move, and keep velocity as the last displacement
      for (int a = 0; a < 3; ++a) {
        p.v[a] = step * (2 * u(random) - 1);
        p.x[a] = wrap01(p.x[a] + p.v[a]);
      }
    domex::MigrationPlan plan(comm, decomposition, positions_of(particles));
    domex::migrate(plan, particles);
  }
  const Totals after = totals(comm, particles);
  EXPECT_EQ(after.count, before.count);
  EXPECT_EQ(after.id_sum, before.id_sum);
  EXPECT_EQ(after.checksum, before.checksum);
  for (const auto& p : particles) {
    ASSERT_EQ(decomposition.owner(p.x), comm.rank());
    ASSERT_EQ(p.mass, mass_of(p.id));
    // The last move travelled with the particle: x - v is where it came from.
    for (int a = 0; a < 3; ++a) ASSERT_LE(std::abs(p.v[a]), step);
  }
  // No id duplicated or lost: gather them all.
  std::vector<std::uint64_t> ids;
  for (const auto& p : particles) ids.push_back(p.id);
  auto all = comm.allgatherv<std::uint64_t>(ids);
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), before.count);
  for (std::size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], i + 1);
}

TEST(Migrate, FillHolesMovesOnlyLeaversAndArrivalsAndConservesEverything) {
  // MigrationOrder::fill_holes: the same particles end where stable puts
  // them (as sets), every stayer that is not moved into a hole keeps its
  // entry, and arrivals land in the leavers' places; more leavers than
  // arrivals (rank 0 sends half away) and more arrivals than leavers.
  domex::Comm comm{MPI_COMM_WORLD};
  const std::uint64_t seed = 37;
  if (comm.rank() == 0) std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 random(seed + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}}, {.periodic = {true, true, true}});
  std::vector<Particle> particles;
  const std::uint64_t per_rank = comm.rank() == 0 ? 600 : 100;
  for (std::uint64_t i = 0; i < per_rank; ++i) {
    const std::uint64_t id = static_cast<std::uint64_t>(comm.rank()) * 1000 + i + 1;
    particles.push_back({{u(random), u(random), u(random)}, {0, 0, 0}, mass_of(id), id});
  }
  const Totals before = totals(comm, particles);
  for (int round = 0; round < 3; ++round) {
    std::vector<Particle> stable = particles, holes = particles;
    domex::MigrationPlan plan(comm, decomposition, positions_of(particles));
    domex::MigrationPlan fill(comm, decomposition, positions_of(particles),
                              {.order = domex::MigrationOrder::fill_holes});
    domex::migrate(plan, stable);
    domex::migrate(fill, holes);
    ASSERT_EQ(stable.size(), holes.size());
    auto by_id = [](const Particle& a, const Particle& b) { return a.id < b.id; };
    std::vector<Particle> a = stable, b = holes;
    std::sort(a.begin(), a.end(), by_id);
    std::sort(b.begin(), b.end(), by_id);
    for (std::size_t k = 0; k < a.size(); ++k) {
      ASSERT_EQ(a[k].id, b[k].id);
      ASSERT_EQ(std::memcmp(&a[k], &b[k], sizeof(Particle)), 0);
      ASSERT_EQ(decomposition.owner(b[k].x), comm.rank());
    }
    // Stayers below the new end that were not leavers keep their entries.
    const auto leavers = plan.leavers();
    for (std::size_t i = 0; i < std::min(holes.size(), particles.size()); ++i)
      if (!std::binary_search(leavers.begin(), leavers.end(), i)) {
        ASSERT_EQ(holes[i].id, particles[i].id) << "entry " << i;
      }
    particles = holes;
    for (auto& p : particles)
      for (int axis = 0; axis < 3; ++axis) p.x[axis] = wrap01(p.x[axis] + 0.3 * (u(random) - 0.5));
  }
  const Totals after = totals(comm, particles);
  EXPECT_EQ(after.count, before.count);
  EXPECT_EQ(after.id_sum, before.id_sum);
  EXPECT_EQ(after.checksum, before.checksum);
}

TEST(Migrate, WrappedPositionsComeBackInsideThePeriodicBox) {
  // migrate(plan, wrapped(x), ...): positions outside a periodic axis (on
  // the upper face, a period or two away) are wrapped as they move, for
  // points and for a struct's Point member; a non-periodic axis is left as
  // it is.
  domex::Comm comm{MPI_COMM_WORLD};
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}}, {.periodic = {true, true, false}});
  std::vector<Point> x;
  std::vector<Particle> particles;
  if (comm.rank() == 0) {
    x = {{1.0, 0.5, 0.5}, {-0.25, 2.5, 0.75}, {0.5, 1.0, 0.0}, {-2.0, 0.999, 0.5}};
    for (std::size_t k = 0; k < x.size(); ++k) particles.push_back({x[k], {0, 0, 0}, 1.0, k});
  }
  domex::MigrationPlan plan(comm, decomposition, std::span<const Point>(x));
  std::vector<std::uint64_t> ids;
  for (std::size_t k = 0; k < x.size(); ++k) ids.push_back(k);
  domex::migrate(plan, domex::wrapped(x), ids);
  domex::MigrationPlan again(comm, decomposition, positions_of(particles));
  domex::migrate(again, domex::wrapped(particles, &Particle::x));
  const Point expected[4] = {{0.0, 0.5, 0.5}, {0.75, 0.5, 0.75}, {0.5, 0.0, 0.0}, {0.0, 0.999, 0.5}};
  for (std::size_t k = 0; k < x.size(); ++k) {
    for (int axis = 0; axis < 3; ++axis) EXPECT_EQ(x[k][axis], expected[ids[k]][axis]) << "particle " << ids[k];
    EXPECT_EQ(decomposition.owner(x[k]), comm.rank());
  }
  for (const auto& p : particles)
    for (int axis = 0; axis < 3; ++axis) EXPECT_EQ(p.x[axis], expected[p.id][axis]);
  const auto count = comm.allreduce(x.size(), MPI_SUM);
  EXPECT_EQ(count, 4u);
}

TEST(Migrate, SmallMovesTalkOnlyToGeometricNeighbours) {
  domex::Comm comm{MPI_COMM_WORLD};
  std::mt19937_64 random(77 + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double step = 0.01;
  // Neighbours: every domain within one step of this rank's box.
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}},
                                    {.periodic = {true, true, true}, .neighbour_margin = step});
  std::vector<Particle> particles;
  for (std::uint64_t i = 0; i < 500; ++i) {
    const Point x{u(random), u(random), u(random)};
    particles.push_back({x, {0, 0, 0}, 1, i});
  }
  decomposition.rebalance(positions_of(particles));
  {
    domex::MigrationPlan settle(comm, decomposition, positions_of(particles));
    domex::migrate(settle, particles);
  }
  for (int t = 0; t < 20; ++t) {
    for (auto& p : particles)
      for (int a = 0; a < 3; ++a) p.x[a] = wrap01(p.x[a] + step * (2 * u(random) - 1));
    domex::MigrationPlan plan(comm, decomposition, positions_of(particles));
    ASSERT_TRUE(plan.neighbour_path());
    domex::migrate(plan, particles);
    const auto& neighbours = decomposition.neighbours();
    for (int rank : plan.contacted())
      EXPECT_TRUE(std::binary_search(neighbours.begin(), neighbours.end(), rank)) << "contacted " << rank;
    EXPECT_LE(plan.stats().messages_sent, neighbours.size());
  }
  for (const auto& p : particles) ASSERT_EQ(decomposition.owner(p.x), comm.rank());
}

TEST(Migrate, AFarJumpTakesTheGeneralPathAndStillArrives) {
  domex::Comm comm{MPI_COMM_WORLD};
  // Ranks on a line; neighbours are rank +- 1. Rank 0 sends one particle to
  // the last rank, which is no neighbour of it when P > 3.
  const int p = comm.size(), rank = comm.rank();
  std::vector<int> neighbours;
  if (rank > 0) neighbours.push_back(rank - 1);
  if (rank + 1 < p) neighbours.push_back(rank + 1);
  std::vector<Particle> particles{{{0, 0, 0}, {0, 0, 0}, 1, static_cast<std::uint64_t>(rank)}};
  std::vector<int> destinations{rank == 0 ? p - 1 : rank};
  domex::MigrationPlan plan(comm, destinations, neighbours);
  EXPECT_EQ(plan.neighbour_path(), p <= 2);
  domex::migrate(plan, particles);
  const std::size_t expected = rank == p - 1 ? (p > 1 ? 2 : 1) : (rank == 0 ? 0 : 1);
  ASSERT_EQ(particles.size(), expected);
  if (rank == p - 1 && p > 1) {
    EXPECT_EQ(particles.back().id, 0u);
  }
}

TEST(Migrate, StructureOfArraysMoveTogether) {
  domex::Comm comm{MPI_COMM_WORLD};
  // Every rank sends every other element to the next rank (ring neighbours).
  const int p = comm.size(), rank = comm.rank();
  std::vector<int> ids, destinations;
  std::vector<double> values;
  std::vector<float> weights;
  for (int i = 0; i < 10; ++i) {
    ids.push_back(rank * 100 + i);
    values.push_back(rank * 100.0 + i + 0.5);
    weights.push_back(static_cast<float>(i));
    destinations.push_back(i % 2 ? (rank + 1) % p : rank);
  }
  domex::MigrationPlan plan(comm, destinations, {(rank + 1) % p, (rank + p - 1) % p});
  ASSERT_TRUE(plan.neighbour_path());
  domex::migrate(plan, ids, values, weights);
  ASSERT_EQ(ids.size(), 10u);
  ASSERT_EQ(values.size(), 10u);
  ASSERT_EQ(weights.size(), 10u);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_DOUBLE_EQ(values[i], ids[i] + 0.5);
    EXPECT_FLOAT_EQ(weights[i], static_cast<float>(ids[i] % 100));
  }
  const int from = (rank + p - 1) % p;
  for (std::size_t i = 5; i < 10; ++i) EXPECT_EQ(ids[i] / 100, from);
}

TEST(Migrate, InvalidPositionFailsOnEveryRankAndNamesTheParticle) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}});  // nothing periodic
  std::vector<Point> positions{{0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}};
  const int bad = comm.size() - 1;
  if (comm.rank() == bad) positions[1] = {0.5, 1.5, 0.5};
  try {
    domex::MigrationPlan plan(comm, decomposition, positions);
    FAIL() << "no error";
  } catch (const domex::Error& error) {
    // Every rank names the offending rank, the particle and its position.
    const std::string what = error.what();
    EXPECT_NE(what.find("particle 1"), std::string::npos) << what;
    EXPECT_NE(what.find("rank " + std::to_string(bad)), std::string::npos) << what;
    EXPECT_NE(what.find("1.5"), std::string::npos) << what;
    if (comm.rank() != bad) {
      EXPECT_NE(what.find("another rank"), std::string::npos) << what;
    }
  }
  std::vector<Point> nan_position{{NAN, 0.5, 0.5}};
  EXPECT_THROW(domex::MigrationPlan(comm, decomposition, nan_position), domex::Error);
}

TEST(Migrate, WorksWithBucketDecomposition) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::BucketDecomposition buckets(comm, {{0, 0, 0}, {1, 1, 1}}, {.buckets = {8, 8, 8}, .periodic = {true, true, true}});
  std::mt19937_64 random(5 + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Particle> particles;
  for (std::uint64_t i = 0; i < 400; ++i)
    particles.push_back({{u(random), u(random), u(random)}, {0, 0, 0}, mass_of(i), i + 1000 * static_cast<std::uint64_t>(comm.rank())});
  const Totals before = totals(comm, particles);
  for (int t = 0; t < 50; ++t) {
    if (t % 10 == 0) buckets.rebalance(positions_of(particles));
    for (auto& p : particles)
      for (int a = 0; a < 3; ++a) p.x[a] = wrap01(p.x[a] + 0.02 * (2 * u(random) - 1));
    domex::MigrationPlan plan(comm, buckets, positions_of(particles));
    domex::migrate(plan, particles);
  }
  const Totals after = totals(comm, particles);
  EXPECT_EQ(after.count, before.count);
  EXPECT_EQ(after.checksum, before.checksum);
  for (const auto& p : particles) ASSERT_EQ(buckets.owner(p.x), comm.rank());
}

TEST(Migrate, EmptyRanksAndNoParticles) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}});
  std::vector<Particle> particles;
  domex::MigrationPlan plan(comm, decomposition, positions_of(particles));
  domex::migrate(plan, particles);
  EXPECT_TRUE(particles.empty());
}

TEST(Migrate, OneRanksBadPositionIsAnErrorOnEveryRankThenAPlanWorks) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}}, {.periodic = {true, false, false}});
  std::mt19937_64 random(13 + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Particle> particles;
  for (std::uint64_t i = 0; i < 200; ++i)
    particles.push_back({{u(random), u(random), u(random)}, {0, 0, 0}, mass_of(i), i + 1000 * static_cast<std::uint64_t>(comm.rank())});
  const Totals before = totals(comm, particles);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::pair<Point, std::string> kinds[] = {
      {{0.5, nan, 0.5}, "nan"}, {{0.5, 0.5, -inf}, "-inf"}, {{0.5, 0.5, 1.75}, "1.75"}, {{inf, 0.5, 0.5}, "inf"}};
  std::vector<int> bad_ranks{0, comm.size() / 2, comm.size() - 1};
  for (int bad : bad_ranks)
    for (const auto& [position, value] : kinds) {
      auto positions = positions_of(particles);
      if (comm.rank() == bad) positions[3] = position;
      try {
        domex::MigrationPlan plan(comm, decomposition, positions);
        ADD_FAILURE() << "no error";
      } catch (const domex::Error& error) {
        const std::string what = error.what();
        EXPECT_NE(what.find("rank " + std::to_string(bad) + ": MigrationPlan: particle 3"), std::string::npos) << what;
        EXPECT_NE(what.find(value), std::string::npos) << what;
      }
      domex::MigrationPlan plan(comm, decomposition, positions_of(particles));
      domex::migrate(plan, particles);
    }
  // A field of the wrong size on one rank: every rank throws, nothing moves.
  domex::MigrationPlan plan(comm, decomposition, positions_of(particles));
  std::vector<int> tags(particles.size() - (comm.rank() == comm.size() - 1 ? 1 : 0), 0);
  EXPECT_THROW(domex::migrate(plan, particles, tags), domex::Error);
  // A destination out of range on one rank.
  std::vector<int> destinations(4, comm.rank());
  if (comm.rank() == 0) destinations[2] = comm.size();
  EXPECT_THROW(domex::MigrationPlan(comm, destinations, {}), domex::Error);
  const Totals after = totals(comm, particles);
  EXPECT_EQ(after.count, before.count);
  EXPECT_EQ(after.checksum, before.checksum);
  for (const auto& p : particles) ASSERT_EQ(decomposition.owner(p.x), comm.rank());
}

TEST(Migrate, PlanDestinationsEqualTheFullOwnerSearch) {
  domex::Comm comm{MPI_COMM_WORLD};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (auto geometry : {domex::Geometry::cartesian, domex::Geometry::cylindrical}) {
    const bool ring = geometry == domex::Geometry::cylindrical;
    domex::Multisection d(comm, ring ? domex::Box{{0.5, 0, 0}, {1.5, 0, 1}} : domex::Box{{0, 0, 0}, {1, 1, 1}},
                          {.periodic = {true, true, true}, .geometry = geometry});
    std::mt19937_64 random(21 + static_cast<std::uint64_t>(comm.rank()));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<Point> positions;
    for (int n = 0; n < 3000; ++n) {
      if (ring) {
        const double r = 0.5 + u(random), phi = 6.283185307179586 * u(random);
        positions.push_back({r * std::cos(phi), r * std::sin(phi), u(random)});
      } else {
        positions.push_back({u(random), u(random), u(random)});
      }
    }
    d.rebalance(positions);
    // Adversarial: on every cut of every box, on the periodic seam, beyond it.
    for (int r = 0; r < comm.size(); ++r) {
      const auto b = d.box(r);
      for (double x : {b.lo[0], b.hi[0]})
        for (double y : {b.lo[1], b.hi[1]})
          for (double z : {b.lo[2], b.hi[2]})
            positions.push_back(ring ? Point{x * std::cos(y), x * std::sin(y), z} : Point{x, y, z});
    }
    for (const Point& p : std::initializer_list<Point>{{1.0, 1.0, 1.0}, {-1e-300, 0.5, 0.5}, {2.0, -3.0, 0.25},
                                                       {0.75, -0.0, 0.5}, {-0.75, 0.0, 0.5}})
      positions.push_back(p);
    domex::MigrationPlan plan(comm, d, positions);
    const auto destinations = plan.destinations();
    std::size_t leaving = 0;
    for (std::size_t i = 0; i < positions.size(); ++i) {
      ASSERT_EQ(destinations[i], d.try_owner(positions[i])) << i;
      leaving += destinations[i] != comm.rank();
    }
    EXPECT_EQ(plan.leaving(), leaving);
    // NaN on every rank: every rank throws.
    positions.push_back({nan, 0.5, 0.5});
    EXPECT_THROW(domex::MigrationPlan(comm, d, positions), domex::Error);
  }
}

TEST(Migrate, RingAndClusteredParticlesStayOwnedAndConservedForEveryMethod) {
  domex::Comm comm{MPI_COMM_WORLD};
  if (comm.rank() == 0) std::printf("seed 41 + rank\n");
  for (auto method : {domex::CutMethod::histogram, domex::CutMethod::sampled, domex::CutMethod::global})
    for (bool ring : {false, true}) {
      std::mt19937_64 random(41 + static_cast<std::uint64_t>(comm.rank()));
      std::uniform_real_distribution<double> u(0.0, 1.0);
      std::vector<Particle> particles;
      for (std::uint64_t i = 0; i < 500; ++i) {
        Point x;
        if (ring) {
          const double r = 1 + 0.5 * u(random), phi = 6.283185307179586 * u(random) * u(random);
          x = {r * std::cos(phi), r * std::sin(phi), 0.1 * u(random)};
        } else {
          const double a = u(random);
          x = {a * a, u(random) * a, u(random)};
        }
        particles.push_back({x, {0, 0, 0}, mass_of(i), i + 100000 * static_cast<std::uint64_t>(comm.rank())});
      }
      const Totals before = totals(comm, particles);
      domex::Multisection d(comm, ring ? domex::Box{{1, 0, 0}, {1.5, 0, 0.1}} : domex::Box{{0, 0, 0}, {1, 1, 1}},
                            {.geometry = ring ? domex::Geometry::cylindrical : domex::Geometry::cartesian,
                             .method = method,
                             .samples_per_rank = 256});
      for (int step = 0; step < 3; ++step) {
        d.rebalance(positions_of(particles));
        domex::MigrationPlan plan(comm, d, positions_of(particles));
        domex::migrate(plan, particles);
      }
      const Totals after = totals(comm, particles);
      EXPECT_EQ(after.count, before.count);
      EXPECT_EQ(after.id_sum, before.id_sum);
      EXPECT_EQ(after.checksum, before.checksum);
      for (const auto& p : particles) ASSERT_EQ(d.owner(p.x), comm.rank());
      const double count = static_cast<double>(particles.size());
      const double imbalance = comm.allreduce(count, MPI_MAX) / (comm.allreduce(count, MPI_SUM) / comm.size());
      EXPECT_LE(imbalance, method == domex::CutMethod::histogram ? 1.02 : 1.3) << (ring ? "ring" : "clustered");
    }
}

TEST(Migrate, MoveRecordsMatchesMigrateAndAgreesOnSizes) {
  domex::Comm comm{MPI_COMM_WORLD};
  const int p = comm.size(), rank = comm.rank();
  std::vector<int> values, destinations;
  for (int i = 0; i < 12; ++i) {
    values.push_back(rank * 100 + i);
    destinations.push_back(i % 3 == 0 ? (rank + 1) % p : rank);
  }
  domex::MigrationPlan plan(comm, destinations, {(rank + 1) % p, (rank + p - 1) % p});
  std::vector<std::byte> records(values.size() * sizeof(int));
  std::memcpy(records.data(), values.data(), records.size());
  // A wrong size on the last rank: every rank throws, nothing moved.
  std::span<const std::byte> short_records(records.data(), records.size() - (rank == p - 1 ? 1 : 0));
  EXPECT_THROW((void)plan.move_records(short_records, sizeof(int)), domex::Error);
  const auto moved = plan.move_records(records, sizeof(int));
  domex::migrate(plan, values);
  ASSERT_EQ(moved.size(), values.size() * sizeof(int));
  EXPECT_EQ(std::memcmp(moved.data(), values.data(), moved.size()), 0);
}

}  // namespace

namespace {

struct UserParticle {
  long id;
  domex::Point position;
  double mass;
};

TEST(Migrate, APlanFromAProjectionEqualsThePlanFromPositions) {
  domex::Comm comm{MPI_COMM_WORLD};
  std::mt19937_64 random(4242 + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<UserParticle> particles;
  std::vector<domex::Point> positions;
  for (long i = 0; i < 2000; ++i) {
    const domex::Point p{uniform(random), uniform(random), uniform(random)};
    particles.push_back({i, p, 1.0});
    positions.push_back(p);
  }
  domex::Multisection domains(comm, {{0, 0, 0}, {1, 1, 1}}, {.periodic = {true, true, true}});
  domains.rebalance(std::span<const UserParticle>(particles), &UserParticle::position);
  const domex::MigrationPlan copied(comm, domains, std::span<const domex::Point>(positions));
  const domex::MigrationPlan projected(comm, domains, std::span<const UserParticle>(particles),
                                       &UserParticle::position);
  EXPECT_TRUE(std::equal(copied.destinations().begin(), copied.destinations().end(),
                         projected.destinations().begin(), projected.destinations().end()));
  EXPECT_EQ(copied.leaving(), projected.leaving());
}

}  // namespace

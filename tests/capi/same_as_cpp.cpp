// SPDX-License-Identifier: BSD-3-Clause
// The C API gives what the C++ API gives on the same inputs: the same inbox
// (sources, offsets, bytes) for every algorithm, the same ghost values, the
// same cuts and migrated particles, the same ghost particles and reverse sums.
// (tests/capi/test_capi.c checks the C API from C against values it computes
// itself.)
#include <domex/decompose/buckets.hpp>
#include <domex/decompose/multisection.hpp>
#include <domex/domex.h>
#include <domex/exchange/exchange.hpp>
#include <domex/ghost/ghost.hpp>
#include <domex/halo/halo.hpp>
#include <domex/migrate/migrate.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

struct CComm {
  domex_comm* handle = nullptr;
  CComm() { EXPECT_EQ(domex_comm_create(MPI_COMM_WORLD, &handle), DOMEX_SUCCESS); }
  ~CComm() { domex_comm_free(&handle); }
};

TEST(CApiSameAsCpp, ExchangeEveryAlgorithm) {
  domex::Comm comm{MPI_COMM_WORLD};
  CComm c;
  const int rank = comm.rank(), size = comm.size();
  const std::uint64_t seed = 20261123;
  std::mt19937_64 random(seed + static_cast<std::uint64_t>(rank));
  // Random destinations (ascending, distinct) and lengths, 6-byte elements.
  using Item = std::array<std::uint16_t, 3>;
  domex::Outbox<Item> outbox;
  for (int d = 0; d < size; ++d) {
    if (random() % 2) continue;
    std::vector<Item> items(random() % 7);
    for (auto& item : items) item = {static_cast<std::uint16_t>(rank), static_cast<std::uint16_t>(d),
                                      static_cast<std::uint16_t>(random())};
    outbox.add(d, std::span<const Item>(items));
  }
  for (const char* name : {"automatic", "alltoall", "sendrecv_reduce", "nbx", "reduce_scatter", "rma_fence",
                           "rma_passive", "grid"}) {
    SCOPED_TRACE(std::string(name) + ", seed " + std::to_string(seed));
    const auto cpp = domex::exchange(comm, outbox, {.algorithm = domex::algorithm_from_string(name)});
    domex_inbox* inbox = nullptr;
    ASSERT_EQ(domex_inbox_create(&inbox), DOMEX_SUCCESS);
    ASSERT_EQ(domex_exchange(c.handle, sizeof(Item), outbox.message_count(), outbox.ranks().data(),
                             outbox.offsets().data(), outbox.data().data(), name, inbox),
              DOMEX_SUCCESS)
        << domex_last_error();
    std::size_t count = 0, elements = 0;
    const int* sources = nullptr;
    const std::size_t* offsets = nullptr;
    const void* data = nullptr;
    domex_inbox_count(inbox, &count);
    domex_inbox_sources(inbox, &sources);
    domex_inbox_offsets(inbox, &offsets);
    domex_inbox_data(inbox, &data, &elements);
    ASSERT_EQ(count, cpp.message_count());
    EXPECT_TRUE(std::equal(cpp.sources().begin(), cpp.sources().end(), sources));
    EXPECT_TRUE(std::equal(cpp.offsets().begin(), cpp.offsets().end(), offsets));
    ASSERT_EQ(elements, cpp.size());
    if (cpp.data().size_bytes() > 0) {
      EXPECT_EQ(std::memcmp(data, cpp.data().data(), cpp.data().size_bytes()), 0);
    }
    domex_inbox_free(&inbox);
  }
}

TEST(CApiSameAsCpp, HaloGhosts) {
  domex::Comm comm{MPI_COMM_WORLD};
  CComm c;
  const std::size_t global[3] = {10, 9, 7};
  const int periodic[3] = {1, 0, 1};
  for (const int neighbours : {6, 26}) {
    domex_halo* halo = nullptr;
    ASSERT_EQ(domex_halo_create(c.handle, global, nullptr, periodic, 2, neighbours, &halo), DOMEX_SUCCESS)
        << domex_last_error();
    domex::CartesianGrid grid(comm, {10, 9, 7}, {.periodic = {true, false, true}});
    domex::HaloPlan plan(grid, {.depth = 2, .stencil = neighbours == 6 ? domex::Stencil::faces
                                                                       : domex::Stencil::full});
    std::size_t cells = 0;
    domex_halo_cells(halo, &cells);
    ASSERT_EQ(cells, plan.cells());
    std::vector<double> a(cells), b(cells);
    std::mt19937_64 random(7 + static_cast<std::uint64_t>(comm.rank()));
    for (auto& x : a) x = static_cast<double>(random() % 1000) / 7.0;  // ghosts random too: untouched ones must match
    b = a;
    double* fields[1] = {a.data()};
    ASSERT_EQ(domex_halo_exchange_doubles(halo, 1, fields), DOMEX_SUCCESS) << domex_last_error();
    plan.exchange(b);
    EXPECT_EQ(a, b) << neighbours << " neighbours";
    domex_halo_free(&halo);
  }
}

TEST(CApiSameAsCpp, DecomposeAndMigrate) {
  domex::Comm comm{MPI_COMM_WORLD};
  CComm c;
  struct Particle {
    domex::Point x;
    std::int64_t id;
  };
  std::mt19937_64 random(99 + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> uniform(0, 1);
  std::vector<Particle> particles(500);
  for (std::size_t i = 0; i < particles.size(); ++i) {
    const double u = uniform(random);
    particles[i] = {{u * u * u, uniform(random), uniform(random)}, comm.rank() * 1000 + static_cast<std::int64_t>(i)};
  }
  // C++
  domex::Multisection cpp_domains(comm, {{0, 0, 0}, {1, 1, 1}}, {.periodic = {true, true, true}});
  cpp_domains.rebalance(std::span<const Particle>(particles), &Particle::x);
  std::vector<domex::Point> positions;
  for (const auto& p : particles) positions.push_back(p.x);
  domex::MigrationPlan cpp_plan(comm, cpp_domains, std::span<const domex::Point>(positions));
  std::vector<Particle> cpp_moved = particles;
  domex::migrate(cpp_plan, cpp_moved);
  // C
  const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
  const int periodic[3] = {1, 1, 1};
  domex_multisection* domains = nullptr;
  ASSERT_EQ(domex_multisection_create(c.handle, lo, hi, nullptr, periodic, 0.0, &domains), DOMEX_SUCCESS);
  ASSERT_EQ(domex_multisection_rebalance(domains, particles.size(), &particles[0].x[0], &particles[0].x[1],
                                         &particles[0].x[2], sizeof(Particle), nullptr),
            DOMEX_SUCCESS);
  for (int r = 0; r < comm.size(); ++r) {
    double box_lo[3], box_hi[3];
    domex_multisection_box(domains, r, box_lo, box_hi);
    const auto box = cpp_domains.box(r);
    for (int a = 0; a < 3; ++a) {
      EXPECT_EQ(box_lo[a], box.lo[a]);
      EXPECT_EQ(box_hi[a], box.hi[a]);
    }
  }
  domex_migration* plan = nullptr;
  ASSERT_EQ(domex_migration_create(c.handle, domains, particles.size(), &particles[0].x[0], &particles[0].x[1],
                                   &particles[0].x[2], sizeof(Particle), "automatic", &plan),
            DOMEX_SUCCESS);
  domex_buffer* moved = nullptr;
  domex_buffer_create(&moved);
  ASSERT_EQ(domex_migrate(plan, particles.size(), sizeof(Particle), particles.data(), moved), DOMEX_SUCCESS);
  const void* bytes = nullptr;
  std::size_t size = 0;
  domex_buffer_data(moved, &bytes, &size);
  ASSERT_EQ(size, cpp_moved.size() * sizeof(Particle));
  if (size > 0) {
    EXPECT_EQ(std::memcmp(bytes, cpp_moved.data(), size), 0);
  }
  domex_buffer_free(&moved);
  domex_migration_free(&plan);
  domex_multisection_free(&domains);
}


/// The C ghost plan against the C++ one on the same particles: the same
/// ghost positions and sources, the same ghost values after an update (raw
/// fields with a shifted position, doubles, separate x, y, z), the same bits
/// after a reverse sum, for a multisection and a bucket decomposition, then
/// after a rebuild.
template <class CHandle, class Decomposition, class Create, class Rebalance>
void compare_ghosts(domex::Comm& comm, CComm& c, Decomposition& cpp_decomposition, CHandle* handle,
                    const Create& create, const Rebalance& rebalance) {
  struct Particle {
    domex::Point x;
    double mass;
  };
  const std::uint64_t seed = 20261125;
  std::mt19937_64 random(seed + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> uniform(0, 1);
  std::vector<Particle> particles(400);
  for (auto& p : particles) {
    const double u = uniform(random);
    p = {{u * u, uniform(random), uniform(random)}, uniform(random)};
  }
  std::vector<domex::Point> positions;
  for (const auto& p : particles) positions.push_back(p.x);
  cpp_decomposition.rebalance(std::span<const domex::Point>(positions));
  ASSERT_EQ(rebalance(handle, particles.size(), &particles[0].x[0], &particles[0].x[1], &particles[0].x[2],
                      sizeof(Particle)),
            DOMEX_SUCCESS)
      << domex_last_error();
  const double cutoff = 0.15;
  domex::GhostPlan cpp(comm, cpp_decomposition, std::span<const domex::Point>(positions), {.cutoff = cutoff});
  domex_ghost* ghost = nullptr;
  ASSERT_EQ(create(c.handle, handle, particles.size(), &particles[0].x[0], &particles[0].x[1], &particles[0].x[2],
                   sizeof(Particle), cutoff, &ghost),
            DOMEX_SUCCESS)
      << domex_last_error();
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + ", seed " + std::to_string(seed));
    std::size_t local = 0, ghosts = 0, entries = 0, source_count = 0;
    const double* ghost_x = nullptr;
    const int* sources = nullptr;
    const std::size_t* offsets = nullptr;
    domex_ghost_local_count(ghost, &local);
    domex_ghost_count(ghost, &ghosts);
    domex_ghost_size(ghost, &entries);
    domex_ghost_positions(ghost, &ghost_x);
    domex_ghost_sources(ghost, &source_count, &sources, &offsets);
    ASSERT_EQ(local, cpp.local_count());
    ASSERT_EQ(ghosts, cpp.ghost_count());
    ASSERT_EQ(entries, cpp.size());
    ASSERT_EQ(source_count, cpp.sources().size());
    EXPECT_TRUE(std::equal(cpp.sources().begin(), cpp.sources().end(), sources));
    EXPECT_TRUE(std::equal(cpp.source_offsets().begin(), cpp.source_offsets().end(), offsets));
    if (ghosts > 0) {
      EXPECT_EQ(std::memcmp(ghost_x, cpp.ghost_positions().data(), ghosts * sizeof(domex::Point)), 0);
    }
    // Update: structs with a shifted position and a mass, plus separate x, y, z.
    std::vector<Particle> a(particles), b(particles);
    a.resize(entries, Particle{{-1, -1, -1}, -1});
    b.resize(entries, Particle{{-1, -1, -1}, -1});
    std::vector<double> x(entries, -1), y(entries, -1), z(entries, -1);
    for (std::size_t i = 0; i < local; ++i) {
      x[i] = particles[i].x[0];
      y[i] = particles[i].x[1];
      z[i] = particles[i].x[2];
    }
    cpp.update(domex::shifted(b, &Particle::x));
    void* fields[1] = {a.data()};
    const std::size_t sizes[1] = {sizeof(Particle)};
    const std::ptrdiff_t shift_at[1] = {offsetof(Particle, x)};
    ASSERT_EQ(domex_ghost_update(ghost, 1, fields, sizes, shift_at), DOMEX_SUCCESS) << domex_last_error();
    ASSERT_EQ(domex_ghost_update_positions(ghost, x.data(), y.data(), z.data(), sizeof(double)), DOMEX_SUCCESS)
        << domex_last_error();
    EXPECT_EQ(std::memcmp(a.data(), b.data(), entries * sizeof(Particle)), 0);
    bool same_xyz = true;
    for (std::size_t i = 0; i < entries; ++i) same_xyz &= x[i] == b[i].x[0] && y[i] == b[i].x[1] && z[i] == b[i].x[2];
    EXPECT_TRUE(same_xyz);
    // Reverse sum of two double fields, bit for bit.
    std::vector<double> u(entries), v(entries);
    for (std::size_t i = 0; i < entries; ++i) {
      u[i] = uniform(random);
      v[i] = static_cast<double>(i % 7) / 3.0;
    }
    std::vector<double> cu(u), cv(v);
    cpp.reverse_sum(u, v);
    double* sums[2] = {cu.data(), cv.data()};
    ASSERT_EQ(domex_ghost_reverse_sum_doubles(ghost, 2, sums), DOMEX_SUCCESS) << domex_last_error();
    EXPECT_EQ(std::memcmp(u.data(), cu.data(), entries * sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(v.data(), cv.data(), entries * sizeof(double)), 0);
    // Round 2: every particle drifts, both plans are rebuilt.
    for (std::size_t i = 0; i < particles.size(); ++i) {
      particles[i].x[1] = std::fmod(particles[i].x[1] + 0.3, 1.0);
      positions[i] = particles[i].x;
    }
    cpp.rebuild(cpp_decomposition, std::span<const domex::Point>(positions));
    ASSERT_EQ(domex_ghost_rebuild(ghost, particles.size(), &particles[0].x[0], &particles[0].x[1],
                                  &particles[0].x[2], sizeof(Particle)),
              DOMEX_SUCCESS)
        << domex_last_error();
  }
  domex_ghost_free(&ghost);
}

TEST(CApiSameAsCpp, GhostsMultisection) {
  domex::Comm comm{MPI_COMM_WORLD};
  CComm c;
  const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
  const int periodic[3] = {1, 1, 0};
  domex::Multisection cpp(comm, {{0, 0, 0}, {1, 1, 1}}, {.periodic = {true, true, false}});
  domex_multisection* handle = nullptr;
  ASSERT_EQ(domex_multisection_create(c.handle, lo, hi, nullptr, periodic, 0.0, &handle), DOMEX_SUCCESS);
  compare_ghosts(comm, c, cpp, handle, domex_ghost_create_multisection,
                 [](domex_multisection* m, std::size_t n, const double* x, const double* y, const double* z,
                    std::size_t stride) { return domex_multisection_rebalance(m, n, x, y, z, stride, nullptr); });
  domex_multisection_free(&handle);
}

TEST(CApiSameAsCpp, GhostsBuckets) {
  domex::Comm comm{MPI_COMM_WORLD};
  CComm c;
  const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
  const int periodic[3] = {1, 1, 0}, buckets[3] = {6, 5, 4};
  domex::BucketDecomposition cpp(comm, {{0, 0, 0}, {1, 1, 1}},
                                 {.buckets = {6, 5, 4}, .periodic = {true, true, false}});
  domex_buckets* handle = nullptr;
  ASSERT_EQ(domex_buckets_create(c.handle, lo, hi, buckets, periodic, &handle), DOMEX_SUCCESS);
  compare_ghosts(comm, c, cpp, handle, domex_ghost_create_buckets,
                 [](domex_buckets* b, std::size_t n, const double* x, const double* y, const double* z,
                    std::size_t stride) { return domex_buckets_rebalance(b, n, x, y, z, stride, nullptr); });
  domex_buckets_free(&handle);
}

}  // namespace

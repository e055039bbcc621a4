// SPDX-License-Identifier: BSD-3-Clause
// Tutorial 6: ghost particles and neighbour lists — what a short-range
// particle code (SPH, MPS, molecular dynamics) needs from its neighbours'
// domains.
//
// Every particle interacts with those within a cutoff h, some of which live
// on other ranks. domex::GhostPlan gives each rank a copy of every particle
// (of any rank, periodic images included, positions shifted) within h of its
// domain, appended after its own; update() refreshes them, reverse_sum()
// adds what was accumulated on them back into their owners.
// domex::NeighborList bins the owned and ghost entries and lists the pairs.
//
// Here an SPH-like density rho_i = sum_j m W(|x_i - x_j|) in a periodic box
// is computed twice: with a full neighbour list (every owned particle visits
// all its neighbours, owned or ghost), and with a half list (each pair once
// over all ranks, Newton's third law: a pair owned-ghost adds to the ghost's
// entry too, and reverse_sum() carries it home). Both must agree. No ids are
// exchanged: the half list decides from positions which of the two ranks
// that see an owned-ghost pair keeps it.
//
//   scripts/run -n 2 build/06-ghost-particles/ghost_density

#include <domex/decompose/buckets.hpp>
#include <domex/ghost/ghost.hpp>
#include <domex/migrate/migrate.hpp>
#include <domex/neighbor/neighbor.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace {

constexpr double h = 0.08;  // the cutoff (interaction radius)

double kernel(double r) { return r < h ? (1 - r / h) * (1 - r / h) : 0.0; }

double distance(const domex::Point& a, const domex::Point& b) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int wrong = 0;
  {
    domex::Comm comm{MPI_COMM_WORLD};
    const domex::Box box{{0, 0, 0}, {1, 1, 1}};
    domex::BucketDecomposition decomposition(comm, box, {.buckets = {12, 12, 12}, .periodic = {true, true, true}});

    // 1500 random particles per rank (some a period outside the box); then
    // to their owners, positions wrapped into the box on the way.
    std::mt19937_64 random(42 + static_cast<std::uint64_t>(comm.rank()));
    std::uniform_real_distribution<double> u(-0.1, 1.1);
    std::vector<domex::Point> x;
    for (int n = 0; n < 1500; ++n) x.push_back({u(random), u(random), u(random)});
    decomposition.rebalance(std::span<const domex::Point>(x));
    domex::MigrationPlan migration(comm, decomposition, std::span<const domex::Point>(x));
    domex::migrate(migration, domex::wrapped(x));

    // The plan: who sends which particles (and which periodic image) to
    // whom. Its build brings the ghosts' shifted positions along:
    // resize_fields() puts them into x's ghost entries (no update() needed
    // until the particles move).
    domex::GhostPlan ghosts(comm, decomposition, std::span<const domex::Point>(x), {.cutoff = h});
    const std::size_t local = ghosts.local_count(), all = ghosts.size();
    ghosts.resize_fields(domex::shifted(x));

    // Full list: every owned particle visits all particles within h.
    domex::NeighborList full_list({.cutoff = h, .kind = domex::NeighborKind::full});
    full_list.build(ghosts, x);
    std::vector<double> full(local, 0.0);
    for (std::size_t i = 0; i < local; ++i) {
      full[i] = kernel(0.0);  // the particle itself
      for (const std::uint32_t j : full_list[i]) full[i] += kernel(distance(x[i], x[j]));
    }

    // Half list: each pair once over all ranks; a ghost's share goes home.
    domex::NeighborList half_list({.cutoff = h});
    half_list.build(ghosts, x);
    std::vector<double> half(all, 0.0);
    for (std::size_t i = 0; i < local; ++i) {
      half[i] += kernel(0.0);
      for (const std::uint32_t j : half_list[i]) {
        const double w = kernel(distance(x[i], x[j]));
        half[i] += w;
        half[j] += w;  // on a ghost: summed into its owner below
      }
    }
    ghosts.reverse_sum(half);

    double worst = 0;
    for (std::size_t i = 0; i < local; ++i) worst = std::max(worst, std::abs(half[i] - full[i]) / full[i]);
    worst = comm.allreduce(worst, MPI_MAX);
    const auto ghost_total = comm.allreduce(ghosts.ghost_count(), MPI_SUM);
    const auto pairs = comm.allreduce(half_list.pairs(), MPI_SUM);
    wrong = worst > 1e-12;
    if (comm.rank() == 0) {
      if (wrong)
        std::printf("WRONG: 06-ghost-particles: half-list density differs from the full list by %.3g\n", worst);
      else
        std::printf("ok: 06-ghost-particles: %zu ghosts and %zu pairs on %d ranks; the half-list density with "
                    "reverse_sum equals the full list (largest relative difference %.2g)\n",
                    ghost_total, pairs, comm.size(), worst);
    }
  }
  MPI_Finalize();
  return wrong;
}

// SPDX-License-Identifier: BSD-3-Clause
// Tutorial 5: tree-code gravity across ranks, the way FDPS does it.
//
// Particles are decomposed with domex::Multisection and moved to their owners
// with domex::migrate (tutorial 2); domex::TreeForce then builds a Morton-key
// octree per rank, exchanges a Local Essential Tree (LET) with the ranks that
// need one, walks the tree once per group of targets and runs a SIMD kernel.
// A near-field kernel (here: counting neighbours within a radius) runs after
// gravity and is guaranteed to see every particle within `search_radius`,
// whichever rank owns it — the hook a contact or SPH kernel uses.
//
// The program checks the tree's accelerations against an exact direct sum for
// a sample of particles and the neighbour counts against a brute-force count.
//
//   scripts/run -n 2 build/05-tree/tree_gravity

#include <domex/decompose/multisection.hpp>
#include <domex/migrate/migrate.hpp>
#include <domex/tree/tree.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    domex::Comm comm{MPI_COMM_WORLD};
    // 20,000 particles in the unit cube, each rank first draws its own share.
    constexpr std::size_t total = 20000;
    std::mt19937_64 random(42 + static_cast<std::uint64_t>(comm.rank()));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const std::size_t mine = total / static_cast<std::size_t>(comm.size()) +
                             (static_cast<std::size_t>(comm.rank()) < total % static_cast<std::size_t>(comm.size()));
    std::vector<domex::Point> positions(mine);
    for (auto& p : positions) p = {unit(random), unit(random), unit(random)};
    std::vector<double> masses(mine, 1.0 / total);

    // Decompose and migrate (tutorial 2).
    const domex::Box cube{{0, 0, 0}, {1, 1, 1}};
    domex::Multisection domains(comm, cube);
    domains.rebalance(positions);
    domex::MigrationPlan plan(comm, domains, positions);
    domex::migrate(plan, positions, masses);

    // Gravity (G = 1, Plummer softening) plus a near-field kernel.
    const double softening = 1.0 / 32, radius = 0.02;
    domex::TreeForce tree(comm, {.theta = 0.5, .let = domex::LetMode::p2p_fast, .softening = softening,
                                 .search_radius = radius, .root = cube});
    std::vector<domex::Point> accelerations(positions.size());
    std::vector<double> neighbours(positions.size(), 0);
    const domex::NearKernel count_neighbours = [&](const domex::TargetGroup& group, const domex::NearSources& s) {
      for (std::size_t i = 0; i < group.positions.size(); ++i)
        for (std::size_t r = 0; r < s.ranges.size(); r += 2)
          for (std::uint32_t k = s.ranges[r]; k < s.ranges[r + 1]; ++k) {
            const double dx = group.positions[i][0] - s.x[k], dy = group.positions[i][1] - s.y[k],
                         dz = group.positions[i][2] - s.z[k];
            const double d2 = dx * dx + dy * dy + dz * dz;
            if (d2 > 0 && d2 < radius * radius) neighbours[group.indices[i]] += 1;  // caller's index: one writer
          }
    };
    domex::Profile profile;
    tree.compute(positions, masses, {}, accelerations, count_neighbours, profile);  // collective
    profile.print(comm, std::cout, "tree phases (s)");

    // Check: every 40th particle against an exact direct sum over all particles.
    const auto all_positions = comm.allgatherv(std::span<const domex::Point>(positions));
    double worst_error = 0, neighbours_wrong = 0;
    for (std::size_t i = 0; i < positions.size(); i += 40) {
      domex::Point exact{0, 0, 0};
      double count = 0;
      for (const auto& q : all_positions) {
        const double dx = q[0] - positions[i][0], dy = q[1] - positions[i][1], dz = q[2] - positions[i][2];
        const double d2 = dx * dx + dy * dy + dz * dz, s2 = d2 + softening * softening;
        const double f = (1.0 / total) / (s2 * std::sqrt(s2));
        exact[0] += f * dx, exact[1] += f * dy, exact[2] += f * dz;
        count += d2 > 0 && d2 < radius * radius;
      }
      const double norm = std::hypot(exact[0], exact[1], exact[2]);
      worst_error = std::max(worst_error, std::hypot(accelerations[i][0] - exact[0], accelerations[i][1] - exact[1],
                                                     accelerations[i][2] - exact[2]) / norm);
      neighbours_wrong += neighbours[i] != count;
    }
    worst_error = comm.allreduce(worst_error, MPI_MAX);
    neighbours_wrong = comm.allreduce(neighbours_wrong, MPI_SUM);
    const double interactions = comm.allreduce(tree.stats().interactions_per_particle(), MPI_SUM) / comm.size();
    const bool ok = worst_error < 0.05 && neighbours_wrong == 0;
    if (comm.rank() == 0)
      std::printf("%s: %zu particles on %d ranks, %.0f interactions per particle, largest relative force error %.2e "
                  "(theta 0.5), neighbour counts %s\n",
                  ok ? "ok" : "WRONG", total, comm.size(), interactions, worst_error,
                  neighbours_wrong == 0 ? "exact" : "wrong");
    status = ok ? 0 : 1;
  }
  MPI_Finalize();
  return status;
}

// SPDX-License-Identifier: BSD-3-Clause
// Tutorial 2: domain decomposition and particle migration.
//
// Each rank starts with particles scattered over the whole periodic unit box.
// domex::Multisection cuts the box into one domain per rank at quantiles of
// the particles' positions (as FDPS does), so every domain holds about the
// same number of particles. domex::MigrationPlan finds each particle's owner
// and domex::migrate() moves it there, with all its arrays (positions, ids).
// Then the particles drift a little and migrate again: now they only cross
// into neighbouring domains, and the plan talks to the neighbours alone.
//
// Checks: every particle ends on its owner, none is lost or duplicated (count
// and sum of ids), and the load is balanced.
//
//   scripts/run -n 2 build/02-decompose-and-migrate/decompose_and_migrate

#include <domex/decompose/multisection.hpp>
#include <domex/migrate/migrate.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int wrong = 0;
  {
    domex::Comm comm{MPI_COMM_WORLD};
    const int rank = comm.rank();
    constexpr int per_rank = 2000;

    // Structure of arrays: positions and ids travel together.
    std::mt19937_64 random(12345 + static_cast<std::uint64_t>(rank));
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::vector<domex::Point> positions(per_rank);
    std::vector<std::int64_t> ids(per_rank);
    for (int i = 0; i < per_rank; ++i) {
      // Clustered towards x = 0 (x = u^2), so equal-volume domains would be
      // unbalanced and the quantile cuts matter.
      const double u = uniform(random);
      positions[i] = {u * u, uniform(random), uniform(random)};
      ids[i] = static_cast<std::int64_t>(rank) * per_rank + i;
    }
    const auto total = static_cast<std::int64_t>(comm.size()) * per_rank;
    const std::int64_t id_sum = total * (total - 1) / 2;

    // The decomposition: periodic unit box, divisions chosen by domex.
    // neighbour_margin: particles moving less than this stay among neighbours.
    domex::Multisection domains(comm, {{0, 0, 0}, {1, 1, 1}},
                                {.periodic = {true, true, true}, .neighbour_margin = 0.01});

    bool first_neighbour_path = false;
    bool second_neighbour_path = false;
    for (int round = 0; round < 2; ++round) {
      if (round == 0) domains.rebalance(positions);  // collective: cuts at sampled quantiles
      else
        for (auto& p : positions)                    // drift by less than the margin, wrap
          for (double& x : p) x = x + 0.005 - std::floor(x + 0.005);

      domex::MigrationPlan plan(comm, domains, positions);  // who goes where (collective)
      (round == 0 ? first_neighbour_path : second_neighbour_path) = plan.neighbour_path();
      domex::migrate(plan, positions, ids);                  // do it (collective)

      // Every particle is now on the rank that owns its position.
      for (const auto& p : positions)
        if (domains.owner(p) != rank) wrong = 1;
    }

    // Nothing lost, nothing duplicated.
    const auto count = comm.allreduce(static_cast<std::int64_t>(positions.size()), MPI_SUM);
    std::int64_t local_sum = 0;
    for (auto id : ids) local_sum += id;
    if (count != total || comm.allreduce(local_sum, MPI_SUM) != id_sum) wrong = 1;
    const auto most = comm.allreduce(static_cast<std::int64_t>(positions.size()), MPI_MAX);
    const double imbalance = static_cast<double>(most) * comm.size() / static_cast<double>(total);
    if (imbalance > 1.2) wrong = 1;  // quantile cuts: within a few % of the mean

    wrong = comm.allreduce(wrong, MPI_MAX);
    if (rank == 0) {
      if (wrong)
        std::printf("WRONG: 02-decompose-and-migrate: particles lost, duplicated or on the wrong rank\n");
      else
        std::printf("ok: 02-decompose-and-migrate: %lld particles on %d ranks, every one on its owner, "
                    "ids conserved, imbalance %.3f (max/mean); first migration %s, after the drift %s\n",
                    static_cast<long long>(total), comm.size(), imbalance,
                    first_neighbour_path ? "neighbours only" : "general exchange",
                    second_neighbour_path ? "neighbours only" : "general exchange");
    }
  }
  MPI_Finalize();
  return wrong;
}

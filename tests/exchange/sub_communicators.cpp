// SPDX-License-Identifier: BSD-3-Clause
// Sparse exchange on disjoint sub-communicators that run at the same time
// (two halves by parity, three groups by rank / 3): every named algorithm and
// automatic, 200 calls each, every received byte checked. On Open MPI 4.1 the
// one-sided algorithms on such groups used to fail (osc/rdma names its node
// segment by communicator id, which the groups of one split share:
// open-mpi/ompi#9492); domex must not offer RMA where windows can collide.
// Also: a window creation made to fail on one rank makes automatic (and a
// named RMA algorithm) fall back on every rank with identical results.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <domex/comm/mpi_defects.hpp>
#include <domex/exchange/automatic.hpp>
#include <domex/exchange/cost_model.hpp>
#include <domex/exchange/exchange.hpp>
#include <string>
#include <vector>

namespace {

using domex::Algorithm;

std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
std::uint64_t mix(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
  return mix(a ^ mix(b ^ mix(c ^ mix(d))));
}

/// Whether `source` sends to `destination` in call `call`, and how many items.
std::size_t items_sent(std::uint64_t seed, int call, int source, int destination) {
  const std::uint64_t h = mix(seed, static_cast<std::uint64_t>(call), static_cast<std::uint64_t>(source),
                              static_cast<std::uint64_t>(destination));
  if (h % 3 == 0) return SIZE_MAX;                 // no message
  return static_cast<std::size_t>((h >> 8) % 40);  // 0..39 items: empty messages included
}
std::uint64_t item(std::uint64_t seed, int call, int source, int destination, std::size_t k) {
  return mix(seed + k, static_cast<std::uint64_t>(call), static_cast<std::uint64_t>(source) << 20,
             static_cast<std::uint64_t>(destination));
}

domex::Outbox<std::uint64_t> outbox_for(std::uint64_t seed, int call, int rank, int size) {
  domex::Outbox<std::uint64_t> outbox;
  std::vector<std::uint64_t> items;
  for (int destination = 0; destination < size; ++destination) {
    const std::size_t count = items_sent(seed, call, rank, destination);
    if (count == SIZE_MAX) continue;
    items.resize(count);
    for (std::size_t k = 0; k < count; ++k) items[k] = item(seed, call, rank, destination, k);
    outbox.add(destination, items);
  }
  return outbox;
}

/// The number of received items that differ from what was sent (a missing or
/// extra message counts as one wrong item per expected or received item, at
/// least one).
std::size_t wrong_items(const domex::Inbox<std::uint64_t>& inbox, std::uint64_t seed, int call, int rank, int size) {
  std::size_t wrong = 0;
  std::size_t m = 0;
  for (int source = 0; source < size; ++source) {
    const std::size_t count = items_sent(seed, call, source, rank);
    if (count == SIZE_MAX) continue;
    if (m >= inbox.sources().size() || inbox.sources()[m] != source) {
      wrong += std::max<std::size_t>(count, 1);
      continue;
    }
    const auto message = inbox.message(m++);
    if (message.size() != count) {
      wrong += std::max<std::size_t>(count, 1);
      continue;
    }
    for (std::size_t k = 0; k < count; ++k) wrong += message[k] != item(seed, call, source, rank, k) ? 1 : 0;
  }
  wrong += inbox.sources().size() - m;  // messages nobody sent
  return wrong;
}

std::vector<Algorithm> every_algorithm() {
  std::vector<Algorithm> algorithms(domex::concrete_algorithms.begin(), domex::concrete_algorithms.end());
  algorithms.push_back(Algorithm::automatic);
  return algorithms;
}

constexpr int calls_per_algorithm = 200;

/// Where RMA is not offered (`rma_offered` false) a named one-sided algorithm
/// runs its two-sided fallback: rma_fence -> alltoall, rma_passive -> nbx.
Algorithm expected_to_run(Algorithm algorithm, bool rma_offered) {
  if (rma_offered) return algorithm;
  if (algorithm == Algorithm::rma_fence) return Algorithm::alltoall;
  if (algorithm == Algorithm::rma_passive) return Algorithm::nbx;
  return algorithm;
}

/// Runs every algorithm `calls_per_algorithm` times on `comm` (a group of a
/// split running concurrently with the others); returns the failed calls
/// (a thrown domex::Error or a wrong inbox) per algorithm, summed over the
/// group's ranks, identical on the group's ranks.

std::vector<long> run_every_algorithm(domex::Comm& comm, std::uint64_t seed, bool rma_offered) {
  std::vector<long> failures;
  for (Algorithm algorithm : every_algorithm()) {
    long failed = 0;
    domex::Inbox<std::uint64_t> inbox;
    for (int call = 0; call < calls_per_algorithm; ++call) {
      const auto outbox = outbox_for(seed, call, comm.rank(), comm.size());
      try {
        domex::exchange(comm, outbox, inbox, {.algorithm = algorithm});
        const std::size_t wrong = wrong_items(inbox, seed, call, comm.rank(), comm.size());
        const Algorithm ran = inbox.stats().algorithm;
        if (algorithm != Algorithm::automatic && ran != expected_to_run(algorithm, rma_offered))
          ADD_FAILURE() << to_string(algorithm) << " call " << call << " ran " << to_string(ran);
        if (algorithm == Algorithm::automatic && !rma_offered &&
            (ran == Algorithm::rma_fence || ran == Algorithm::rma_passive))
          ADD_FAILURE() << "automatic ran " << to_string(ran) << " where RMA is not offered";
        if (wrong) {
          ADD_FAILURE() << to_string(algorithm) << " call " << call << ": " << wrong << " wrong items";
          ++failed;
        }
      } catch (const std::exception& error) {
        ADD_FAILURE() << to_string(algorithm) << " call " << call << ": " << error.what();
        ++failed;
      }
    }
    failures.push_back(comm.allreduce(failed, MPI_SUM));
  }
  return failures;
}

/// Splits MPI_COMM_WORLD by `colour`, runs every algorithm in every group at
/// once, and expects no failure anywhere.
void expect_no_failure_in_groups(int colour, const char* split) {
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm group = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, colour, world_rank, &group), MPI_SUCCESS);
  std::vector<long> failures;
  std::string rma;
  {
    domex::Comm comm{group};
    const auto risk = domex::window_collision_risk(comm);
    rma = risk ? "not offered (" + *risk + ")" : "offered";
    failures = run_every_algorithm(comm, 0x5eed0000u + static_cast<std::uint64_t>(colour), !risk);
    const auto report = domex::automatic_report(comm);
    // Where RMA is not offered, automatic never ran it and says why.
    if (risk) {
      for (const auto& cls : report.classes)
        EXPECT_TRUE(cls.chosen != Algorithm::rma_fence && cls.chosen != Algorithm::rma_passive);
      ASSERT_EQ(report.excluded.size(), 2u);
      EXPECT_NE(report.excluded[0].reason.find("ompi#9492"), std::string::npos) << report.excluded[0].reason;
    }
  }
  MPI_Comm_free(&group);
  // Every group's counts, on every rank: a failure anywhere fails everywhere.
  long total = 0;
  for (long f : failures) total += f;
  long everywhere = 0;
  MPI_Allreduce(&total, &everywhere, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank == 0)
    std::printf("%s, seed 0x5eed0000 + group: RMA %s; failed calls in all groups: %ld\n", split, rma.c_str(),
                everywhere);
  EXPECT_EQ(everywhere, 0) << split;
}

TEST(SubCommunicators, TwoHalvesByParityRunEveryAlgorithmAtOnce) {
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  expect_no_failure_in_groups(world_rank % 2, "two halves (rank % 2)");
}

TEST(SubCommunicators, ThreeGroupsByRankOverThreeRunEveryAlgorithmAtOnce) {
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  expect_no_failure_in_groups(world_rank / 3, "groups of three (rank / 3)");
}

/// A model that ranks rma_fence first by far, so automatic (learning off)
/// runs it on its first call.
domex::CostModel rma_first_model() {
  domex::CostModel model;
  for (Algorithm algorithm : domex::concrete_algorithms) model[algorithm] = {1e-3, 1e-5, 1e-9};
  model[Algorithm::rma_fence] = {1e-7, 1e-9, 1e-12};
  return model;
}

/// Every rank ran the same algorithm.
void expect_same_everywhere(const domex::Comm& comm, Algorithm ran, int call) {
  const auto all = comm.allgather(static_cast<int>(ran));
  for (int algorithm : all) ASSERT_EQ(algorithm, all[0]) << "call " << call;
}

TEST(WindowFailure, AutomaticFallsBackOnEveryRankWithTheTwoSidedResults) {
  domex::Comm comm{MPI_COMM_WORLD};
  if (domex::window_collision_risk(comm)) GTEST_SKIP() << "RMA is not offered on MPI_COMM_WORLD here";
  const auto model = rma_first_model();
  const domex::ExchangeOptions options{.cost_model = &model, .learning = domex::Learning::off};
  // The last rank's window creation fails; the others' succeed.
  if (comm.rank() == comm.size() - 1) domex::detail::fail_next_window_for_testing();
  domex::Inbox<std::uint64_t> inbox;
  const std::uint64_t seed = 0x77;
  for (int call = 0; call < 40; ++call) {
    const auto outbox = outbox_for(seed, call, comm.rank(), comm.size());
    domex::exchange(comm, outbox, inbox, options);
    const Algorithm ran = inbox.stats().algorithm;
    ASSERT_NE(ran, Algorithm::rma_fence) << "call " << call;
    ASSERT_NE(ran, Algorithm::rma_passive) << "call " << call;
    if (call == 0) {
      EXPECT_EQ(ran, Algorithm::alltoall) << "the failing call runs rma_fence's fallback";
    }
    expect_same_everywhere(comm, ran, call);
    // Identical to a two-sided algorithm's inbox, byte for byte.
    const auto reference = domex::exchange(comm, outbox, {.algorithm = Algorithm::nbx});
    ASSERT_TRUE(std::equal(inbox.sources().begin(), inbox.sources().end(), reference.sources().begin(),
                           reference.sources().end()));
    ASSERT_TRUE(std::equal(inbox.data().begin(), inbox.data().end(), reference.data().begin(), reference.data().end()));
    ASSERT_EQ(wrong_items(inbox, seed, call, comm.rank(), comm.size()), 0u) << "call " << call;
  }
  const auto report = domex::automatic_report(comm);
  ASSERT_EQ(report.excluded.size(), 2u);
  EXPECT_EQ(report.excluded[0].algorithm, Algorithm::rma_fence);
  EXPECT_EQ(report.excluded[1].algorithm, Algorithm::rma_passive);
  const std::string expected = "failed on rank " + std::to_string(comm.size() - 1);
  EXPECT_NE(report.excluded[0].reason.find(expected), std::string::npos) << report.excluded[0].reason;
  for (const auto& cls : report.classes) {
    EXPECT_NE(cls.chosen, Algorithm::rma_fence);
    EXPECT_NE(cls.chosen, Algorithm::rma_passive);
  }
  // A named one-sided algorithm on this Comm now runs its fallback too.
  const auto outbox = outbox_for(seed, 99, comm.rank(), comm.size());
  const auto passive = domex::exchange(comm, outbox, {.algorithm = Algorithm::rma_passive});
  EXPECT_EQ(passive.stats().algorithm, Algorithm::nbx);
  EXPECT_EQ(wrong_items(passive, seed, 99, comm.rank(), comm.size()), 0u);
}

TEST(WindowFailure, ANamedRmaAlgorithmFallsBackOnEveryRankAndTheCommStaysUsable) {
  domex::Comm comm{MPI_COMM_WORLD};
  if (domex::window_collision_risk(comm)) GTEST_SKIP() << "RMA is not offered on MPI_COMM_WORLD here";
  if (comm.rank() == 0) domex::detail::fail_next_window_for_testing();
  const std::uint64_t seed = 0x78;
  for (int call = 0; call < 20; ++call) {
    const auto outbox = outbox_for(seed, call, comm.rank(), comm.size());
    const auto inbox = domex::exchange(comm, outbox, {.algorithm = Algorithm::rma_passive});
    ASSERT_EQ(inbox.stats().algorithm, Algorithm::nbx) << "call " << call;
    ASSERT_EQ(wrong_items(inbox, seed, call, comm.rank(), comm.size()), 0u) << "call " << call;
  }
  // Another Comm on the same ranks is not affected: RMA runs there.
  domex::Comm fresh{MPI_COMM_WORLD};
  const auto outbox = outbox_for(seed, 7, fresh.rank(), fresh.size());
  const auto inbox = domex::exchange(fresh, outbox, {.algorithm = Algorithm::rma_fence});
  EXPECT_EQ(inbox.stats().algorithm, Algorithm::rma_fence);
  EXPECT_EQ(wrong_items(inbox, seed, 7, fresh.rank(), fresh.size()), 0u);
}

}  // namespace

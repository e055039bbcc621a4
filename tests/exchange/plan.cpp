// SPDX-License-Identifier: BSD-3-Clause
// SparsePlan: a plan reused many times gives the inboxes of the dynamic
// exchange; a changed pattern is re-planned (PlanCheck::collective) or caught
// on every rank concerned (PlanCheck::promised), never silently wrong.

#include <domex/exchange/plan.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

/// Rank `rank`'s outbox for pattern `seed`: up to 5 destinations (self
/// possible), sizes 0..max, values that depend on the call.
domex::Outbox<std::uint64_t> outbox_of(int rank, int size, unsigned seed, std::uint64_t call, std::size_t max = 50) {
  std::mt19937 random(seed * 104729u + static_cast<unsigned>(rank));
  domex::Outbox<std::uint64_t> outbox;
  std::vector<std::uint64_t> items;
  for (int destination = 0; destination < size; ++destination) {
    if (random() % 2 == 0) continue;
    items.resize(random() % (max + 1));
    for (std::size_t k = 0; k < items.size(); ++k)
      items[k] = call << 32 | static_cast<std::uint64_t>(rank) << 16 | static_cast<std::uint64_t>(k);
    outbox.add(destination, items);
  }
  return outbox;
}

void expect_same(const domex::Inbox<std::uint64_t>& a, const domex::Inbox<std::uint64_t>& b, std::uint64_t call) {
  ASSERT_EQ(std::vector<int>(a.sources().begin(), a.sources().end()),
            std::vector<int>(b.sources().begin(), b.sources().end()))
      << "call " << call;
  ASSERT_EQ(std::vector<std::size_t>(a.offsets().begin(), a.offsets().end()),
            std::vector<std::size_t>(b.offsets().begin(), b.offsets().end()))
      << "call " << call;
  ASSERT_TRUE(std::equal(a.data().begin(), a.data().end(), b.data().begin(), b.data().end())) << "call " << call;
}

TEST(SparsePlan, ReusedAThousandTimesEqualsTheDynamicExchange) {
  domex::Comm comm{MPI_COMM_WORLD};
  std::printf("%s", comm.rank() == 0 ? "patterns: seeds 1.. (a new one every 150 calls)\n" : "");
  unsigned seed = 1;
  auto outbox = outbox_of(comm.rank(), comm.size(), seed, 0);
  domex::SparsePlan<std::uint64_t> plan(comm, outbox);
  std::size_t changes = 0;
  for (std::uint64_t call = 1; call <= 1000; ++call) {
    if (call % 150 == 0) {
      ++seed;
      ++changes;
    }
    outbox = outbox_of(comm.rank(), comm.size(), seed, call);  // new payload, new buffer
    const auto& inbox = plan.exchange(outbox);
    const auto reference = domex::exchange(comm, outbox, {.algorithm = domex::Algorithm::alltoall});
    expect_same(inbox, reference, call);
  }
  // Re-planned once per pattern change (where some rank's pattern changed).
  EXPECT_LE(plan.plans(), changes + 1);
  EXPECT_GE(plan.plans(), 1u);
}

TEST(SparsePlan, PiecesAndBeginFinishWithComputationBetween) {
  domex::Comm comm{MPI_COMM_WORLD};
  auto outbox = outbox_of(comm.rank(), comm.size(), 7, 0, 400);
  domex::SparsePlan<std::uint64_t> plan(comm, outbox, {.discovery = domex::Algorithm::nbx, .max_message_bytes = 64});
  for (std::uint64_t call = 1; call <= 20; ++call) {
    outbox = outbox_of(comm.rank(), comm.size(), 7, call, 400);
    plan.begin(outbox);
    volatile double work = 0;
    for (int i = 0; i < 10000; ++i) work = work + i;
    const auto& inbox = plan.finish();
    expect_same(inbox, domex::exchange(comm, outbox), call);
  }
  EXPECT_EQ(plan.plans(), 1u);
}

TEST(SparsePlan, ABrokenPromiseIsAnErrorOnEveryRankConcernedNeverAHang) {
  domex::Comm comm{MPI_COMM_WORLD};
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  const int bad = comm.size() / 2;
  // Every rank sends 3 items to every rank.
  const auto all_to_all = [&](std::size_t items_to_first) {
    domex::Outbox<std::uint64_t> outbox;
    for (int d = 0; d < comm.size(); ++d)
      outbox.add(d, std::vector<std::uint64_t>(d == 0 ? items_to_first : 3, static_cast<std::uint64_t>(comm.rank())));
    return outbox;
  };
  domex::SparsePlan<std::uint64_t> plan(comm, all_to_all(3), {.check = domex::PlanCheck::promised});
  EXPECT_EQ(plan.exchange(all_to_all(3)).size(), 3u * static_cast<std::size_t>(comm.size()));
  // The bad rank sends 5 items to rank 0 instead of 3, without re-planning.
  std::string error;
  try {
    (void)plan.exchange(all_to_all(comm.rank() == bad ? 5 : 3));
  } catch (const domex::Error& e) {
    error = e.what();
  }
  if (comm.rank() == bad) {
    EXPECT_NE(error.find("replan"), std::string::npos) << error;
  } else {
    // Every rank the bad one was to send to (here: all) is told, and its inbox is left empty, never half-right.
    EXPECT_NE(error.find("rank " + std::to_string(bad) + " sent messages that do not match"), std::string::npos)
        << error;
    EXPECT_EQ(plan.inbox().message_count(), 0u);
  }
  // Re-planned, everything works again.
  plan.replan(all_to_all(3));
  EXPECT_EQ(plan.exchange(all_to_all(3)).size(), 3u * static_cast<std::size_t>(comm.size()));
}

TEST(SparsePlan, OneRanksInvalidOutboxIsAnErrorOnEveryRank) {
  domex::Comm comm{MPI_COMM_WORLD};
  const int bad = comm.size() - 1;
  domex::Outbox<int> outbox;
  if (comm.rank() == bad) outbox.add(comm.size() + 3, 1);  // out of range
  else outbox.add(0, 1);
  try {
    domex::SparsePlan<int> plan(comm, outbox);
    ADD_FAILURE() << "no error";
  } catch (const domex::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(bad) + ": SparsePlan"), std::string::npos)
        << e.what();
  }
  // With a plan in place, an invalid outbox in exchange (collective check): every rank throws.
  domex::Outbox<int> good;
  good.add(0, 1);
  domex::SparsePlan<int> plan(comm, good);
  EXPECT_THROW((void)plan.exchange(comm.rank() == bad ? outbox : good), domex::Error);
  EXPECT_EQ(plan.exchange(good).size(), comm.rank() == 0 ? static_cast<std::size_t>(comm.size()) : 0u);
}

}  // namespace

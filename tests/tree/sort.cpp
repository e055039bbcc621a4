// SPDX-License-Identifier: BSD-3-Clause
#include <domex/tree/sort.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

namespace {

using domex::KeyIndex;

std::vector<KeyIndex> with_indices(const std::vector<domex::MortonKey>& keys) {
  std::vector<KeyIndex> items(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) items[i] = {keys[i], i};
  return items;
}

void expect_sorts_like_std_sort(const std::vector<KeyIndex>& original) {
  auto expected = original;
  std::sort(expected.begin(), expected.end());
  for (int threads : {1, 2, 3, 4, 8, -1, -2, -3}) {
    // Negative: the merge sort (the legacy path) with -threads threads.
    auto items = original;
    if (threads > 0)
      domex::sort_by_key(items, threads);
    else
      domex::merge_sort_by_key(items, -threads);
    ASSERT_EQ(items, expected) << "threads " << threads;
    // A permutation: every index exactly once, with its own key.
    std::vector<char> seen(items.size(), 0);
    std::vector<domex::MortonKey> key_of(items.size());
    for (const auto& item : original) key_of[item.index] = item.key;
    for (const auto& item : items) {
      ASSERT_LT(item.index, items.size());
      ASSERT_FALSE(seen[item.index]) << "index " << item.index << " twice";
      seen[item.index] = 1;
      ASSERT_EQ(item.key, key_of[item.index]);
    }
    for (std::size_t i = 1; i < items.size(); ++i) ASSERT_FALSE(items[i] < items[i - 1]);
  }
}

void expect_sorts_like_std_sort(const std::vector<domex::MortonKey>& keys) {
  expect_sorts_like_std_sort(with_indices(keys));
}

TEST(Sort, RandomKeys) {
  const std::uint64_t seed = 3;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 random(seed);
  for (std::size_t n : {0ul, 1ul, 1000ul, 100000ul, 300001ul}) {
    std::vector<domex::MortonKey> keys(n);
    for (auto& key : keys) key = random() >> 1;
    expect_sorts_like_std_sort(keys);
  }
}

TEST(Sort, ClusteredKeysWithDuplicates) {
  std::mt19937_64 random(5);
  std::vector<domex::MortonKey> keys(200000);
  // Three dense clusters and repeated values: buckets of very different sizes.
  for (auto& key : keys) {
    const auto cluster = random() % 3;
    key = (cluster << 60) + random() % (cluster == 0 ? 50 : 100000);
  }
  expect_sorts_like_std_sort(keys);
}

TEST(Sort, AllEqualKeysKeepIndexOrder) {
  std::vector<domex::MortonKey> keys(100000, 0x123456789ull);
  expect_sorts_like_std_sort(keys);
}

TEST(Sort, AlreadySortedAndReversed) {
  std::vector<domex::MortonKey> keys(150000);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = i * 3;
  expect_sorts_like_std_sort(keys);
  std::reverse(keys.begin(), keys.end());
  expect_sorts_like_std_sort(keys);
}

TEST(Sort, ShuffledIndicesAndFull64BitKeys) {
  // Indices not in input order (ties must still come out by index) and keys
  // using all 64 bits (every radix pass, the top one included).
  const std::uint64_t seed = 11;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 random(seed);
  for (std::size_t n : {700ul, 50000ul, 200000ul}) {
    std::vector<KeyIndex> items(n);
    for (std::size_t i = 0; i < n; ++i) items[i] = {random() % 2 ? random() : (random() % 16) << 60, i};
    std::shuffle(items.begin(), items.end(), random);
    expect_sorts_like_std_sort(items);
  }
}

/// sort_by_key asked for 4 threads inside a parallel region, where the
/// runtime grants it fewer (nested regions get one thread by default).
TEST(Sort, FewerThreadsThanAskedFor) {
  std::mt19937_64 random(11);
  std::vector<KeyIndex> original(50000);
  for (std::size_t i = 0; i < original.size(); ++i) original[i] = {random() >> 1, i};
  auto expected = original;
  std::sort(expected.begin(), expected.end());
  std::vector<std::vector<KeyIndex>> sorted(2, original);
#pragma omp parallel for num_threads(2)
  for (int copy = 0; copy < 2; ++copy) domex::sort_by_key(sorted[static_cast<std::size_t>(copy)], 4);
  for (const auto& items : sorted) EXPECT_EQ(items, expected);
}

}  // namespace

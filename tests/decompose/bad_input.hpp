// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Shared by the decomposition tests: the kinds of bad input one rank can
// hold, and the ranks that hold it (first, middle, last).

#include <domex/decompose/box.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace domex::testing {

struct BadInput {
  std::string kind;
  bool in_weight;     ///< the weight is bad, else the position
  Point position;     ///< replaces particle `index`'s position
  double weight;      ///< replaces particle `index`'s weight
  std::string value;  ///< what the error message must show
};

/// Bad inputs for a non-periodic unit box.
inline std::vector<BadInput> bad_inputs() {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  return {{"NaN position", false, {0.5, nan, 0.5}, 1, "nan"},
          {"infinite position", false, {inf, 0.5, 0.5}, 1, "inf"},
          {"outside the box", false, {0.5, 0.5, 1.75}, 1, "1.75"},
          {"negative weight", true, {0.5, 0.5, 0.5}, -2.5, "-2.5"},
          {"NaN weight", true, {0.5, 0.5, 0.5}, nan, "nan"},
          {"infinite weight", true, {0.5, 0.5, 0.5}, inf, "inf"}};
}

/// Ranks that get the bad input: 0, the middle one and the last.
inline std::vector<int> bad_ranks(int size) {
  std::vector<int> ranks{0};
  if (size > 2) ranks.push_back(size / 2);
  if (size > 1) ranks.push_back(size - 1);
  return ranks;
}

}  // namespace domex::testing

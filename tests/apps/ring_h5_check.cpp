// SPDX-License-Identifier: BSD-3-Clause
// Checks a domex-ring HDF5 snapshot for tests/apps/ring_cli.sh (no h5dump
// needed): /position and /velocity are N x 3 and finite, /id holds each of
// 0..N-1 once. Prints "ring_h5_check: N particles" and exits 0, or names
// what is wrong and exits 1.
// Usage: ring_h5_check FILE.h5

#include <domex/comm/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "hdf5.hpp"

namespace h5 = domex::apps::hdf5;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ring_h5_check FILE.h5\n");
    return 2;
  }
  try {
    auto id = h5::read_uint64(argv[1], "id");
    const std::size_t n = id.values.size();
    if (id.shape != std::vector<std::size_t>{n}) throw std::runtime_error("/id is not one-dimensional");
    for (const char* name : {"position", "velocity"}) {
      const auto set = h5::read_double(argv[1], name);
      if (set.shape != std::vector<std::size_t>{n, 3})
        throw std::runtime_error(std::string("/") + name + " is not N x 3 for the N of /id");
      if (!std::all_of(set.values.begin(), set.values.end(), [](double x) { return std::isfinite(x); }))
        throw std::runtime_error(std::string("/") + name + " holds a value that is not finite");
    }
    std::sort(id.values.begin(), id.values.end());
    for (std::size_t i = 0; i < n; ++i)
      if (id.values[i] != i) throw std::runtime_error("/id is not 0..N-1: sorted entry " + std::to_string(i) +
                                                      " is " + std::to_string(id.values[i]));
    std::printf("ring_h5_check: %zu particles\n", n);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ring_h5_check: %s: %s\n", argv[1], error.what());
    return 1;
  }
  return 0;
}

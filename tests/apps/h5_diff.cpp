// SPDX-License-Identifier: BSD-3-Clause
// Compares one float64 dataset of two HDF5 files for the application CLI
// tests (no h5diff needed): prints "h5_diff: values N difference D largest M"
// and exits 0 when the shapes agree, else names the difference and exits 1.
// Usage: h5_diff A.h5 B.h5 DATASET

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include "hdf5.hpp"

namespace h5 = domex::apps::hdf5;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: h5_diff A.h5 B.h5 DATASET\n");
    return 2;
  }
  try {
    const auto a = h5::read_double(argv[1], argv[3]), b = h5::read_double(argv[2], argv[3]);
    if (a.shape != b.shape) {
      std::fprintf(stderr, "h5_diff: /%s: the shapes differ\n", argv[3]);
      return 1;
    }
    double difference = 0, largest = 0;
    for (std::size_t i = 0; i < a.values.size(); ++i) {
      difference = std::max(difference, std::abs(a.values[i] - b.values[i]));
      largest = std::max(largest, std::abs(a.values[i]));
    }
    std::printf("h5_diff: values %zu difference %.6e largest %.6e\n", a.values.size(), difference, largest);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "h5_diff: %s\n", error.what());
    return 1;
  }
  return 0;
}

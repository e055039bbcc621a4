// SPDX-License-Identifier: BSD-3-Clause
// domex-bench calibrate: measures every sparse-exchange algorithm on a grid of
// patterns (m messages per rank of b bytes each) at this P and fits the cost
// model T = fixed + per_message * m + per_byte * (m * b) per algorithm by
// non-negative least squares; writes the model file automatic reads.
//
//   mpirun -n 8 domex-bench calibrate --output domex-cost-model.txt

#include "command.hpp"
#include "timing.hpp"

#include <domex/exchange/cost_model.hpp>
#include <domex/exchange/exchange.hpp>

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

// Named per file: the files are compiled as one (UNITY_BUILD, CMakeLists.txt).
namespace domex::bench::calibrate_command {
namespace {

struct CalibrateOptions {
  std::vector<int> messages{1, 2, 4, 8, 26};
  std::vector<std::size_t> sizes{8, 4096, 65536, 262144};
  double seconds_per_point = 0.15;
  std::string output = "domex-cost-model.txt";
};

struct Point {
  double messages, bytes, seconds;
};

/// Least squares of seconds ~ c0 + c1 m + c2 B with every c >= 0: the best of
/// the fits on each subset of the three terms whose coefficients are all >= 0
/// (three unknowns, so trying all subsets is exact NNLS).
std::array<double, 3> fit_non_negative(const std::vector<Point>& points) {
  std::array<double, 3> best{0, 0, 0};
  double best_error = std::numeric_limits<double>::infinity();
  for (int subset = 1; subset < 8; ++subset) {
    std::vector<int> terms;
    for (int t = 0; t < 3; ++t)
      if (subset & (1 << t)) terms.push_back(t);
    const std::size_t n = terms.size();
    // Normal equations, weighted by 1/seconds so small and large patterns count alike.
    double a[3][4] = {};
    for (const auto& p : points) {
      const double feature[3] = {1.0, p.messages, p.bytes};
      const double w = 1.0 / (p.seconds * p.seconds);
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) a[i][j] += w * feature[terms[i]] * feature[terms[j]];
        a[i][3] += w * feature[terms[i]] * p.seconds;
      }
    }
    bool singular = false;
    for (std::size_t col = 0; col < n && !singular; ++col) {  // Gauss-Jordan
      std::size_t pivot = col;
      for (std::size_t r = col + 1; r < n; ++r)
        if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
      if (std::abs(a[pivot][col]) < 1e-300) singular = true;
      else {
        for (int k = 0; k < 4; ++k) std::swap(a[col][k], a[pivot][k]);
        for (std::size_t r = 0; r < n; ++r) {
          if (r == col) continue;
          const double f = a[r][col] / a[col][col];
          for (int k = 0; k < 4; ++k) a[r][k] -= f * a[col][k];
        }
      }
    }
    if (singular) continue;
    std::array<double, 3> c{0, 0, 0};
    bool negative = false;
    for (std::size_t i = 0; i < n; ++i) {
      c[static_cast<std::size_t>(terms[i])] = a[i][3] / a[i][i];
      negative |= c[static_cast<std::size_t>(terms[i])] < 0;
    }
    if (negative) continue;
    double error = 0;
    for (const auto& p : points) {
      const double r = (c[0] + c[1] * p.messages + c[2] * p.bytes - p.seconds) / p.seconds;
      error += r * r;
    }
    if (error < best_error) {
      best_error = error;
      best = c;
    }
  }
  return best;
}

void run_calibrate(const CalibrateOptions& options) {
  Comm comm{MPI_COMM_WORLD};
  const int p = comm.size();
  std::vector<std::vector<Point>> points(concrete_algorithms.size());
  std::vector<Inbox<std::byte>> inboxes(concrete_algorithms.size());
  Outbox<std::byte> outbox;
  std::vector<int> counts;
  for (int m : options.messages)
    if (std::min(m, p - 1) >= (p > 1 ? 1 : 0) &&
        std::find(counts.begin(), counts.end(), std::min(m, p - 1)) == counts.end())
      counts.push_back(std::min(m, p - 1));
  for (int m : counts)
    for (std::size_t bytes : options.sizes) {
      outbox.clear();
      std::vector<std::byte> payload(bytes, std::byte{2});
      for (int k = 1; k <= m; ++k) outbox.add((comm.rank() + k) % p, payload);
      for (std::size_t a = 0; a < concrete_algorithms.size(); ++a)
        for (int warm = 0; warm < 3; ++warm) exchange(comm, outbox, inboxes[a], {.algorithm = concrete_algorithms[a]});
      std::vector<std::vector<double>> samples(concrete_algorithms.size());
      double spent = 0;
      for (int round = 0; round < 5 || (spent < options.seconds_per_point && round < 1000); ++round)
        for (std::size_t a = 0; a < concrete_algorithms.size(); ++a) {
          const double seconds = time_collective(
              comm, [&] { exchange(comm, outbox, inboxes[a], {.algorithm = concrete_algorithms[a]}); });
          samples[a].push_back(seconds);
          spent += seconds;
        }
      for (std::size_t a = 0; a < concrete_algorithms.size(); ++a)
        points[a].push_back({double(m), double(m) * double(bytes), summarize(samples[a]).median});
      if (comm.rank() == 0) std::fprintf(stderr, "  m = %2d, %7zu B per message measured\n", m, bytes);
    }
  CostModel model;
  model.calibration_ranks = p;
  if (comm.rank() == 0) std::printf("cost model fitted at P = %d (T = fixed + per_message*m + per_byte*B)\n", p);
  if (comm.rank() == 0)
    std::printf("%-16s %12s %14s %14s %12s\n", "algorithm", "fixed[us]", "per msg[us]", "per byte[ns]", "rms rel err");
  for (std::size_t a = 0; a < concrete_algorithms.size(); ++a) {
    const auto c = fit_non_negative(points[a]);
    model[concrete_algorithms[a]] = {c[0], c[1], c[2]};
    double error = 0;
    for (const auto& point : points[a]) {
      const double r = (c[0] + c[1] * point.messages + c[2] * point.bytes - point.seconds) / point.seconds;
      error += r * r;
    }
    if (comm.rank() == 0)
      std::printf("%-16s %12.2f %14.3f %14.4f %11.1f%%\n", std::string(to_string(concrete_algorithms[a])).c_str(),
                  1e6 * c[0], 1e6 * c[1], 1e9 * c[2], 100 * std::sqrt(error / double(points[a].size())));
  }
  if (comm.rank() == 0) {
    model.save(options.output);
    std::printf("wrote %s (used by Algorithm::automatic from this folder, or via DOMEX_COST_MODEL)\n",
                options.output.c_str());
  }
}

const Registration registration{[](CLI::App& app) {
  auto options = std::make_shared<CalibrateOptions>();
  auto* command = app.add_subcommand("calibrate", "measure this machine and fit the cost model of automatic");
  command->add_option("--messages", options->messages, "messages per rank")->capture_default_str();
  command->add_option("--sizes", options->sizes, "bytes per message")->capture_default_str();
  command->add_option("--seconds-per-point", options->seconds_per_point, "measuring time per pattern")
      ->capture_default_str();
  command->add_option("--output", options->output, "model file to write")->capture_default_str();
  command->callback([options] { run_calibrate(*options); });
}};

}  // namespace
}  // namespace domex::bench::calibrate_command

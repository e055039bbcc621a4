// SPDX-License-Identifier: BSD-3-Clause
// Accuracy on request: the calibration table and the choice it drives.

#include <domex/comm/comm.hpp>
#include <domex/comm/error.hpp>
#include <domex/tree/accuracy.hpp>
#include <domex/tree/tree.hpp>

#include "simd.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace domex {

std::string_view to_string(ErrorMeasure measure) noexcept {
  switch (measure) {
    case ErrorMeasure::per_particle: return "per_particle";
    case ErrorMeasure::rms: return "rms";
  }
  return "?";
}

ErrorMeasure error_measure_from_string(std::string_view name) {
  for (ErrorMeasure measure : {ErrorMeasure::per_particle, ErrorMeasure::rms})
    if (to_string(measure) == name) return measure;
  fail("error_measure_from_string", "unknown error measure '" + std::string(name) + "' (valid: per_particle, rms)");
}

namespace {

// domex-bench tree, 1e5 particles, np 1, one thread, seed 2024, softening
// 1/32, leaf 8, group 64, 2000 sampled targets against an fp64 direct sum
// (docs/tree_accuracy.md has the commands):
//   mpirun -n 1 domex-bench tree --particles 100000 --distribution D --opening O [--quadrupole]
//       --thetas 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0 1.2 --steps 1 --threads 1 --json D-O.json
// (measured with one group per cell, before TreeOptions::merge_groups became
// the default: a merged group's box holds its cells' boxes, so it opens at
// least the cells they open, and the check on the input measures the rest;
// see docs/tree_accuracy.md).
// Columns: opening, quadrupole, theta; median per-particle error uniform,
// Plummer; median error by rms |a| uniform, Plummer, ring; interactions per
// particle uniform, Plummer, ring; of which cells uniform, Plummer, ring.
constexpr CalibrationPoint calibration[] = {
    {Opening::cell, false, 0.20, 5.57e-05, 3.31e-05, 5.57e-05, 3.15e-05, 0.000278, 9787, 21165, 2291, 6117, 11583, 892},
    {Opening::cell, false, 0.30, 0.000153, 8.38e-05, 0.000152, 7.93e-05, 0.000579, 4455, 9792, 1416, 2906, 6666, 616},
    {Opening::cell, false, 0.40, 0.000337, 0.000173, 0.000328, 0.000155, 0.001, 2460, 5286, 1016, 1602, 3897, 467},
    {Opening::cell, false, 0.50, 0.000583, 0.000312, 0.000566, 0.000271, 0.00181, 1590, 3223, 754, 1057, 2494, 352},
    {Opening::cell, false, 0.60, 0.000855, 0.0005, 0.000835, 0.000441, 0.00271, 1181, 2273, 623, 757, 1718, 295},
    {Opening::cell, false, 0.70, 0.00126, 0.00082, 0.00124, 0.000741, 0.00421, 825, 1652, 563, 528, 1253, 265},
    {Opening::cell, false, 0.80, 0.0021, 0.00133, 0.00208, 0.0012, 0.00613, 544, 1157, 443, 333, 880, 212},
    {Opening::cell, false, 0.90, 0.00321, 0.00181, 0.00308, 0.00158, 0.00854, 489, 912, 367, 302, 686, 174},
    {Opening::cell, false, 1.00, 0.00458, 0.00241, 0.00444, 0.00214, 0.0103, 442, 771, 341, 266, 566, 163},
    {Opening::cell, false, 1.20, 0.00988, 0.00512, 0.01, 0.00469, 0.0208, 348, 609, 307, 198, 438, 142},
    {Opening::cell, true, 0.20, 3.5e-06, 2.9e-06, 3.56e-06, 2.4e-06, 5.02e-06, 9787, 21165, 2291, 6117, 11583, 892},
    {Opening::cell, true, 0.30, 1.51e-05, 1.37e-05, 1.51e-05, 1.08e-05, 2.1e-05, 4455, 9792, 1416, 2906, 6666, 616},
    {Opening::cell, true, 0.40, 4.68e-05, 4.11e-05, 4.69e-05, 3.38e-05, 5.75e-05, 2460, 5286, 1016, 1602, 3897, 467},
    {Opening::cell, true, 0.50, 0.000108, 9.47e-05, 0.000107, 8.23e-05, 0.00015, 1590, 3223, 754, 1057, 2494, 352},
    {Opening::cell, true, 0.60, 0.000193, 0.000175, 0.000193, 0.000152, 0.000257, 1181, 2273, 623, 757, 1718, 295},
    {Opening::cell, true, 0.70, 0.000365, 0.000377, 0.000355, 0.000344, 0.000456, 825, 1652, 563, 528, 1253, 265},
    {Opening::cell, true, 0.80, 0.000875, 0.000663, 0.000842, 0.000639, 0.000897, 544, 1157, 443, 333, 880, 212},
    {Opening::cell, true, 0.90, 0.00183, 0.000985, 0.00175, 0.000943, 0.00136, 489, 912, 367, 302, 686, 174},
    {Opening::cell, true, 1.00, 0.00298, 0.00137, 0.0029, 0.00128, 0.00181, 442, 771, 341, 266, 566, 163},
    {Opening::cell, true, 1.20, 0.00758, 0.00364, 0.00779, 0.00357, 0.00412, 348, 609, 307, 198, 438, 142},
    {Opening::particles, false, 0.20, 0.000224, 0.000113, 0.000223, 0.000107, 0.00108, 4321, 8960, 872, 3618, 7650, 508},
    {Opening::particles, false, 0.30, 0.000555, 0.000258, 0.000545, 0.000255, 0.00332, 1952, 4212, 556, 1620, 3759, 325},
    {Opening::particles, false, 0.40, 0.00101, 0.000467, 0.000976, 0.000452, 0.00772, 1146, 2458, 409, 947, 2212, 244},
    {Opening::particles, false, 0.50, 0.00168, 0.000744, 0.00162, 0.000707, 0.0127, 695, 1583, 307, 549, 1413, 164},
    {Opening::particles, false, 0.60, 0.00229, 0.00108, 0.00227, 0.00104, 0.022, 493, 1101, 276, 369, 956, 146},
    {Opening::particles, false, 0.70, 0.00402, 0.00149, 0.00388, 0.00136, 0.0381, 421, 848, 242, 317, 726, 125},
    {Opening::particles, false, 0.80, 0.00606, 0.00223, 0.00594, 0.00201, 0.0541, 342, 675, 213, 256, 574, 111},
    {Opening::particles, false, 0.90, 0.0103, 0.00319, 0.0104, 0.00278, 0.0929, 270, 559, 188, 200, 476, 98},
    {Opening::particles, false, 1.00, 0.014, 0.0045, 0.0142, 0.00414, 0.129, 219, 479, 162, 161, 411, 83},
    {Opening::particles, false, 1.20, 0.0285, 0.00862, 0.0281, 0.00862, 0.232, 139, 372, 117, 96, 323, 59},
    {Opening::particles, true, 0.20, 1.87e-05, 1.33e-05, 1.85e-05, 1.15e-05, 5.66e-05, 4321, 8960, 872, 3618, 7650, 508},
    {Opening::particles, true, 0.30, 6.63e-05, 4.65e-05, 6.53e-05, 4.01e-05, 0.000247, 1952, 4212, 556, 1620, 3759, 325},
    {Opening::particles, true, 0.40, 0.000156, 0.000122, 0.000153, 0.000107, 0.000892, 1146, 2458, 409, 947, 2212, 244},
    {Opening::particles, true, 0.50, 0.000353, 0.00025, 0.000344, 0.000229, 0.00208, 695, 1583, 307, 549, 1413, 164},
    {Opening::particles, true, 0.60, 0.00085, 0.000433, 0.000815, 0.000374, 0.00439, 493, 1101, 276, 369, 956, 146},
    {Opening::particles, true, 0.70, 0.00226, 0.000748, 0.00216, 0.000678, 0.0102, 421, 848, 242, 317, 726, 125},
    {Opening::particles, true, 0.80, 0.00396, 0.00116, 0.00397, 0.00116, 0.0196, 342, 675, 213, 256, 574, 111},
    {Opening::particles, true, 0.90, 0.0075, 0.00197, 0.00768, 0.00196, 0.0459, 270, 559, 188, 200, 476, 98},
    {Opening::particles, true, 1.00, 0.0108, 0.00324, 0.011, 0.00312, 0.0692, 219, 479, 162, 161, 411, 83},
    {Opening::particles, true, 1.20, 0.0249, 0.00682, 0.0244, 0.00716, 0.117, 139, 372, 117, 96, 323, 59},
};

// The calibrated error a choice must stay within, at each row of one
// configuration (theta ascending): the largest over the distributions
// calibrated for `measure`, made non-decreasing in theta (measured errors
// wiggle a little): never a larger theta for a smaller error.
std::vector<double> envelope(std::span<const CalibrationPoint> rows, ErrorMeasure measure) {
  std::vector<double> result;
  double previous = 0;
  for (const CalibrationPoint& p : rows) {
    previous = std::max(previous, measure == ErrorMeasure::per_particle
                                      ? std::max(p.uniform_error, p.plummer_error)
                                      : std::max({p.uniform_rms, p.plummer_rms, p.ring_rms}));
    result.push_back(previous);
  }
  return result;
}

}  // namespace

std::span<const CalibrationPoint> accuracy_calibration() noexcept { return calibration; }

AccuracyChoice choose_accuracy(double target, ErrorMeasure measure) {
  if (!(target > 0) || !std::isfinite(target))
    fail("choose_accuracy", "target error " + std::to_string(target) + " not positive and finite");
  const std::span<const CalibrationPoint> table = accuracy_calibration();
  const auto cost = [](const CalibrationPoint& p) {
    const double weight = p.quadrupole ? quadrupole_cell_weight : 0.0;
    return 0.5 * (p.uniform_cost + weight * p.uniform_cells + p.plummer_cost + weight * p.plummer_cells);
  };
  const double allowed = target / accuracy_safety_margin;  // the calibrated error to stay within
  bool found = false;
  AccuracyChoice best{};
  double smallest = INFINITY;
  for (std::size_t first = 0; first < table.size();) {
    // One configuration: rows [first, end), theta ascending.
    std::size_t end = first + 1;
    while (end < table.size() && table[end].opening == table[first].opening &&
           table[end].quadrupole == table[first].quadrupole)
      ++end;
    const std::vector<double> errors = envelope(table.subspan(first, end - first), measure);
    smallest = std::min(smallest, errors.front());
    std::size_t last_ok = end;  // the largest row within the allowed error
    for (std::size_t k = first; k < end; ++k)
      if (errors[k - first] <= allowed) last_ok = k;
    if (last_ok != end) {
      const CalibrationPoint& p = table[last_ok];
      const double e0 = errors[last_ok - first];
      AccuracyChoice choice{p.theta, p.opening, p.quadrupole, e0, cost(p)};
      if (last_ok + 1 < end) {
        // Log-log interpolation towards the next angle, up to the allowed error.
        const CalibrationPoint& q = table[last_ok + 1];
        const double e1 = errors[last_ok + 1 - first];
        if (e1 > e0) {
          const double t = std::log(allowed / e0) / std::log(e1 / e0);
          choice.theta = std::exp(std::log(p.theta) + t * (std::log(q.theta) - std::log(p.theta)));
          choice.predicted_error = allowed;
          choice.predicted_cost = std::exp(std::log(cost(p)) + t * (std::log(cost(q)) - std::log(cost(p))));
        }
      }
      if (!found || choice.predicted_cost < best.predicted_cost) best = choice;
      found = true;
    }
    first = end;
  }
  if (!found)
    fail("choose_accuracy", "target error " + std::to_string(target) + " (" + std::string(to_string(measure)) +
                                ") below the calibrated range: the smallest calibrated error is " +
                                std::to_string(smallest) + ", times the safety margin " +
                                std::to_string(accuracy_safety_margin));
  return best;
}

double rescaled_theta(Opening opening, bool quadrupole, ErrorMeasure measure, double theta, double measured,
                      double goal) {
  // The configuration's rows (the table is sorted by configuration) and
  // their envelope, in logs.
  const std::span<const CalibrationPoint> table = accuracy_calibration();
  const auto in = [&](const CalibrationPoint& p) { return p.opening == opening && p.quadrupole == quadrupole; };
  const auto first = std::find_if(table.begin(), table.end(), in);
  const std::span<const CalibrationPoint> configuration(first, std::find_if_not(first, table.end(), in));
  if (configuration.empty()) fail("rescaled_theta", "no calibration of this opening test and moment order");
  const std::vector<double> errors = envelope(configuration, measure);
  std::vector<std::array<double, 2>> rows;  // log theta, log error
  for (std::size_t k = 0; k < configuration.size(); ++k)
    rows.push_back({std::log(configuration[k].theta), std::log(errors[k])});
  if (!(measured > 0) || !(goal > 0)) return std::exp(goal > 0 ? rows.back()[0] : rows.front()[0]);
  // The envelope at log theta t, interpolated (clamped to the table's ends).
  const auto error_at = [&](double t) {
    if (t <= rows.front()[0]) return rows.front()[1];
    for (std::size_t k = 1; k < rows.size(); ++k)
      if (t <= rows[k][0]) {
        const double w = (t - rows[k - 1][0]) / (rows[k][0] - rows[k - 1][0]);
        return rows[k - 1][1] + w * (rows[k][1] - rows[k - 1][1]);
      }
    return rows.back()[1];
  };
  // The input's curve is the envelope shifted through (theta, measured):
  // find the largest angle whose envelope is at most `wanted`.
  const double wanted = error_at(std::log(theta)) + std::log(goal / measured);
  if (wanted < rows.front()[1]) return std::exp(rows.front()[0]);
  for (std::size_t k = rows.size() - 1; k > 0; --k)
    if (wanted >= rows[k - 1][1]) {
      if (wanted >= rows[k][1]) return std::exp(rows[k][0]);
      const double w = (wanted - rows[k - 1][1]) / (rows[k][1] - rows[k - 1][1]);
      return std::exp(rows[k - 1][0] + w * (rows[k][0] - rows[k - 1][0]));
    }
  return std::exp(rows.front()[0]);
}

SampledForceError sampled_force_error(const Comm& comm, std::span<const Point> positions,
                                      std::span<const double> masses, std::span<const Point> accelerations,
                                      std::size_t samples, double softening, int threads) {
  // Every rank agrees on validity before any data moves.
  const bool bad = masses.size() != positions.size() || accelerations.size() != positions.size();
  if (comm.allreduce(bad ? 1 : 0, MPI_MAX))
    fail("sampled_force_error", bad ? "positions (" + std::to_string(positions.size()) + "), masses (" +
                                          std::to_string(masses.size()) + ") and accelerations (" +
                                          std::to_string(accelerations.size()) + ") differ in length"
                                    : std::string("invalid input on another rank"));
  const std::vector<std::size_t> counts = comm.allgather(positions.size());
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  const std::size_t offset =
      std::accumulate(counts.begin(), counts.begin() + comm.rank(), std::size_t{0});  // of this rank's first particle
  const std::size_t stride = std::max<std::size_t>(1, total / std::max<std::size_t>(1, samples));
  // This rank's samples (position, tree acceleration), then everyone's.
  std::vector<std::array<Point, 2>> mine;
  for (std::size_t i = (stride - offset % stride) % stride; i < positions.size(); i += stride)
    mine.push_back({positions[i], accelerations[i]});
  const std::vector<std::array<Point, 2>> all = comm.allgatherv(std::span<const std::array<Point, 2>>(mine));
  if (all.empty()) return {};
  // The pulls of this rank's particles on every sample: a sample per SIMD
  // lane, blocks of lanes over the threads, each sample's sum over the
  // particles in index order (the same whatever the thread count).
  const std::size_t n = all.size(), lanes = tree_detail::list_slack();
  const std::size_t padded = (n + lanes - 1) / lanes * lanes, blocks = padded / lanes;
  std::vector<double> sample_xyz(3 * padded), pull(3 * padded);  // x..., y..., z...
  for (std::size_t s = 0; s < padded; ++s)
    for (int axis = 0; axis < 3; ++axis) sample_xyz[axis * padded + s] = all[std::min(s, n - 1)][0][axis];
  const double eps2 = softening * softening;
  const double* xyz = positions.empty() ? nullptr : positions.front().data();
  const int team = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t s = b * lanes;
    tree_detail::direct_sum_fp64(&sample_xyz[s], &sample_xyz[padded + s], &sample_xyz[2 * padded + s], lanes, xyz,
                                 masses.data(), positions.size(), eps2, &pull[s], &pull[padded + s],
                                 &pull[2 * padded + s]);
  }
  comm.allreduce_in_place(std::span<double>(pull), MPI_SUM);
  std::vector<double> error2(n), exact2(n);
  double mean_exact2 = 0;
  for (std::size_t s = 0; s < n; ++s) {
    const Point& a = all[s][1];
    const double ex = pull[s], ey = pull[padded + s], ez = pull[2 * padded + s];
    const double d0 = a[0] - ex, d1 = a[1] - ey, d2 = a[2] - ez;
    error2[s] = d0 * d0 + d1 * d1 + d2 * d2;
    exact2[s] = ex * ex + ey * ey + ez * ez;
    mean_exact2 += exact2[s] / static_cast<double>(n);
  }
  std::vector<double> per_particle(n), by_rms(n);
  // No force to compare with: an error of 0 if none, else infinite (also
  // for a force that is not a number).
  const auto ratio = [](double e2, double a2) {
    const double r = a2 > 0 ? std::sqrt(e2 / a2) : e2 > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    return std::isnan(r) ? std::numeric_limits<double>::infinity() : r;
  };
  for (std::size_t s = 0; s < n; ++s) {
    per_particle[s] = ratio(error2[s], exact2[s]);
    by_rms[s] = ratio(error2[s], mean_exact2);
  }
  const auto quantiles = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return std::array<double, 2>{v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 99 / 100)]};
  };
  const auto [median, p99] = quantiles(per_particle);
  const auto [rms_median, rms_p99] = quantiles(by_rms);
  // The same on every rank, bit for bit (MPI only recommends that an
  // allreduce give every rank the same sums): callers branch on these.
  std::array<double, 4> result{median, p99, rms_median, rms_p99};
  comm.allreduce_in_place(std::span<double>(result), MPI_MAX);
  return {result[0], result[1], result[2], result[3], n};
}

}  // namespace domex

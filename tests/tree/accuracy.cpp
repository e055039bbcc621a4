// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/comm.hpp>
#include <domex/tree/accuracy.hpp>
#include <domex/tree/tree.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

TEST(Accuracy, NamesRoundTrip) {
  for (auto measure : {domex::ErrorMeasure::per_particle, domex::ErrorMeasure::rms})
    EXPECT_EQ(domex::error_measure_from_string(domex::to_string(measure)), measure);
  EXPECT_THROW(domex::error_measure_from_string("p99"), domex::Error);
}

TEST(Accuracy, TableIsSortedAndMeasured) {
  const auto table = domex::accuracy_calibration();
  ASSERT_GE(table.size(), 8u);
  for (std::size_t k = 0; k < table.size(); ++k) {
    const auto& p = table[k];
    EXPECT_GT(p.theta, 0);
    for (double v : {p.uniform_error, p.plummer_error, p.uniform_rms, p.plummer_rms, p.ring_rms})
      EXPECT_TRUE(v > 0 && v < 1) << k;
    for (double v : {p.uniform_cost, p.plummer_cost, p.ring_cost}) EXPECT_GT(v, 0) << k;
    if (k > 0 && table[k - 1].opening == p.opening && table[k - 1].quadrupole == p.quadrupole) {
      EXPECT_GT(p.theta, table[k - 1].theta) << k;
      EXPECT_LT(p.uniform_cost, table[k - 1].uniform_cost) << k;  // a larger angle opens fewer cells
    }
  }
}

// The choice meets the target with the margin, never extrapolates, and a
// looser target never costs more.
TEST(Accuracy, ChoiceMeetsTheTargetAndLooserTargetsCostLess) {
  for (auto measure : {domex::ErrorMeasure::per_particle, domex::ErrorMeasure::rms}) {
    double previous_cost = INFINITY;
    for (double target = 1e-5; target < 0.2; target *= 1.5) {
      domex::AccuracyChoice choice{};
      try {
        choice = domex::choose_accuracy(target, measure);
      } catch (const domex::Error&) {
        continue;  // below the calibrated range
      }
      EXPECT_LE(choice.predicted_error * domex::accuracy_safety_margin, target * (1 + 1e-12));
      EXPECT_LE(choice.predicted_cost, previous_cost * (1 + 1e-12)) << target;
      previous_cost = choice.predicted_cost;
      double low = INFINITY, high = 0;
      for (const auto& p : domex::accuracy_calibration())
        if (p.opening == choice.opening && p.quadrupole == choice.quadrupole)
          low = std::min(low, p.theta), high = std::max(high, p.theta);
      EXPECT_GE(choice.theta, low);
      EXPECT_LE(choice.theta, high);
      std::printf("%s %.3g: theta %.3f %s %s, cost %.0f monopole interactions/particle\n", std::string(to_string(measure)).c_str(),
                  target, choice.theta, std::string(to_string(choice.opening)).c_str(),
                  choice.quadrupole ? "quadrupole" : "monopole", choice.predicted_cost);
    }
  }
  EXPECT_THROW(domex::choose_accuracy(0, domex::ErrorMeasure::rms), domex::Error);
  EXPECT_THROW(domex::choose_accuracy(NAN, domex::ErrorMeasure::rms), domex::Error);
  EXPECT_THROW(domex::choose_accuracy(1e-12, domex::ErrorMeasure::per_particle), domex::Error);
}

// The calibrated curve shifted through a measurement: the measured angle for
// the measured error, larger angles for larger goals, clamped to the table.
TEST(Accuracy, RescaledThetaFollowsTheCalibratedCurve) {
  for (auto measure : {domex::ErrorMeasure::per_particle, domex::ErrorMeasure::rms})
    for (auto opening : {domex::Opening::cell, domex::Opening::particles})
      for (bool quadrupole : {false, true})
        for (double theta : {0.25, 0.5, 0.77, 1.1}) {
          const auto rescaled = [&](double measured, double goal) {
            return domex::rescaled_theta(opening, quadrupole, measure, theta, measured, goal);
          };
          EXPECT_NEAR(rescaled(1e-3, 1e-3), theta, 1e-9 * theta);
          double previous = 0;
          for (double goal = 1e-6; goal < 1; goal *= 2) {
            const double next = rescaled(1e-3, goal);
            EXPECT_GE(next, previous) << goal;
            EXPECT_GE(next, 0.2 * (1 - 1e-12));
            EXPECT_LE(next, 1.2 * (1 + 1e-12));
            previous = next;
          }
          EXPECT_LT(rescaled(1e-3, 0.9e-3), theta);  // a smaller error needs a smaller angle
          EXPECT_GT(rescaled(1e-3, 1.1e-3), theta);
          EXPECT_NEAR(rescaled(1e-3, 1e-9), 0.2, 1e-12);  // clamped
          EXPECT_NEAR(rescaled(1e-3, 1e3), 1.2, 1e-12);
        }
}

using domex::Point;

// sampled_force_error: exact forces give ~0, zero forces a per-particle error
// of 1; the result does not depend on the threads nor on which ranks hold the
// particles' samples, and is the same on every rank.
TEST(Accuracy, SampledForceErrorAgainstKnownForces) {
  domex::Comm comm(MPI_COMM_WORLD);
  const std::size_t n = 3000;
  const double softening = 1.0 / 32;
  // Particle i on rank i % size, uniform in the unit cube.
  std::mt19937_64 random(103);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Point> x;
  std::vector<double> m;
  for (std::size_t i = 0; i < n; ++i) {
    const Point p{u(random), u(random), u(random)};
    if (i % static_cast<std::size_t>(comm.size()) != static_cast<std::size_t>(comm.rank())) continue;
    x.push_back(p);
    m.push_back(1.0 / static_cast<double>(n));
  }
  domex::TreeForce tree(comm, {.theta = 0, .softening = softening, .fp64_accumulation = true});
  domex::Profile profile;
  std::vector<Point> exact(x.size());
  tree.compute(x, m, exact, profile);
  const auto close = domex::sampled_force_error(comm, x, m, exact, 100, softening, 1);
  EXPECT_EQ(close.samples, 100u);  // every 30th of 3000
  EXPECT_LT(close.median, 1e-5);
  EXPECT_LT(close.rms_p99, 1e-4);
  const auto two = domex::sampled_force_error(comm, x, m, exact, 100, softening, 2);
  EXPECT_EQ(two.median, close.median);
  EXPECT_EQ(two.rms_median, close.rms_median);
  EXPECT_EQ(comm.allreduce(close.median, MPI_MAX), close.median);
  EXPECT_EQ(comm.allreduce(close.median, MPI_MIN), close.median);
  const std::vector<Point> zero(x.size(), Point{0, 0, 0});
  const auto none = domex::sampled_force_error(comm, x, m, zero, 100, softening);
  EXPECT_DOUBLE_EQ(none.median, 1.0);
  EXPECT_DOUBLE_EQ(none.p99, 1.0);
  // A force that is not a number counts as an infinite error.
  std::vector<Point> broken = exact;
  for (auto& a : broken) a[0] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(domex::sampled_force_error(comm, x, m, broken, 100, softening).median,
            std::numeric_limits<double>::infinity());
  // Every particle on rank 0: the same number of samples, still ~0.
  const auto all_x = comm.allgatherv(std::span<const Point>(x));
  const auto all_m = comm.allgatherv(std::span<const double>(m));
  const auto all_a = comm.allgatherv(std::span<const Point>(exact));
  const bool root = comm.rank() == 0;
  const auto gathered = domex::sampled_force_error(comm, root ? std::span<const Point>(all_x) : std::span<const Point>{},
                                                   root ? std::span<const double>(all_m) : std::span<const double>{},
                                                   root ? std::span<const Point>(all_a) : std::span<const Point>{},
                                                   100, softening);
  EXPECT_EQ(gathered.samples, 100u);
  EXPECT_LT(gathered.median, 1e-5);
  // No particles anywhere: no samples. Spans of different lengths on one
  // rank: an error on every rank.
  EXPECT_EQ(domex::sampled_force_error(comm, {}, {}, {}, 100, softening).samples, 0u);
  const std::vector<double> short_m(root ? m.size() - 1 : m.size());
  EXPECT_THROW(domex::sampled_force_error(comm, x, short_m, exact, 100, softening), domex::Error);
}

}  // namespace

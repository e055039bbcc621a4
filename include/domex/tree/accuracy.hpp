// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Accuracy on request: the opening angle, opening test and moment order that
// reach a requested force error at the least work, from a calibration table
// measured with `domex-bench tree` (docs/tree_accuracy.md has the table, and
// the checks on inputs it was not measured on). The table (src/tree/
// accuracy.cpp): for D in uniform, plummer, ring, O in cell, particles,
// monopoles and quadrupoles,
//
//   scripts/run -n 1 build/release/bench/domex-bench tree --particles 100000 --distribution D --opening O
//       [--quadrupole] --thetas 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0 1.2 --steps 1 --threads 1 --json D-O.json
//
// (seed 2024, softening 1/32, leaf 8, group 64; medians over 2000 targets
// against an fp64 direct sum). For example, cell test, monopoles, uniform:
// theta 0.5 -> 5.8e-4 per particle at 1590 interactions per particle, theta
// 0.9 -> 3.2e-3 at 489; Plummer at theta 0.5: 3.1e-4 at 3223.
//
//   domex::TreeForce tree(comm, {.softening = 1.0 / 32, .target_error = 4.8e-3});
//   tree.options().theta;   // the theta chosen

#include <domex/decompose/box.hpp>

#include <cstddef>
#include <span>
#include <string_view>

namespace domex {

class Comm;
enum class Opening;

/// How a force error is measured: over sampled targets i against an exact
/// fp64 direct sum a_i (same softening), the median of
enum class ErrorMeasure {
  per_particle,  ///< |da_i| / |a_i| (FDPS's figures; meaningless where forces nearly cancel, as in a ring)
  rms,           ///< |da_i| / rms_j |a_j| (normalised by the root mean square force of the samples)
};

/// "per_particle", "rms".
std::string_view to_string(ErrorMeasure measure) noexcept;
/// Inverse of to_string(); throws domex::Error naming the valid names.
ErrorMeasure error_measure_from_string(std::string_view name);

/// One calibrated configuration at one opening angle: median errors and
/// interactions per particle (TreeStats::interactions_per_particle) measured
/// on 1e5 particles at np 1 (softening 1/32, leaf 8, group 64, cell test
/// length cell_edge_factor x the edge). Ring: rms measure only.
struct CalibrationPoint {
  Opening opening;
  bool quadrupole;
  double theta;
  double uniform_error, plummer_error;                // per particle
  double uniform_rms, plummer_rms, ring_rms;          // by rms |a|
  double uniform_cost, plummer_cost, ring_cost;       // interactions per particle
  double uniform_cells, plummer_cells, ring_cells;    // of which with cells (and LET pseudo-particles)
};

/// The table choose_accuracy() reads (sorted by configuration, then theta).
std::span<const CalibrationPoint> accuracy_calibration() noexcept;

/// The choice for a target: what TreeForce uses, and what the table predicts.
struct AccuracyChoice {
  double theta;
  Opening opening;
  bool quadrupole;
  double predicted_error;  ///< the calibrated error envelope at theta (before the margin)
  double predicted_cost;   ///< interactions per particle (quadrupole cells weighted), mean of uniform and Plummer
};

/// A quadrupole cell interaction costs 1 + this many monopole interactions
/// (its monopole and quadrupole terms in one fp32 kernel). Measured inside
/// the step (docs/tree_accuracy.md): 1e6 Plummer particles, np 1, theta 0.7,
/// AMD Zen 3 (AVX2): the kernel phase took 0.44-0.47 ns per interaction with
/// monopoles and 1.0-1.2 ns more per cell interaction with quadrupoles:
/// 2.3-2.6. Taken as 3: at 2.5 the table chose quadrupoles at theta 0.67 for
/// Plummer's 4.7e-4, 5-20 % slower per step than monopoles at theta 0.52.
inline constexpr double quadrupole_cell_weight = 3.0;

/// Calibrated errors are multiplied by this before they are compared with a
/// target: room for inputs, particle counts and rank counts that were not
/// calibrated (see docs/tree_accuracy.md for the margins measured).
inline constexpr double accuracy_safety_margin = 1.5;

/// The configuration whose calibrated error envelope (the largest over the
/// calibrated distributions: uniform and Plummer for per_particle, also the
/// ring for rms), times accuracy_safety_margin, is at most `target` at the
/// least cost: for each opening test and moment order, the largest theta
/// (log-log interpolation between the table's angles, never beyond them)
/// that meets the target, then the cheapest of those. Cost: interactions per
/// particle (mean of uniform and Plummer), a quadrupole cell counted
/// 1 + quadrupole_cell_weight times. Throws domex::Error if
/// target is not positive and finite or below what the table reaches.
AccuracyChoice choose_accuracy(double target, ErrorMeasure measure);

/// The opening angle at which a configuration's calibrated error envelope
/// (as in choose_accuracy), scaled so that it passes through `measured` at
/// `theta`, equals `goal`: how far to move theta for an input whose error
/// was measured at `theta` (log-log interpolation, clamped to the table's
/// angles, 0.2..1.2). Throws domex::Error for a configuration not in the table.
double rescaled_theta(Opening opening, bool quadrupole, ErrorMeasure measure, double theta, double measured,
                      double goal);

/// Force errors at sampled targets (see ErrorMeasure): medians and 99th
/// percentiles over the samples, the same on every rank.
struct SampledForceError {
  double median = 0, p99 = 0;          ///< per particle
  double rms_median = 0, rms_p99 = 0;  ///< by rms |a|
  std::size_t samples = 0;             ///< targets checked, all ranks
  [[nodiscard]] double median_of(ErrorMeasure measure) const noexcept {
    return measure == ErrorMeasure::per_particle ? median : rms_median;
  }
};

/// Collective. The errors of `accelerations` (of the particles at
/// `positions` with `masses`, distributed over the ranks of `comm`) at every
/// max(1, N / samples)-th particle in the ranks' order (rank, then index),
/// N the total count, against an fp64 direct sum with Plummer softening
/// over every rank's particles (G = 1; a particle at a target's own position
/// adds nothing). Each rank sums its own particles' pulls on all samples,
/// then one allreduce: O(samples x local particles) work per rank on
/// `threads` OpenMP threads (0: OpenMP's default), O(samples) memory. The
/// result is the same on every rank and does not depend on the thread count;
/// a sample whose force is not a number counts as an infinite error. Zero
/// samples when N is 0. Spans of different lengths on any rank: domex::Error
/// on every rank.
SampledForceError sampled_force_error(const Comm& comm, std::span<const Point> positions,
                                      std::span<const double> masses, std::span<const Point> accelerations,
                                      std::size_t samples, double softening, int threads = 0);

}  // namespace domex

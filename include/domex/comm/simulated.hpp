// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex::simulated::Work: a rank's computation charged from a fitted cost
// model when domex runs under SimGrid SMPI (sim/README.md, "Computation from
// a fitted model").

#include <string_view>

namespace domex::simulated {

/// One stretch of a rank's computation, named by its phase ("tree: local
/// build", "decompose: cuts from samples", ...). Construct it where the
/// computation starts and call done(units) where it ends, with the work it
/// did in the phase's unit (particles, samples, interactions):
///  - a native run with `DOMEX_SIM_RECORD=prefix` appends a line of
///    seconds, units and phase (tab-separated) to the file `prefix.rank`
///    (the world rank): the input of sim/fit.py, which fits
///    seconds = fixed + per_unit x units;
///  - under SMPI with `DOMEX_SIM_MODEL=file` (sim/fit.py's output), done()
///    charges the simulated time the model gives for `units`, times
///    DOMEX_SIM_MODEL_FACTOR (default 1), with smpi_execute. The time the
///    computation took on the host is not charged (run with
///    smpi/simulate-computation:no), so the simulated time is deterministic.
///    A phase the file does not name is charged 0, with one warning;
///  - anywhere else, nothing but a load and a branch.
/// The settings are read once per process, at the first Work. Construct and
/// finish a Work outside parallel regions.
class Work {
 public:
  explicit Work(std::string_view phase) noexcept;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  /// The work is done: records or charges it (once; later calls do nothing).
  void done(double units) noexcept;

 private:
  std::string_view phase_;
  double start_ = 0;  ///< steady-clock seconds at construction, when recording
  bool finished_ = false;
};

}  // namespace domex::simulated

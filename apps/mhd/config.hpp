// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-mhd configuration: every command-line / config-file value, and the
// check that runs before anything is computed or written.

#include <array>
#include <domex/comm/comm.hpp>
#include <string>

namespace domex::mhd {

enum class Problem {
  /// Solar wind from x-min onto a dipole planet at the origin; outflow elsewhere.
  magnetosphere,
  /// Smooth perturbation in a fully periodic box: no planet, gravity or sources.
  periodic_wave,
};

/// Parses "magnetosphere" or "periodic-wave"; throws domex::Error naming the bad value.
[[nodiscard]] Problem parse_problem(const std::string& name);
/// The command-line name of a problem.
[[nodiscard]] const char* to_string(Problem problem) noexcept;

/// Units: planet radius 1, solar-wind density and speed 1; B in units where
/// the magnetic pressure is B^2 / 2.
struct Config {
  // -- run -------------------------------------------------------------------
  std::array<long, 3> cells{64, 48, 48};  ///< global cells per axis
  long steps = 200;
  int depth = 2;                          ///< ghost layers k = steps between exchanges; 0: domex::choose_depth
  std::array<int, 3> dims{0, 0, 0};       ///< ranks per axis, 0 = automatic
  std::string problem = "magnetosphere";  ///< "magnetosphere" or "periodic-wave"
  std::string output = "results/mhd";     ///< output folder; empty: write nothing
  long image_every = 20;                  ///< slice PNG every N steps and at the end; 0: none
  long snapshot_every = 100;              ///< VTK snapshot every N steps and at the end; 0: none
  std::string snapshot_format = "vtk";    ///< "vtk" (legacy VTK, no dependency) or "hdf5" (+ XDMF sidecar)
  long checkpoint_every = 0;              ///< checkpoint every N steps and at the end; 0: none
  std::string restart;                    ///< checkpoint to restart from ("": start at step 0)
  // -- box: x in [x_min, x_max], y and z in [-half_width, half_width] -------
  double x_min = -24, x_max = 40, half_width = 24;
  // -- solar wind (inflow at x_min) ----------------------------------------
  double rho_sw = 1, v_sw = 1, p_sw = 0.05, bz_imf = -0.1;
  // -- planet -----------------------------------------------------------------
  double dipole = 150;  ///< dipole moment (along -z, Earth-like): B = M / r^3 at the equator
  double gm = 0.5;      ///< G * planet mass
  double r_inner = 3;   ///< inner boundary: cells closer are reset every step
  double rho_inner = 5, p_inner = 0.05;
  // -- numerics ---------------------------------------------------------------
  double gamma = 5.0 / 3.0;
  double cfl = 0.3;  ///< dt = cfl * h / max(|v| + c_fast) of the initial state (once)
  double dt = 0;     ///< fixed dt; 0: from cfl
  /// Diffusion (artificial, for stability of Lax-Wendroff at shocks):
  /// density, viscosity, pressure, resistivity.
  double d_rho = 0.15, nu = 0.3, d_p = 0.2, eta = 0.15;
};

/// Checks `config` for a run on `comm`; throws domex::Error naming the first
/// bad value (e.g. "--depth 5: a rank owns only 4 cells along y; need depth <= 4").
/// Writes nothing. Collective over `comm` (every rank reaches the same verdict).
void validate(const Config& config, const Comm& comm);

}  // namespace domex::mhd

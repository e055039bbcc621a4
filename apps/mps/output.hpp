// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-mps outputs: the front Z(T) against Martin & Moyce's table, the
// picture of the flow, order statistics for the phase table.

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "image.hpp"
#include "solver.hpp"

namespace domex::mps {

/// Martin & Moyce (1952), column twice as high as wide (n^2 = 2): the times
/// T = t sqrt(2 g / a) at which the surge front passed Z = x / a (quarter-inch
/// marks, 1 + k 0.25 / 2.25). The table quoted by issue 25 and
/// shared/ANCHORS.md (public copy: Ocellaris scripts/plot_dam_break.py).
inline constexpr std::array<double, 13> martin_moyce_T = {0.41, 0.84, 1.19, 1.43, 1.63, 1.83, 1.98,
                                                          2.20, 2.32, 2.51, 2.65, 2.83, 2.98};
inline constexpr std::array<double, 13> martin_moyce_Z = {1.11, 1.22, 1.44, 1.67, 1.89, 2.11, 2.33,
                                                          2.56, 2.78, 3.00, 3.22, 3.44, 3.67};

/// One row of the comparison: the simulated front at a tabulated T (linear
/// interpolation between steps), unshifted and with the simulated T shifted
/// by +0.175 (the experiment's gate delay); NaN where the run does not reach.
struct FrontRow {
  double T, Z_experiment, Z, deviation, Z_shifted, deviation_shifted;
};
/// `series`: (T, Z) per step, T ascending.
[[nodiscard]] std::vector<FrontRow> compare_front(const std::vector<std::array<double, 2>>& series);

/// Z(T) of the run (a line, also shifted by +0.175 in T) and Martin &
/// Moyce's points, rasterised into a picture (apps/common/image.hpp draws
/// fields): background 0, the simulated front 0.6, shifted 0.35, the
/// experiment 1 (3 x 3 cells).
[[nodiscard]] apps::Picture front_picture(const std::vector<std::array<double, 2>>& series, const std::string& title);

/// Collective: the particles rasterised onto an l0 grid (fluid coloured by
/// p / (rho g 2a), walls grey, air dark); only rank 0's picture is drawn.
[[nodiscard]] apps::Picture flow_picture(const Solver& solver);

/// Collective: the owned particles of every rank (position, velocity,
/// pressure, kind, id) as config().snapshot_format says: legacy VTK or
/// parallel HDF5 + XDMF (apps/common/particles.hpp).
void write_snapshot(const Solver& solver, const std::filesystem::path& path);

/// min, lower quartile, median, upper quartile, max (nearest rank) of `values`.
[[nodiscard]] std::array<double, 5> quartiles(std::vector<double> values);

}  // namespace domex::mps

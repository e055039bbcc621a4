// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-mps outputs: the front Z(T) against Martin & Moyce's table, the
// picture of the flow, order statistics for the phase table.

#include <array>
#include <cstdint>
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
/// by +0.175 (the experiment's gate delay); NaN where the run does not
/// reach. A deviation is NaN also from the impact on the far wall on (the Z
/// there is the wall's, not the flow's).
struct FrontRow {
  double T, Z_experiment, Z, deviation, Z_shifted, deviation_shifted;
};
/// The comparison and where it stops: the front reached the far wall (Z >=
/// impact_Z) first at T = impact_T (NaN: not in this run).
struct FrontComparison {
  std::vector<FrontRow> rows;
  double impact_Z = 0, impact_T = 0;
};
/// Z at which the front has reached the far wall: within 1.5 l0 of the
/// wall's first particle layer (at x = 4a + l0), i.e. less than half a
/// spacing from touching it: 4 - 0.5 / resolution.
[[nodiscard]] double far_wall_front(const Config& config);
/// `series`: (T, Z) per step, T ascending.
[[nodiscard]] FrontComparison compare_front(const std::vector<std::array<double, 2>>& series, double impact_Z);

/// front.csv: a row per step of `series` (step first_step + k) and a row per
/// tabulated T the run reached (step empty, Z interpolated), by T; columns
/// step, T, Z, Z_experiment, deviation, deviation_shifted_0.175 (fractions;
/// empty but at the tabulated T before the impact), at_far_wall (0, or 1
/// from the impact on).
[[nodiscard]] std::string front_csv(const std::vector<std::array<double, 2>>& series, long first_step,
                                    const FrontComparison& comparison);

/// The picture of Z(T): the run (a thick line), the run shifted by +0.175
/// in T (the experiment's gate delay), Martin & Moyce's points and the far
/// wall's Z, on white, with a legend naming them (`run_name`: the run's);
/// the plot 640 x 480 pixels, T in [0, 3.2], Z in [0.8, 4.2].
[[nodiscard]] apps::Picture front_picture(const std::vector<std::array<double, 2>>& series, double far_wall_Z,
                                          const std::string& run_name, const std::string& title);

/// Colours drawn off the colour scale (8-bit RGB): the empty tank and air
/// of the flow picture, the run's and the shifted run's lines of front.png.
inline constexpr std::array<std::uint8_t, 3> tank_colour{236, 236, 236}, run_colour{31, 119, 180},
    shifted_colour{230, 120, 20};

/// Pixels per l0 of the flow picture: the smallest whole number >= 2 that
/// makes the plot (the tank, 4a + 8 l0 wide) at least 704 pixels wide.
[[nodiscard]] std::size_t flow_pixels_per_spacing(const Config& config);
/// Collective: the particles as squares of side l0 (fluid coloured by p /
/// (rho g 2a) from 0 to 1, walls and dummies grey), the empty tank and the
/// air light grey (off the colour scale); only rank 0's picture is drawn.
[[nodiscard]] apps::Picture flow_picture(const Solver& solver);

/// Collective: the owned particles of every rank (position, velocity,
/// pressure, kind, id) as config().snapshot_format says: legacy VTK or
/// parallel HDF5 + XDMF (apps/common/particles.hpp).
void write_snapshot(const Solver& solver, const std::filesystem::path& path);

/// min, lower quartile, median, upper quartile, max (nearest rank) of `values`.
[[nodiscard]] std::array<double, 5> quartiles(std::vector<double> values);

}  // namespace domex::mps

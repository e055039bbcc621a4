// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-mhd output: equatorial-slice PNG images (apps/common/image.hpp,
// libpng), legacy VTK snapshots written in parallel with MPI-IO, and the
// helpers that make every write all-or-nothing.

#include <domex/comm/collective.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string_view>
#include <vector>

#include "files.hpp"
#include "image.hpp"
#include "solver.hpp"

namespace domex::mhd {

/// The colour range of a slice panel: the same for every frame of a run, so
/// frames compare by eye (a value beyond it takes the end colour).
struct ColourRange {
  double lo = 0, hi = 1;
  bool log_scale = false;
};

/// The fixed ranges of the slice images, from the configuration alone.
/// magnetosphere (log scale): density [rho_sw / 4, 2 max(4 rho_sw, rho_inner)]
/// (a strong shock compresses at most 4x; the inner boundary holds
/// rho_inner), pressure [p_sw / 4, 2 (p_sw + rho_sw v_sw^2)] (the solar wind's
/// ram pressure bounds the shocked pressure). periodic-wave (linear): density
/// [0.7, 1.3] rho_sw and pressure [0.5, 1.5] p_sw around the +-20 % wave.
[[nodiscard]] std::array<ColourRange, 2> slice_ranges(const Config& config);

/// Collective: the cell layer nearest z = 0 (the plane through the planet),
/// gathered to rank 0 as two panels side by side, density | pressure, each
/// with axes in planet radii, a colour bar over its fixed range
/// (slice_ranges), and the time and step in its title; cells inside the
/// inner boundary are grey. Complete on rank 0, empty on the others.
[[nodiscard]] apps::Picture slice_image(const Solver& solver);

/// Collective: legacy VTK (binary, big-endian float32) STRUCTURED_POINTS file
/// with point data rho, p, v and B = B_dipole + b at the cell centres; every
/// rank writes its block into `path`.part with MPI-IO (one write per run of
/// cells contiguous in the file), and rank 0 renames it to `path` when complete.
void write_vtk(const Solver& solver, const std::filesystem::path& path);

/// Collective: parallel HDF5 snapshot (float64 datasets /rho, /p of NZ x NY x
/// NX and /v, /B of NZ x NY x NX x 3, x fastest, values at the cell centres)
/// written to `path`.part and renamed when complete, then an XDMF sidecar
/// (`path` with .xmf) that ParaView opens. Throws domex::Error on every rank
/// if HDF5 is not built in or a write fails.
void write_hdf5(const Solver& solver, const std::filesystem::path& path);

using domex::apps::write_file;  // all-or-nothing (files.hpp)

}  // namespace domex::mhd

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-mhd checkpoint/restart: the state of every owned cell, in global
// order, so a run restarts on any number of ranks, dims or depth k and goes
// on bitwise as if it had never stopped.
//
// File: a 512-byte header (magic "DXMHDCK1", global cells, steps, dt, the
// problem and the box and physics parameters, native byte order), then the 8
// fields rho, vx, vy, vz, p, bx, by, bz (b = B - B_dipole) as float64 arrays
// of NX x NY x NZ values, x fastest. Written to `path`.part with MPI-IO and
// renamed to `path` when complete (all-or-nothing).

#include <filesystem>

#include "solver.hpp"

namespace domex::mhd {

/// Collective: writes the solver's state to `path` (see above). Throws
/// domex::Error on every rank if the write or the rename fails.
void write_checkpoint(const Solver& solver, const std::filesystem::path& path);

/// Collective: restores the state written by write_checkpoint() into a solver
/// built from the same cells, problem, box and physics (any np, dims,
/// depth). Throws domex::Error on every rank naming the file and what does
/// not match (a missing or short file, another grid, another parameter).
void read_checkpoint(Solver& solver, const std::filesystem::path& path);

}  // namespace domex::mhd

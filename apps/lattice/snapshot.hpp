// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-lattice's field output (--snapshot-format hdf5): the CG solution.

#include <domex/comm/comm.hpp>
#include <domex/halo/lattice.hpp>

#include <filesystem>
#include <vector>

#include "wilson.hpp"

namespace domex::lattice {

/// Collective over `comm`: the solution `x` (owned sites first, as every
/// field of `grid`'s halo) as parallel HDF5: float64 /psi of T x Z x Y x X x
/// 4 x 3 x 2 (spin, colour, re/im; x fastest, as the sites) and /density =
/// |psi|^2 of T x Z Y x X, each rank its block as a hyperslab, written to
/// `path`.part and renamed when complete; then an XDMF sidecar (`path` with
/// .xmf): a temporal collection of one 3-D grid per t (time = t) with the
/// density slice, since XDMF has no 4-D mesh. Throws domex::Error on every
/// rank if HDF5 is not built in or a write fails.
void write_solution_hdf5(const Comm& comm, const LatticeGrid& grid, const std::vector<Spinor>& x,
                         const std::filesystem::path& path);

}  // namespace domex::lattice

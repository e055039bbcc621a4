// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-mhd output: equatorial-slice PNG images (own minimal encoder, no
// zlib), legacy VTK snapshots written in parallel with MPI-IO, and the
// helpers that make every write all-or-nothing.

#include <domex/comm/collective.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string_view>
#include <vector>

#include "files.hpp"
#include "solver.hpp"

namespace domex::mhd {

/// 8-bit RGB image, rows top to bottom.
struct Image {
  std::size_t width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  ///< 3 * width * height bytes
};

/// The bytes of a PNG file of `image`: deflate "stored" (uncompressed)
/// blocks in a zlib stream, CRC-32 per chunk, Adler-32 of the raw rows.
[[nodiscard]] std::vector<std::uint8_t> encode_png(const Image& image);

/// Collective: the cell layer nearest z = 0 (the plane through the planet),
/// gathered to rank 0 as two panels, log10 density | log10 pressure, each
/// with its own colour scale. Complete on rank 0, empty on the others.
[[nodiscard]] Image slice_image(const Solver& solver);

/// Collective: legacy VTK (binary, big-endian float32) STRUCTURED_POINTS file
/// with point data rho, p, v and B = B_dipole + b at the cell centres; every
/// rank writes its block into `path`.part with MPI-IO (one write per run of
/// cells contiguous in the file), and rank 0 renames it to `path` when complete.
void write_vtk(const Solver& solver, const std::filesystem::path& path);

/// Whether this domex-mhd was built with parallel HDF5 (--snapshot-format hdf5).
[[nodiscard]] bool hdf5_available() noexcept;
/// Collective: parallel HDF5 snapshot (float64 datasets /rho, /p of NZ x NY x
/// NX and /v, /B of NZ x NY x NX x 3, x fastest, values at the cell centres)
/// written to `path`.part and renamed when complete, then an XDMF sidecar
/// (`path` with .xmf) that ParaView opens. Throws domex::Error on every rank
/// if HDF5 is not built in or a write fails.
void write_hdf5(const Solver& solver, const std::filesystem::path& path);

using domex::apps::write_file;  // all-or-nothing (files.hpp)

}  // namespace domex::mhd

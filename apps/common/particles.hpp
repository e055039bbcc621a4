// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Particle snapshots the applications share (domex-ring, domex-mps): every
// rank writes its own particles, one run of rows in rank order, into one
// file: legacy VTK (binary, vertices) or parallel HDF5 with an XDMF sidecar.
// Both appear complete or not at all (written as `path`.part, renamed).

#include <domex/comm/comm.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace domex::apps {

/// One per-particle field of a snapshot: `values` holds components x (this
/// rank's particle count) doubles, particle by particle; components is 1
/// (a scalar) or 3 (a vector).
struct ParticleField {
  std::string name;
  int components = 1;
  std::span<const double> values;
};

/// This rank's particles as a snapshot sees them: positions, ids (written as
/// a uint64 dataset in HDF5, a double scalar in VTK) and any further fields.
struct ParticleSnapshot {
  std::string title;  ///< the VTK header line / the XDMF grid's name
  double time = 0;    ///< the XDMF grid's time
  std::span<const std::array<double, 3>> position;
  std::span<const std::uint64_t> id;
  std::span<const ParticleField> fields;
};

/// x, y, z of every vector in turn: a vector field's ParticleField::values.
[[nodiscard]] std::vector<double> components(std::span<const std::array<double, 3>> vectors);

/// Collective over `comm`: writes `snapshot` as legacy VTK (binary,
/// big-endian, an unstructured grid of vertices with POINT_DATA: the fields
/// then "id"). Throws domex::Error on every rank ("<app>: ...") when a field's
/// length does not match the particle count, the total passes legacy VTK's
/// int32 cells, or a write fails.
void write_particles_vtk(const Comm& comm, std::string_view app, const std::filesystem::path& path,
                         const ParticleSnapshot& snapshot);

/// Collective over `comm`: writes `snapshot` as parallel HDF5 (float64
/// /position N x 3, uint64 /id N, a float64 dataset per field: N or N x 3)
/// with an XDMF sidecar (`path` with .xmf: Polyvertex topology) that ParaView
/// opens. Throws domex::Error on every rank when HDF5 is not built in, a
/// field's length is wrong, or a write fails (apps/common/hdf5.hpp).
void write_particles_hdf5(const Comm& comm, std::string_view app, const std::filesystem::path& path,
                          const ParticleSnapshot& snapshot);

}  // namespace domex::apps

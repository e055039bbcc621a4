// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-ring's particle snapshots (--snapshot-format vtk | hdf5), written by
// apps/common/particles.hpp: positions, velocities and ids.

#include <domex/comm/comm.hpp>

#include <filesystem>

#include "ring.hpp"

namespace domex::ring {

/// Collective over `comm` (the ring's communicator): a legacy-VTK
/// unstructured grid of vertices (positions, velocities, ids) written with
/// MPI-IO into one file (ParaView opens it).
void write_vtk(const Comm& comm, const Ring& ring, const std::filesystem::path& path);

/// Collective over `comm` (the ring's communicator): float64 datasets
/// /position and /velocity (N x 3) and uint64 /id (N), each rank's particles
/// one run of rows in rank order (offsets by MPI_Exscan), written to
/// `path`.part and renamed when complete, then an XDMF sidecar (`path` with
/// .xmf: Polyvertex topology, XYZ geometry from /position, node attributes
/// velocity and id) that ParaView opens. Throws domex::Error on every rank if
/// HDF5 is not built in or a write fails (apps/common/hdf5.hpp).
void write_hdf5(const Comm& comm, const Ring& ring, const std::filesystem::path& path);

}  // namespace domex::ring

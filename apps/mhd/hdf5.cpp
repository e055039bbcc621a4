// SPDX-License-Identifier: BSD-3-Clause
// domex-mhd: parallel HDF5 snapshots with an XDMF sidecar (built when a
// parallel HDF5 of the same MPI is found; see CMakeLists.txt).
#include <domex/comm/collective.hpp>
#include <domex/comm/error.hpp>
#include <fmt/format.h>
#include <hdf5.h>
#include <mpi.h>

#include <array>
#include <string>
#include <vector>

#include "output.hpp"

namespace domex::mhd {
namespace {

/// HDF5 calls return a negative value (or id) on failure.
template <class T>
T checked(T value, const char* call, const std::string& path) {
  if (value < 0) fail("write_hdf5", fmt::format("{} failed for {}", call, path));
  return value;
}

/// One float64 dataset of `components` values per cell, (NZ, NY, NX[, c]) in
/// the file (x fastest, as the solver and the VTK file), this rank's block
/// written as one hyperslab with independent MPI-IO: Open MPI 4.1.4's
/// collective path can lose data (see write_vtk).
void write_dataset(hid_t file, const char* name, const Solver& solver, std::size_t components,
                   const std::vector<double>& block, const std::string& path) {
  const auto global = solver.grid().global_cells(), n = solver.grid().local_cells(), o = solver.grid().offset();
  const int rank = components == 1 ? 3 : 4;
  const hsize_t dims[4] = {global[2], global[1], global[0], components};
  const hsize_t start[4] = {o[2], o[1], o[0], 0}, count[4] = {n[2], n[1], n[0], components};
  const hid_t file_space = checked(H5Screate_simple(rank, dims, nullptr), "H5Screate_simple", path);
  const hid_t create = checked(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", path);
  H5Pset_obj_track_times(create, false);  // the same bytes on any np: no timestamps
  const hid_t set = checked(
      H5Dcreate2(file, name, H5T_IEEE_F64LE, file_space, H5P_DEFAULT, create, H5P_DEFAULT), "H5Dcreate2", path);
  const hid_t memory_space = checked(H5Screate_simple(rank, count, nullptr), "H5Screate_simple", path);
  checked(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, count, nullptr), "H5Sselect_hyperslab",
          path);
  const hid_t transfer = checked(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate", path);
  H5Pset_dxpl_mpio(transfer, H5FD_MPIO_INDEPENDENT);
  const herr_t written = H5Dwrite(set, H5T_NATIVE_DOUBLE, memory_space, file_space, transfer, block.data());
  H5Pclose(transfer);
  H5Sclose(memory_space);
  H5Dclose(set);
  H5Pclose(create);
  H5Sclose(file_space);
  checked(written, "H5Dwrite", path);
}

std::string xdmf(const Solver& solver, const std::string& h5_name) {
  const auto global = solver.grid().global_cells();
  const auto h = solver.spacing();
  const std::string dims = fmt::format("{} {} {}", global[2], global[1], global[0]);
  std::string text = fmt::format(
      "<?xml version=\"1.0\" ?>\n"
      "<Xdmf Version=\"3.0\">\n"
      " <Domain>\n"
      "  <Grid Name=\"domex-mhd\" GridType=\"Uniform\">\n"
      "   <Time Value=\"{:.17g}\"/>\n"
      "   <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"{}\"/>\n"
      "   <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
      "    <DataItem Dimensions=\"3\" Format=\"XML\">{:.17g} {:.17g} {:.17g}</DataItem>\n"
      "    <DataItem Dimensions=\"3\" Format=\"XML\">{:.17g} {:.17g} {:.17g}</DataItem>\n"
      "   </Geometry>\n",
      solver.time(), dims, solver.centre(2, 0), solver.centre(1, 0), solver.centre(0, 0), h[2], h[1], h[0]);
  for (const auto& [name, vector] : {std::pair{"rho", false}, {"p", false}, {"v", true}, {"B", true}})
    text += fmt::format(
        "   <Attribute Name=\"{0}\" AttributeType=\"{1}\" Center=\"Node\">\n"
        "    <DataItem Dimensions=\"{2}{3}\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">{4}:/{0}</DataItem>\n"
        "   </Attribute>\n",
        name, vector ? "Vector" : "Scalar", dims, vector ? " 3" : "", h5_name);
  text += "  </Grid>\n </Domain>\n</Xdmf>\n";
  return text;
}

}  // namespace

bool hdf5_available() noexcept { return true; }

void write_hdf5(const Solver& solver, const std::filesystem::path& path) {
  const Comm& comm = solver.grid().comm();
  const auto n = solver.grid().local_cells();
  std::array<std::vector<double>, 4> block;  // rho, p, v, B = B_dipole + b (components interleaved)
  for (long k = 0; k < static_cast<long>(n[2]); ++k)
    for (long j = 0; j < static_cast<long>(n[1]); ++j)
      for (long i = 0; i < static_cast<long>(n[0]); ++i) {
        const std::size_t c = solver.halo().index(i, j, k);
        block[0].push_back(solver.field(field::rho)[c]);
        block[1].push_back(solver.field(field::p)[c]);
        for (std::size_t a = 0; a < 3; ++a) {
          block[2].push_back(solver.field(field::vx + a)[c]);
          block[3].push_back(solver.dipole(static_cast<int>(a))[c] + solver.field(field::bx + a)[c]);
        }
      }
  const std::string part = path.string() + ".part";
  collectively(comm, [&] {
    const hid_t access = checked(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate", part);
    H5Pset_fapl_mpio(access, comm.get(), MPI_INFO_NULL);
    const hid_t file = H5Fcreate(part.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access);
    H5Pclose(access);
    checked(file, "H5Fcreate", part);
    // Every rank creates every dataset (metadata calls are collective in
    // parallel HDF5), so a failure here is a failure on every rank.
    try {
      write_dataset(file, "rho", solver, 1, block[0], part);
      write_dataset(file, "p", solver, 1, block[1], part);
      write_dataset(file, "v", solver, 3, block[2], part);
      write_dataset(file, "B", solver, 3, block[3], part);
    } catch (...) {
      H5Fclose(file);
      throw;
    }
    checked(H5Fclose(file), "H5Fclose", part);
  });
  // The .h5 appears complete, then its sidecar (both renamed from .part by rank 0).
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    std::error_code error;
    std::filesystem::rename(part, path, error);
    if (error) fail("write_hdf5", fmt::format("rename {}: {}", part, error.message()));
    std::filesystem::path sidecar = path;
    sidecar.replace_extension(".xmf");
    write_file(sidecar, xdmf(solver, path.filename().string()));
  });
}

}  // namespace domex::mhd

// SPDX-License-Identifier: BSD-3-Clause
// domex-mhd: parallel HDF5 snapshots with an XDMF sidecar, through the
// applications' shared writer (apps/common/hdf5.hpp).
#include <fmt/format.h>

#include <array>
#include <string>
#include <vector>

#include "hdf5.hpp"
#include "output.hpp"

namespace domex::mhd {

void write_hdf5(const Solver& solver, const std::filesystem::path& path) {
  const auto n = solver.grid().local_cells(), global = solver.grid().global_cells(), o = solver.grid().offset();
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
  // (NZ, NY, NX[, 3]) in the file: x fastest, as the solver and the VTK file.
  const std::vector<std::size_t> scalar{global[2], global[1], global[0]}, vector{global[2], global[1], global[0], 3};
  const std::vector<std::size_t> start{o[2], o[1], o[0]}, start_v{o[2], o[1], o[0], 0};
  const std::vector<std::size_t> count{n[2], n[1], n[0]}, count_v{n[2], n[1], n[0], 3};
  const std::array<const char*, 4> names{"rho", "p", "v", "B"};
  std::vector<apps::hdf5::Dataset> sets;
  for (std::size_t f = 0; f < 4; ++f) {
    const bool is_vector = f >= 2;
    sets.push_back({.name = names[f],
                    .shape = is_vector ? vector : scalar,
                    .start = is_vector ? start_v : start,
                    .count = is_vector ? count_v : count,
                    .values = std::span<const double>(block[f])});
  }

  const std::string h5_name = path.filename().string();
  const auto h = solver.spacing();
  std::string body = fmt::format(
      "   <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"{} {} {}\"/>\n"
      "   <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
      "    <DataItem Dimensions=\"3\" Format=\"XML\">{:.17g} {:.17g} {:.17g}</DataItem>\n"
      "    <DataItem Dimensions=\"3\" Format=\"XML\">{:.17g} {:.17g} {:.17g}</DataItem>\n"
      "   </Geometry>\n",
      global[2], global[1], global[0], solver.centre(2, 0), solver.centre(1, 0), solver.centre(0, 0), h[2], h[1],
      h[0]);
  for (const auto& set : sets) body += apps::hdf5::xdmf_attribute(h5_name, set.name, set.shape, set.shape.size() == 4);
  apps::hdf5::write(solver.grid().comm(), path, sets, apps::hdf5::xdmf_document("domex-mhd", solver.time(), body));
}

}  // namespace domex::mhd

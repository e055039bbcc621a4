// SPDX-License-Identifier: BSD-3-Clause
#include "snapshot.hpp"

#include <fmt/format.h>

#include <array>
#include <complex>
#include <span>
#include <string>

#include "hdf5.hpp"

namespace domex::lattice {

void write_solution_hdf5(const Comm& comm, const LatticeGrid& grid, const std::vector<Spinor>& x,
                         const std::filesystem::path& path) {
  const auto g = grid.global_sites(), n = grid.local_sites(), o = grid.offset();  // (x, y, z, t)
  const std::size_t volume = n[0] * n[1] * n[2] * n[3];
  std::vector<double> psi, density;
  psi.reserve(24 * volume);
  density.reserve(volume);
  for (std::size_t site = 0; site < volume && site < x.size(); ++site) {
    double norm = 0;
    for (const auto& spin : x[site].c)
      for (const std::complex<double>& value : spin) {
        psi.push_back(value.real());
        psi.push_back(value.imag());
        norm += std::norm(value);
      }
    density.push_back(norm);
  }
  const std::vector<std::size_t> shape{g[3], g[2], g[1], g[0]}, start{o[3], o[2], o[1], o[0]},
      count{n[3], n[2], n[1], n[0]};
  const std::array<apps::hdf5::Dataset, 2> sets{
      apps::hdf5::Dataset{.name = "psi",
                          .shape = {g[3], g[2], g[1], g[0], 4, 3, 2},
                          .start = {o[3], o[2], o[1], o[0], 0, 0, 0},
                          .count = {n[3], n[2], n[1], n[0], 4, 3, 2},
                          .values = std::span<const double>(psi)},
      apps::hdf5::Dataset{
          .name = "density", .shape = shape, .start = start, .count = count, .values = std::span<const double>(density)}};

  const std::string h5 = path.filename().string();
  std::string text =
      "<?xml version=\"1.0\" ?>\n"
      "<Xdmf Version=\"3.0\">\n"
      " <Domain>\n"
      "  <Grid Name=\"domex-lattice\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
  for (std::size_t t = 0; t < g[3]; ++t)
    text += fmt::format(
        "   <Grid Name=\"t{0}\" GridType=\"Uniform\">\n"
        "    <Time Value=\"{0}\"/>\n"
        "    <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"{1} {2} {3}\"/>\n"
        "    <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
        "     <DataItem Dimensions=\"3\" Format=\"XML\">0 0 0</DataItem>\n"
        "     <DataItem Dimensions=\"3\" Format=\"XML\">1 1 1</DataItem>\n"
        "    </Geometry>\n"
        "    <Attribute Name=\"density\" AttributeType=\"Scalar\" Center=\"Node\">\n"
        "     <DataItem ItemType=\"HyperSlab\" Dimensions=\"{1} {2} {3}\" Type=\"HyperSlab\">\n"
        "      <DataItem Dimensions=\"3 4\" Format=\"XML\">{0} 0 0 0  1 1 1 1  1 {1} {2} {3}</DataItem>\n"
        "      {4}\n"
        "     </DataItem>\n"
        "    </Attribute>\n"
        "   </Grid>\n",
        t, g[2], g[1], g[0], apps::hdf5::xdmf_item(h5, "density", shape));
  text += "  </Grid>\n </Domain>\n</Xdmf>\n";
  apps::hdf5::write(comm, path, sets, text);
}

}  // namespace domex::lattice

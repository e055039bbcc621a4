// SPDX-License-Identifier: BSD-3-Clause
#include "snapshot.hpp"

#include <domex/comm/error.hpp>
#include <fmt/format.h>
#include <mpi.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hdf5.hpp"

namespace domex::ring {

void write_hdf5(const Comm& comm, const Ring& ring, const std::filesystem::path& path) {
  const Particles& p = ring.particles();
  const std::uint64_t n = p.size();
  std::uint64_t before = 0;  // particles on the lower ranks: this rank's first row
  check_mpi(MPI_Exscan(&n, &before, 1, MPI_UINT64_T, MPI_SUM, comm.get()), "MPI_Exscan");
  if (comm.rank() == 0) before = 0;  // MPI_Exscan leaves rank 0's result undefined
  const std::uint64_t total = ring.global_count();
  std::vector<double> position, velocity;
  position.reserve(3 * n);
  velocity.reserve(3 * n);
  for (std::size_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a) {
      position.push_back(p.position[i][a]);
      velocity.push_back(p.velocity[i][a]);
    }
  const std::vector<std::size_t> rows{total, 3}, start{before, 0}, count{n, 3};
  const std::array<apps::hdf5::Dataset, 3> sets{
      apps::hdf5::Dataset{.name = "position", .shape = rows, .start = start, .count = count,
                          .values = std::span<const double>(position)},
      apps::hdf5::Dataset{.name = "velocity", .shape = rows, .start = start, .count = count,
                          .values = std::span<const double>(velocity)},
      apps::hdf5::Dataset{.name = "id", .shape = {total}, .start = {before}, .count = {n},
                          .values = std::span<const std::uint64_t>(p.id)}};
  const std::string h5 = path.filename().string();
  const std::string body =
      fmt::format("   <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"{}\" NodesPerElement=\"1\"/>\n"
                  "   <Geometry GeometryType=\"XYZ\">\n"
                  "    {}\n"
                  "   </Geometry>\n",
                  total, apps::hdf5::xdmf_item(h5, "position", rows)) +
      apps::hdf5::xdmf_attribute(h5, "velocity", rows, true) +
      apps::hdf5::xdmf_attribute(h5, "id", sets[2].shape, false, true);
  apps::hdf5::write(comm, path, sets, apps::hdf5::xdmf_document("domex-ring", ring.time(), body));
}

}  // namespace domex::ring

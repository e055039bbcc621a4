// SPDX-License-Identifier: BSD-3-Clause
#include "snapshot.hpp"

#include <fmt/format.h>

#include <array>
#include <vector>

#include "particles.hpp"

namespace domex::ring {

namespace {

template <class Write>
void write_with(const Comm& comm, const Ring& ring, const std::filesystem::path& path, std::string title,
                Write write) {
  const Particles& p = ring.particles();
  const std::vector<double> velocity = apps::components(p.velocity);
  const std::array<apps::ParticleField, 1> fields{
      apps::ParticleField{.name = "velocity", .components = 3, .values = velocity}};
  write(comm, "domex-ring", path,
        apps::ParticleSnapshot{.title = std::move(title), .time = ring.time(), .position = p.position, .id = p.id,
                               .fields = fields});
}

}  // namespace

void write_vtk(const Comm& comm, const Ring& ring, const std::filesystem::path& path) {
  write_with(comm, ring, path, fmt::format("domex-ring step {} t {}", ring.steps(), ring.time()),
             apps::write_particles_vtk);
}

void write_hdf5(const Comm& comm, const Ring& ring, const std::filesystem::path& path) {
  write_with(comm, ring, path, "domex-ring", apps::write_particles_hdf5);
}

}  // namespace domex::ring

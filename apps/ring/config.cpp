// SPDX-License-Identifier: BSD-3-Clause
#include "config.hpp"

#include <domex/comm/collective.hpp>
#include <domex/tree/tree.hpp>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <numbers>
#include <sstream>

#include "files.hpp"  // output_problem
#include "hdf5.hpp"   // check_snapshot_format

namespace domex::ring {
namespace {

[[noreturn]] void reject(std::string_view what) { apps::fail_app("domex-ring", what); }

}  // namespace

Legacy parse_legacy(const std::string& list) {
  Legacy legacy;
  if (list.empty() || list == "none") return legacy;
  if (list == "all") return {true, true, true, true};
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item == "alltoall-exchange") legacy.alltoall_exchange = true;
    else if (item == "alltoallv-let") legacy.alltoallv_let = true;
    else if (item == "merge-sort") legacy.merge_sort = true;
    else if (item == "bcast-decompose") legacy.bcast_decompose = true;
    else
      reject(fmt::format("--legacy {}: unknown item '{}' (valid: alltoall-exchange, alltoallv-let, merge-sort, "
                         "bcast-decompose, all, none)",
                         list, item));
  }
  return legacy;
}

std::string to_string(const Legacy& legacy) {
  std::string names;
  const auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!names.empty()) names += ',';
    names += name;
  };
  add(legacy.alltoall_exchange, "alltoall-exchange");
  add(legacy.alltoallv_let, "alltoallv-let");
  add(legacy.merge_sort, "merge-sort");
  add(legacy.bcast_decompose, "bcast-decompose");
  return names.empty() ? "none" : names;
}

Derived validate(const Config& config, const Comm& comm) {
  Derived d;
  const auto positive = [](const char* name, double value) {
    if (!(value > 0) || !std::isfinite(value)) reject(fmt::format("{} {}: must be positive and finite", name, value));
  };
  if (config.particles < 1) reject(fmt::format("--particles {}: need at least one particle", config.particles));
  if (config.particles > (std::uint64_t{1} << 40))
    reject(fmt::format("--particles {}: more than 2^40", config.particles));
  if (config.steps < 0) reject(fmt::format("--steps {}: must be >= 0", config.steps));
  for (auto [name, value] : {std::pair{"--snapshot-every", config.snapshot_every}, {"--image-every", config.image_every},
                             {"--checkpoint-every", config.checkpoint_every}})
    if (value < 0) reject(fmt::format("{} {}: must be >= 0", name, value));
  apps::hdf5::check_snapshot_format("domex-ring", config.snapshot_format, "vtk");
  if (config.energy_every < -1)
    reject(fmt::format("--energy-every {}: must be -1 (start and end), 0 (progress lines) or N > 0", config.energy_every));
  positive("--ring-radius", config.ring_radius);
  positive("--ring-width", config.ring_width);
  if (config.ring_width >= config.ring_radius)
    reject(fmt::format("--ring-width {}: must be smaller than --ring-radius {}", config.ring_width, config.ring_radius));
  positive("--ring-mass", config.ring_mass);
  if (config.ring_mass >= 0.1) reject(fmt::format("--ring-mass {}: must be < 0.1 (central mass 1)", config.ring_mass));
  positive("--optical-depth", config.optical_depth);
  if (!(config.dispersion >= 0) || !std::isfinite(config.dispersion))
    reject(fmt::format("--dispersion {}: must be >= 0 and finite", config.dispersion));
  if (!(config.thickness >= 0) || !std::isfinite(config.thickness))
    reject(fmt::format("--thickness {}: must be >= 0 and finite", config.thickness));
  positive("--dt", config.dt);
  if (config.dt > 0.05) reject(fmt::format("--dt {}: too large for an orbit of period 2 pi (<= 0.05)", config.dt));
  if (!(config.restitution > 0 && config.restitution <= 1))
    reject(fmt::format("--restitution {}: must be in (0, 1]", config.restitution));
  if (!(config.contact_steps >= 4) || !std::isfinite(config.contact_steps))
    reject(fmt::format("--contact-steps {}: must be >= 4 (steps per contact time T)", config.contact_steps));
  if (!std::isfinite(config.softening)) reject(fmt::format("--softening {}: must be finite", config.softening));
  if (!(config.theta >= 0 && config.theta <= 1.5)) reject(fmt::format("--theta {}: must be in [0, 1.5]", config.theta));
  if (config.leaf_limit < 1) reject(fmt::format("--leaf-limit {}: must be >= 1", config.leaf_limit));
  if (config.group_limit < 1) reject(fmt::format("--group-limit {}: must be >= 1", config.group_limit));
  if (config.reuse < 1) reject(fmt::format("--reuse {}: must be >= 1", config.reuse));
  if (config.threads < 0) reject(fmt::format("--threads {}: must be >= 0", config.threads));
  if (config.rebalance_every < 1) reject(fmt::format("--rebalance-every {}: must be >= 1", config.rebalance_every));
  // Particles may change rank only on a step that builds the lists.
  if (config.rebalance_every % config.reuse != 0)
    reject(fmt::format("--rebalance-every {}: must be a multiple of --reuse {}", config.rebalance_every, config.reuse));
  if (config.checkpoint_every % config.rebalance_every != 0)
    reject(fmt::format("--checkpoint-every {}: must be a multiple of --rebalance-every {} (a restart rebalances first)",
                       config.checkpoint_every, config.rebalance_every));
  try {
    (void)let_mode_from_string(config.let);
  } catch (const Error& error) {  // its message names the valid modes, after the library's prefix
    const std::string_view what = error.what();
    const auto name = what.find("unknown LET mode");
    reject(fmt::format("--let {}: {}", config.let, name == std::string_view::npos ? what : what.substr(name)));
  }
  d.legacy = parse_legacy(config.legacy);
  if (config.compare_legacy && (d.legacy.any() || !config.restart.empty()))
    reject("--compare-legacy: runs every legacy combination itself; leave --legacy and --restart unset");

  // Sections in (r, phi, z): phi gets the most, r a few once there are many ranks.
  const int ranks = comm.size();
  std::array<int, 3> div = config.divisions;
  for (int a = 0; a < 3; ++a)
    if (div[a] < 0) reject(fmt::format("--divisions {} {} {}: negative", div[0], div[1], div[2]));
  if (div[2] == 0) div[2] = 1;
  const auto rest_of = [&](int a, int b) { return a * b > 0 && ranks % (a * b) == 0 ? ranks / (a * b) : 0; };
  if (div[0] == 0 && div[1] == 0) {
    div[0] = 1;
    for (int r = 2; r * r * 32 <= ranks; ++r)
      if (rest_of(r, div[2])) div[0] = r;
    div[1] = rest_of(div[0], div[2]);
  } else if (div[0] == 0) {
    div[0] = rest_of(div[1], div[2]);
  } else if (div[1] == 0) {
    div[1] = rest_of(div[0], div[2]);
  }
  if (div[0] * div[1] * div[2] != ranks)
    reject(fmt::format("--divisions {} {} {}: the product must equal the {} ranks", config.divisions[0],
                       config.divisions[1], config.divisions[2], ranks));
  d.divisions = div;

  const double area = 2 * std::numbers::pi * config.ring_radius * config.ring_width;
  d.particle_radius = std::sqrt(config.optical_depth * area / (std::numbers::pi * static_cast<double>(config.particles)));
  d.particle_mass = config.ring_mass / static_cast<double>(config.particles);
  d.softening = config.softening < 0 ? d.particle_radius : config.softening;
  d.thickness = config.thickness > 0 ? config.thickness : 4 * d.particle_radius;
  const double contact_time = config.contact_steps * config.dt;
  d.eta = -4 * std::log(config.restitution) / contact_time;
  d.kappa = 4 * std::numbers::pi * std::numbers::pi / (contact_time * contact_time) + d.eta * d.eta / 4;
  // Between list builds neighbours close in at most the shear across a few
  // particle diameters plus a generous multiple of the dispersion.
  const double closing = 1.5 * 8 * d.particle_radius + 20 * config.dispersion;
  d.search_radius = 2 * d.particle_radius + static_cast<double>(config.reuse - 1) * config.dt * closing;
  d.domain_radius = 2 * config.ring_radius;  // particles beyond r = 2R or |z| = R are an error
  d.domain_half_height = config.ring_radius;

  // Filesystem verdicts from rank 0 only, thrown on every rank.
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    if (!config.output.empty()) {
      const std::string why = apps::output_problem(config.output);
      if (!why.empty()) reject(fmt::format("--output {}: cannot create the folder: {}", config.output, why));
    }
  });
  return d;
}

}  // namespace domex::ring

// SPDX-License-Identifier: BSD-3-Clause
#include "config.hpp"

#include <fmt/format.h>

#include <domex/comm/collective.hpp>
#include <cmath>

#include "files.hpp"
#include "hdf5.hpp"

namespace domex::mps {
namespace {

[[noreturn]] void reject(std::string_view what) { apps::fail_app("domex-mps", what); }

void positive(double value, const char* name) {
  if (!(value > 0) || !std::isfinite(value)) reject(fmt::format("--{} {}: must be positive and finite", name, value));
}

}  // namespace

void validate(const Config& config, const Comm& comm) {
  positive(config.width, "width");
  if (config.resolution < 4 || config.resolution > 4000)
    reject(fmt::format("--resolution {}: particles across the column must be 4..4000", config.resolution));
  if (!(config.end_time > 0) || !(config.end_time <= 100))
    reject(fmt::format("--end-time {}: must be in (0, 100] (T = t sqrt(2 g / a))", config.end_time));
  if (config.dimension != 2 && config.dimension != 3)
    reject(fmt::format("--dimension {}: must be 2 or 3", config.dimension));
  // 3-D: the ghost cutoff r_e + skin may be at most half the periodic depth.
  if (config.dimension == 3 && !(static_cast<double>(config.layers) >= 2 * (config.re_laplacian + config.skin)))
    reject(fmt::format("--layers {}: the periodic depth must be at least 2 (re-laplacian + skin) = {} lattice planes",
                       config.layers, 2 * (config.re_laplacian + config.skin)));
  if (config.steps < 0) reject(fmt::format("--steps {}: must be >= 0", config.steps));
  if (config.decomposition != "bucket" && config.decomposition != "multisection")
    reject(fmt::format("--decomposition {}: must be bucket or multisection", config.decomposition));
  if (config.count_exchange != "alltoall" && config.count_exchange != "put" && config.count_exchange != "automatic")
    reject(fmt::format("--count-exchange {}: must be alltoall, put or automatic", config.count_exchange));
  if (config.image_every < 0) reject(fmt::format("--image-every {}: must be >= 0", config.image_every));
  if (config.checkpoint_every < 0) reject(fmt::format("--checkpoint-every {}: must be >= 0", config.checkpoint_every));
  if (config.snapshot_every < 0) reject(fmt::format("--snapshot-every {}: must be >= 0", config.snapshot_every));
  apps::hdf5::check_snapshot_format("domex-mps", config.snapshot_format, "vtk");
  if (config.snapshot_every > 0 && config.output.empty())
    reject("--snapshot-every needs an --output folder for the snapshots");
  if (config.checkpoint_every > 0 && config.output.empty())
    reject("--checkpoint-every needs an --output folder for the checkpoints");
  positive(config.gravity, "gravity");
  positive(config.density, "density");
  if (!(config.viscosity >= 0) || !std::isfinite(config.viscosity))
    reject(fmt::format("--viscosity {}: must be >= 0", config.viscosity));
  if (!(config.cfl > 0) || !(config.cfl <= 0.5)) reject(fmt::format("--cfl {}: must be in (0, 0.5]", config.cfl));
  if (!(config.re_density >= 1.5) || !(config.re_density <= 5))
    reject(fmt::format("--re-density {}: must be in [1.5, 5] (in l0)", config.re_density));
  if (!(config.re_laplacian >= config.re_density) || !(config.re_laplacian <= 6))
    reject(fmt::format("--re-laplacian {}: must be in [re-density, 6] (in l0)", config.re_laplacian));
  if (!(config.beta > 0) || !(config.beta < 1)) reject(fmt::format("--beta {}: must be in (0, 1)", config.beta));
  if (!(config.relaxation > 0) || !(config.relaxation <= 1))
    reject(fmt::format("--relaxation {}: must be in (0, 1]", config.relaxation));
  if (!(config.compressibility >= 0) || !std::isfinite(config.compressibility))
    reject(fmt::format("--compressibility {}: must be >= 0", config.compressibility));
  if (!(config.collision_distance >= 0) || !(config.collision_distance < 1))
    reject(fmt::format("--collision-distance {}: must be in [0, 1) (in l0)", config.collision_distance));
  if (!(config.restitution >= 0) || !(config.restitution <= 1))
    reject(fmt::format("--restitution {}: must be in [0, 1]", config.restitution));
  if (!(config.skin > 0) || !(config.skin <= 4))
    reject(fmt::format("--skin {}: must be in (0, 4] (in l0)", config.skin));
  if (!(config.cg_tolerance > 0) || !(config.cg_tolerance < 1))
    reject(fmt::format("--cg-tolerance {}: must be in (0, 1)", config.cg_tolerance));
  if (config.cg_preconditioner != "mic" && config.cg_preconditioner != "jacobi")
    reject(fmt::format("--cg-preconditioner {}: must be mic or jacobi", config.cg_preconditioner));
  if (config.cg_max_iterations < 1)
    reject(fmt::format("--cg-max-iterations {}: must be >= 1", config.cg_max_iterations));
  // Filesystem verdict from rank 0 only, thrown on every rank.
  if (!config.output.empty())
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      const std::string why = apps::output_problem(config.output);
      if (!why.empty()) reject(fmt::format("--output {}: cannot create the folder: {}", config.output, why));
    });
}

}  // namespace domex::mps

// SPDX-License-Identifier: BSD-3-Clause
#include "config.hpp"

#include <fmt/format.h>

#include <domex/comm/collective.hpp>
#include <cmath>

#include "files.hpp"

namespace domex::md {
namespace {

[[noreturn]] void reject(std::string_view what) { apps::fail_app("domex-md", what); }

void positive(double value, const char* name) {
  if (!(value > 0) || !std::isfinite(value)) reject(fmt::format("--{} {}: must be positive and finite", name, value));
}

}  // namespace

void validate(const Config& config, const Comm& comm) {
  positive(config.density, "density");
  positive(config.cutoff, "cutoff");
  positive(config.dt, "dt");
  if (!(config.temperature >= 0) || !std::isfinite(config.temperature))
    reject(fmt::format("--temperature {}: must be >= 0 and finite", config.temperature));
  if (!(config.skin >= 0) || !std::isfinite(config.skin))
    reject(fmt::format("--skin {}: must be >= 0 and finite", config.skin));
  if (config.cells < 1 || config.cells > 2000)
    reject(fmt::format("--cells {}: must be 1..2000 fcc cells per axis", config.cells));
  // The ghost cutoff (cutoff + skin) may be at most half the periodic side.
  const double side = static_cast<double>(config.cells) * std::cbrt(4 / config.density);
  if (!(2 * (config.cutoff + config.skin) <= side))
    reject(fmt::format("--cells {}: the box side {:.4g} must be at least 2 (cutoff + skin) = {:.4g}", config.cells,
                       side, 2 * (config.cutoff + config.skin)));
  if (config.steps < 0) reject(fmt::format("--steps {}: must be >= 0", config.steps));
  if (config.neigh_every < 1) reject(fmt::format("--neigh-every {}: must be >= 1", config.neigh_every));
  if (config.neigh_check != "yes" && config.neigh_check != "no")
    reject(fmt::format("--neigh-check {}: must be yes or no", config.neigh_check));
  if (config.sort_every < 0) reject(fmt::format("--sort-every {}: must be >= 0", config.sort_every));
  if (config.overlap != "on" && config.overlap != "off")
    reject(fmt::format("--overlap {}: must be on or off", config.overlap));
  if (config.boundary_last != "yes" && config.boundary_last != "no")
    reject(fmt::format("--boundary-last {}: must be yes or no", config.boundary_last));
  if (config.thermo < 0) reject(fmt::format("--thermo {}: must be >= 0", config.thermo));
  if (config.checkpoint_every < 0) reject(fmt::format("--checkpoint-every {}: must be >= 0", config.checkpoint_every));
  if (config.checkpoint_every > 0 && config.output.empty())
    reject("--checkpoint-every needs an --output folder for the checkpoints");
  if (!config.output.empty())
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      const std::string why = apps::output_problem(config.output);
      if (!why.empty()) reject(fmt::format("--output {}: cannot create the folder: {}", config.output, why));
    });
  if (!config.write_data.empty())
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      const std::filesystem::path folder = std::filesystem::path(config.write_data).parent_path();
      const std::string why = folder.empty() ? "" : apps::output_problem(folder);
      if (!why.empty()) reject(fmt::format("--write-data {}: cannot write there: {}", config.write_data, why));
    });
}

}  // namespace domex::md

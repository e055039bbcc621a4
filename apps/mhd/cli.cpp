// SPDX-License-Identifier: BSD-3-Clause
#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "options.hpp"  // whole_number

namespace domex::mhd {
namespace {

/// Adds every Config field as a flag; the config file uses the same names.
void add_options(CLI::App& app, Config& config, std::vector<long>& cells, std::vector<int>& dims) {
  app.add_option("--cells", cells, "global cells NX NY NZ")
      ->expected(3)
      ->check(apps::whole_number<long>("domex-mhd", "--cells"))
      ->capture_default_str();
  app.add_option("--steps", config.steps,
                 "the run ends at step N, counted from step 0, also after --restart (a checkpoint at step 8 and "
                 "--steps 16: 8 more steps), as in domex-ring")
      ->check(apps::whole_number<long>("domex-mhd", "--steps"))
      ->capture_default_str();
  app.add_option("--depth", config.depth, "ghost layers k = steps between exchanges (0: automatic)")
      ->check(apps::whole_number<int>("domex-mhd", "--depth"))
      ->capture_default_str();
  app.add_option("--dims", dims, "ranks per axis (0: automatic)")
      ->expected(3)
      ->check(apps::whole_number<int>("domex-mhd", "--dims"))
      ->capture_default_str();
  app.add_option("--problem", config.problem, "magnetosphere | periodic-wave")->capture_default_str();
  app.add_option("--output", config.output, "output folder (empty: write nothing)")->capture_default_str();
  app.add_option("--image-every", config.image_every, "slice PNG every N steps (0: none)")
      ->check(apps::whole_number<long>("domex-mhd", "--image-every"))
      ->capture_default_str();
  app.add_option("--snapshot-every", config.snapshot_every, "VTK snapshot every N steps (0: none)")
      ->check(apps::whole_number<long>("domex-mhd", "--snapshot-every"))
      ->capture_default_str();
  app.add_option("--snapshot-format", config.snapshot_format,
                 "vtk (legacy VTK) | hdf5 (parallel HDF5 + XDMF sidecar for ParaView)")
      ->capture_default_str();
  app.add_option("--checkpoint-every", config.checkpoint_every,
                 "checkpoint (all fields, float64) every N steps and at the end (0: none)")
      ->check(apps::whole_number<long>("domex-mhd", "--checkpoint-every"))
      ->capture_default_str();
  app.add_option("--restart", config.restart,
                 "checkpoint file to go on from (any np, dims, depth); --steps counts from step 0");
  const auto physical = [&](const char* name, double& value, const char* help) {
    app.add_option(name, value, help)->capture_default_str()->group("Physics");
  };
  physical("--x-min", config.x_min, "box: lowest x (planet radii)");
  physical("--x-max", config.x_max, "box: highest x");
  physical("--half-width", config.half_width, "box: |y|, |z| <= half-width");
  physical("--rho-sw", config.rho_sw, "solar wind density");
  physical("--v-sw", config.v_sw, "solar wind speed (along +x)");
  physical("--p-sw", config.p_sw, "solar wind pressure");
  physical("--bz-imf", config.bz_imf, "interplanetary field Bz");
  physical("--dipole", config.dipole, "dipole moment (along -z)");
  physical("--gm", config.gm, "G * planet mass");
  physical("--r-inner", config.r_inner, "inner boundary radius");
  physical("--rho-inner", config.rho_inner, "density inside the inner boundary");
  physical("--p-inner", config.p_inner, "pressure inside the inner boundary");
  physical("--gamma", config.gamma, "adiabatic index");
  physical("--cfl", config.cfl, "Courant number of the initial state");
  physical("--dt", config.dt, "fixed time step (0: from --cfl)");
  physical("--d-rho", config.d_rho, "density diffusion");
  physical("--nu", config.nu, "viscosity");
  physical("--d-p", config.d_p, "pressure diffusion");
  physical("--eta", config.eta, "resistivity");
}

}  // namespace

Config CommandLine::finish() const {
  Config result = config;
  std::copy(cells.begin(), cells.end(), result.cells.begin());
  std::copy(dims.begin(), dims.end(), result.dims.begin());
  return result;
}

apps::AppPtr make_app(CommandLine& line) {
  apps::AppPtr app(new CLI::App("domex-mhd: 3-D MHD magnetosphere on a deep-halo Cartesian grid (run under mpirun)"));
  app->set_config("--config", "", "INI file of key = value lines, keys named like the flags");
  // A key the program does not know (a typo) is an error, not a silent default.
  app->allow_config_extras(CLI::config_extras_mode::error);
  add_options(*app, line.config, line.cells, line.dims);
  app->add_flag("--verify", line.verify, "print a checksum of the final state (equal for any np, dims, depth)");
  return app;
}

}  // namespace domex::mhd

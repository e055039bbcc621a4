// SPDX-License-Identifier: BSD-3-Clause
#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>

#include "options.hpp"  // whole_number

namespace domex::lattice {

Config CommandLine::finish() const {
  Config result = config;
  std::copy(local.begin(), local.end(), result.local.begin());
  std::copy(dims.begin(), dims.end(), result.dims.begin());
  if (large) result.local = {16, 16, 16, 16};
  return result;
}

apps::AppPtr make_app(CommandLine& line) {
  apps::AppPtr app(new CLI::App(
      "domex-lattice: Wilson-Dirac CG on a 4-D lattice, the QCD communication pattern (run under mpirun)"));
  app->set_config("--config", "", "INI file of key = value lines, keys named like the flags");
  app->allow_config_extras(CLI::config_extras_mode::error);
  Config& c = line.config;
  app->add_option("--local", line.local, "sites per rank X Y Z T")
      ->expected(4)
      ->check(apps::whole_number<long>("domex-lattice", "--local"))
      ->capture_default_str();
  app->add_flag("--large", line.large, "16^4 sites per rank (overrides --local)");
  app->add_option("--dims", line.dims, "ranks per axis (0: automatic)")
      ->expected(4)
      ->check(apps::whole_number<int>("domex-lattice", "--dims"))
      ->capture_default_str();
  app->add_option("--kappa", c.kappa, "Wilson hopping parameter")->capture_default_str();
  app->add_option("--seed", c.seed, "seed of the gauge field and the source")
      ->check(apps::whole_number<std::uint64_t>("domex-lattice", "--seed"))
      ->capture_default_str();
  app->add_option("--tolerance", c.tolerance, "CG stops at |r|/|b| <= tolerance")->capture_default_str();
  app->add_option("--max-iterations", c.max_iterations, "CG iteration limit")
      ->check(apps::whole_number<int>("domex-lattice", "--max-iterations"))
      ->capture_default_str();
  app->add_option("--path", c.path, "halo path: pack | datatype | contiguous")->capture_default_str();
  app->add_option("--overlap", c.overlap, "overlap the |r|^2 allreduce with the x update (true/false)")
      ->capture_default_str();
  app->add_option("--exchanges", c.exchanges, "halo exchanges timed for the histogram (0: none)")
      ->check(apps::whole_number<long>("domex-lattice", "--exchanges"))
      ->capture_default_str();
  app->add_option("--bins", c.bins, "histogram bins")
      ->check(apps::whole_number<int>("domex-lattice", "--bins"))
      ->capture_default_str();
  app->add_option("--output", c.output, "output folder (empty: write nothing)")->capture_default_str();
  app->add_option("--snapshot-format", c.snapshot_format,
                  "none | hdf5 (the CG solution psi and |psi|^2 per site: parallel HDF5 + XDMF sidecar)")
      ->capture_default_str();
  return app;
}

}  // namespace domex::lattice

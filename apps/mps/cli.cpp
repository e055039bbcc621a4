// SPDX-License-Identifier: BSD-3-Clause
#include "cli.hpp"

#include <CLI/CLI.hpp>

#include "options.hpp"  // whole_number

namespace domex::mps {

apps::AppPtr make_app(CommandLine& line) {
  apps::AppPtr app(new CLI::App(
      "domex-mps: 2-D MPS dam break (Koshizuka & Oka 1996) against Martin & Moyce (1952) (run under mpirun)"));
  app->set_config("--config", "", "INI file of key = value lines, keys named like the flags");
  app->allow_config_extras(CLI::config_extras_mode::error);
  Config& config = line.config;
  app->add_option("--width", config.width, "column width a in m (height 2a, tank 4a)")->capture_default_str();
  app->add_option("--resolution", config.resolution, "particles across a (l0 = a / resolution)")->capture_default_str();
  app->add_option("--end-time", config.end_time, "run until T = t sqrt(2 g / a)")->capture_default_str();
  app->add_option("--steps", config.steps,
                  "the run ends at step N, counted from step 0, also after --restart, as in domex-mhd and domex-ring "
                  "(0: at --end-time)")
      ->capture_default_str();
  app->add_option("--dimension", config.dimension, "2 (particles in z = 0) | 3 (a slab periodic in z)")
      ->capture_default_str();
  app->add_option("--layers", config.layers, "3-D: lattice planes in z (periodic depth layers l0)")
      ->capture_default_str();
  app->add_option("--decomposition", config.decomposition, "bucket (BucketDecomposition) | multisection")
      ->capture_default_str();
  app->add_option("--count-exchange", config.count_exchange,
                  "per-destination counts: alltoall (MPI_Alltoall) | put (MPI_Put between fences) | automatic "
                  "(domex::exchange)")
      ->capture_default_str();
  app->add_option("--output", config.output, "output folder (empty: write nothing)")->capture_default_str();
  app->add_option("--image-every", config.image_every, "PNG of the particles every N steps (0: at the end only)")
      ->capture_default_str();
  app->add_option("--snapshot-every", config.snapshot_every,
                  "particle snapshot (positions, velocity, pressure, kind, id) every N steps and at the end (0: none)")
      ->capture_default_str();
  app->add_option("--snapshot-format", config.snapshot_format,
                  "vtk (legacy VTK) | hdf5 (parallel HDF5 + XDMF sidecar for ParaView)")
      ->capture_default_str();
  app->add_option("--checkpoint-every", config.checkpoint_every, "checkpoint every N steps and at the end (0: none)")
      ->capture_default_str();
  app->add_option("--restart", config.restart, "checkpoint to go on from (any np)");
  const auto physical = [&](const char* name, double& value, const char* help) {
    app->add_option(name, value, help)->capture_default_str()->group("Physics and numerics");
  };
  physical("--gravity", config.gravity, "m/s^2");
  physical("--density", config.density, "kg/m^3");
  physical("--viscosity", config.viscosity, "kinematic viscosity, m^2/s");
  physical("--cfl", config.cfl, "dt = cfl l0 / sqrt(4 g a)");
  physical("--re-density", config.re_density, "r_e of number density and gradient, in l0");
  physical("--re-laplacian", config.re_laplacian, "r_e of the Laplacian, in l0");
  physical("--beta", config.beta, "free surface where n* < beta n0");
  physical("--relaxation", config.relaxation, "gamma of the source term");
  physical("--compressibility", config.compressibility, "1/Pa, diagonal term of the Poisson equation");
  physical("--collision-distance", config.collision_distance, "in l0");
  physical("--restitution", config.restitution, "of the collision model");
  physical("--skin", config.skin, "Verlet skin of ghosts and neighbour lists, in l0");
  physical("--cg-tolerance", config.cg_tolerance, "relative residual of the Poisson CG");
  app->add_option("--cg-preconditioner", config.cg_preconditioner,
                  "mic (modified incomplete Cholesky of each rank's rows) | jacobi (the diagonal)")
      ->capture_default_str()
      ->group("Physics and numerics");
  app->add_option("--cg-max-iterations", config.cg_max_iterations, "CG iterations before the run fails")
      ->capture_default_str()
      ->group("Physics and numerics");
  // Every integer option is checked as typed (apps::whole_number), as in the other apps.
  for (CLI::Option* option : app->get_options())
    for (const char* name : {"--resolution", "--steps", "--layers", "--image-every", "--snapshot-every", "--checkpoint-every",
                             "--cg-max-iterations"})
      if (option->check_name(name)) option->check(apps::whole_number<long>("domex-mps", name, 0, long{1} << 40));
  for (CLI::Option* option : app->get_options())
    if (option->check_name("--dimension")) option->check(apps::whole_number<int>("domex-mps", "--dimension", 2, 3));
  app->add_flag("--verify", line.verify, "print a checksum of the final particles (same for a restart at the same np)");
  return app;
}

}  // namespace domex::mps

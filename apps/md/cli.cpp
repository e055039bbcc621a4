// SPDX-License-Identifier: BSD-3-Clause
#include "cli.hpp"

#include <CLI/CLI.hpp>

#include "options.hpp"  // whole_number

namespace domex::md {

apps::AppPtr make_app(CommandLine& line) {
  apps::AppPtr app(new CLI::App(
      "domex-md: LAMMPS's bench/in.lj (Lennard-Jones melt, fcc 0.8442, lj/cut 2.5, skin 0.3, NVE) on domex's ghost "
      "particles and neighbour lists (run under mpirun)"));
  app->set_config("--config", "", "INI file of key = value lines, keys named like the flags");
  app->allow_config_extras(CLI::config_extras_mode::error);
  Config& config = line.config;
  app->add_option("--cells", config.cells, "fcc unit cells per axis of the periodic cube (4 n^3 atoms; in.lj: 20)")
      ->capture_default_str();
  app->add_option("--steps", config.steps, "the run ends at step N, counted from step 0, also after --restart")
      ->capture_default_str();
  app->add_option("--thermo", config.thermo, "thermo line every N steps (0: the first and the last, as LAMMPS)")
      ->capture_default_str();
  app->add_option("--output", config.output, "output folder: md.json, checkpoints (empty: write nothing)")
      ->capture_default_str();
  app->add_option("--checkpoint-every", config.checkpoint_every, "checkpoint every N steps and at the end (0: none)")
      ->capture_default_str();
  app->add_option("--restart", config.restart, "checkpoint to go on from (same np: bitwise; any np)");
  app->add_option("--write-data", config.write_data,
                  "write the initial state as a LAMMPS data file (read_data) to this path");
  const auto physical = [&](const char* name, auto& value, const char* help) {
    app->add_option(name, value, help)->capture_default_str()->group("The deck (LAMMPS in.lj)");
  };
  physical("--density", config.density, "reduced density of the fcc lattice (lattice fcc 0.8442)");
  physical("--temperature", config.temperature, "initial temperature (velocity all create 1.44 ...)");
  physical("--seed", config.seed, "of the initial velocities (the same at any np)");
  physical("--cutoff", config.cutoff, "LJ cutoff (pair_style lj/cut 2.5)");
  physical("--skin", config.skin, "Verlet skin (neighbor 0.3 bin)");
  physical("--dt", config.dt, "time step (LJ units)");
  physical("--neigh-every", config.neigh_every, "rebuild the neighbour lists every N steps (neigh_modify every 20)");
  physical("--neigh-check", config.neigh_check,
           "yes: rebuild only when some atom moved more than skin / 2 (one allreduce at those steps) | no");
  physical("--sort-every", config.sort_every, "spatial sort of the owned atoms every N steps at a rebuild (0: never)");
  const auto how = [&](const char* name, auto& value, const char* help) {
    app->add_option(name, value, help)->capture_default_str()->group("How");
  };
  how("--overlap", config.overlap,
      "on: half the owned pairs computed while the positions travel, half while the forces travel back | off");
  how("--boundary-last", config.boundary_last,
      "yes: the atoms within the ghost cutoff of their box's faces kept last in the arrays (what update gathers "
      "and reverse_sum adds into is one run) | no");
  app->add_flag("--timer-sync", config.timer_sync,
                "a barrier before each timed phase (LAMMPS's timer sync): waits are timed as Sync")
      ->group("How");
  app->add_flag("--bound", config.bound,
                "also time, inside the loop, the memcpy + MPI bound of the bytes update and reverse move")
      ->group("How");
  // Every integer option is checked as typed (apps::whole_number), as in the other apps.
  for (CLI::Option* option : app->get_options())
    for (const char* name : {"--cells", "--steps", "--thermo", "--checkpoint-every", "--neigh-every", "--sort-every"})
      if (option->check_name(name)) option->check(apps::whole_number<long>("domex-md", name, 0, long{1} << 40));
  for (CLI::Option* option : app->get_options())
    if (option->check_name("--seed")) option->check(apps::whole_number<std::uint64_t>("domex-md", "--seed"));
  app->add_flag("--verify", line.verify, "print a checksum of the final atoms (same for a restart at the same np)");
  return app;
}

}  // namespace domex::md

// SPDX-License-Identifier: BSD-3-Clause
#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "options.hpp"  // whole_number

namespace domex::ring {

Config CommandLine::finish() const {
  Config result = config;
  std::copy(divisions.begin(), divisions.end(), result.divisions.begin());
  return result;
}

bool CommandLine::particles_given() const { return particles != nullptr && particles->count() > 0; }

apps::AppPtr make_app(CommandLine& line) {
  apps::AppPtr app(new CLI::App(
      "domex-ring: planetary ring N-body (central body + tree self-gravity + inelastic contacts), run under mpirun"));
  app->set_config("--config", "", "INI file of key = value lines, keys named like the flags");
  app->allow_config_extras(CLI::config_extras_mode::error);
  Config& c = line.config;
  // Every integer option is checked as typed (apps::whole_number).
  const auto option = [&](const char* name, auto& value, const char* help, const char* group) {
    CLI::Option* added = app->add_option(name, value, help)->capture_default_str()->group(group);
    using T = std::remove_reference_t<decltype(value)>;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      added->check(apps::whole_number<T>("domex-ring", name));
  };
  line.particles = app->add_option("--particles", c.particles,
                                    "ring particles N (with --restart: the checkpoint's count; if given, it must match)")
                       ->capture_default_str()
                       ->group("Run")
                       ->check(apps::whole_number<std::uint64_t>("domex-ring", "--particles", 1, std::uint64_t{1} << 40));
  option("--steps", c.steps,
         "the run ends at step N, counted from step 0, also after --restart (a checkpoint at step 8 and --steps 16: "
         "8 more steps), as in domex-mhd; --compare-legacy: steps timed per case",
         "Run");
  option("--seed", c.seed, "initial conditions seed (the state depends only on it and the particle id)", "Run");
  option("--output", c.output, "output folder (empty: write nothing)", "Run");
  option("--snapshot-every", c.snapshot_every, "snapshot every N steps and at the end (0: none)", "Run");
  option("--snapshot-format", c.snapshot_format,
         "vtk (legacy VTK) | hdf5 (parallel HDF5 + XDMF sidecar for ParaView)", "Run");
  option("--image-every", c.image_every, "top-down density PNG every N steps and at the end (0: none)", "Run");
  option("--checkpoint-every", c.checkpoint_every, "checkpoint every N steps (0: none)", "Run");
  option("--restart", c.restart,
         "continue from this checkpoint folder, written by any number of ranks. On the np, --divisions and tree "
         "options that wrote it: bitwise the uninterrupted run. On another np: the particles are redistributed by "
         "the decomposition and the run goes on with the same physics, forces to the tree's accuracy (not bitwise)",
         "Run");
  option("--energy-every", c.energy_every, "energy check every N steps (0: with the progress lines, -1: start and end only)", "Run");
  option("--legacy", c.legacy,
         "slow paths to switch on: alltoall-exchange,alltoallv-let,merge-sort,bcast-decompose | all | none", "Run");
  app->add_flag("--compare-legacy", c.compare_legacy,
                "run all-legacy, each fix alone and all fixes; print the before/after table")
      ->group("Run");
  app->add_flag("--verify", line.verify, "print the state's checksum (bitwise equal runs have equal checksums)")
      ->group("Run");
  option("--ring-radius", c.ring_radius, "ring radius", "Ring");
  option("--ring-width", c.ring_width, "ring width", "Ring");
  option("--ring-mass", c.ring_mass, "total ring mass (central mass 1)", "Ring");
  option("--optical-depth", c.optical_depth, "optical depth: sets the particle radius", "Ring");
  option("--dispersion", c.dispersion, "random velocity dispersion per component", "Ring");
  option("--thickness", c.thickness, "initial z dispersion (0: 4 particle radii)", "Ring");
  option("--dt", c.dt, "time step (an orbit at r = 1 takes 2 pi)", "Physics");
  option("--restitution", c.restitution, "coefficient of restitution e", "Physics");
  option("--contact-steps", c.contact_steps, "contact time T in steps (T = contact-steps x dt)", "Physics");
  option("--softening", c.softening, "self-gravity softening (< 0: the particle radius)", "Physics");
  option("--self-gravity", c.self_gravity, "self-gravity through the tree", "Physics");
  option("--collisions", c.collisions, "inelastic contacts", "Physics");
  option("--theta", c.theta, "opening angle", "Tree");
  option("--leaf-limit", c.leaf_limit, "particles per leaf", "Tree");
  option("--group-limit", c.group_limit, "targets per interaction list", "Tree");
  option("--quadrupole", c.quadrupole, "quadrupole moments of cells", "Tree");
  option("--reuse", c.reuse, "build the interaction lists every N steps", "Tree");
  option("--let", c.let, "LET exchange: alltoallv | p2p_exact | p2p_fast | sparse", "Tree");
  option("--threads", c.threads, "OpenMP threads per rank (0: cores / ranks on the node)", "Tree");
  option("--rebalance-every", c.rebalance_every, "rebalance the domains every N steps", "Decomposition");
  app->add_option("--divisions", line.divisions, "sections in r, phi, z (0: chosen)")
      ->check(apps::whole_number<int>("domex-ring", "--divisions"))
      ->expected(3)
      ->capture_default_str()
      ->group("Decomposition");
  return app;
}

}  // namespace domex::ring

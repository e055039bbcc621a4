// SPDX-License-Identifier: BSD-3-Clause
// domex-ring: the planetary-ring N-body application (central body, tree
// self-gravity, inelastic contacts) on a cylindrical multisection.
//   scripts/run -n 2 domex-ring --particles 100000 --steps 64 --output results/ring
//   scripts/run -n 2 domex-ring --compare-legacy --steps 16   # the before/after table, results/ring/ring-legacy.json
//   scripts/run -n 3 domex-ring --restart results/ring/checkpoint_000064 --steps 128   # any np
// Exit codes: 0 done, 1 the run failed, 2 bad arguments (a missing, damaged or
// mismatched checkpoint among them).

#include <fmt/format.h>
#include <mpi.h>

#include <domex/comm/collective.hpp>
#include <domex/comm/provenance.hpp>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint.hpp"
#include "cli.hpp"
#include "config.hpp"
#include "files.hpp"
#include "image.hpp"
#include "ring.hpp"
#include "run_app.hpp"
#include "snapshot.hpp"

namespace {

using namespace domex::ring;
using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

/// The seed's phases, in the order its table prints them.
constexpr const char* phases[] = {"decompose", "exchange particles", "build tree", "build LET", "exchange LET",
                                  "traverse",  "kernel",             "other",      "imbalance"};

/// Per-step milliseconds of each phase, min/avg/max over ranks, plus the total.
struct StepTimes {
  std::map<std::string, std::array<double, 3>> phase;  // min, avg, max
  double total = 0;                                    // max over ranks of the whole step
};

StepTimes step_times(const domex::Comm& comm, const domex::Profile& profile, long steps, double wall) {
  StepTimes times;
  const double per = 1e3 / static_cast<double>(std::max(steps, 1L));
  for (const auto& row : profile.reduce(comm))
    times.phase[row.name] = {row.min * per, row.avg * per, row.max * per};
  times.total = comm.allreduce(wall, MPI_MAX) * per;
  return times;
}

Json times_json(const StepTimes& times) {
  Json rows = Json::array();
  for (const char* name : phases) {
    const auto it = times.phase.find(name);
    const std::array<double, 3> v = it == times.phase.end() ? std::array<double, 3>{0, 0, 0} : it->second;
    rows.push_back({{"phase", name}, {"min_ms", v[0]}, {"avg_ms", v[1]}, {"max_ms", v[2]}});
  }
  return rows;
}

void print_times(const StepTimes& times) {
  fmt::print("  {:<20} {:>10} {:>10} {:>10}   (ms per step, over ranks)\n", "phase", "min", "avg", "max");
  for (const char* name : phases) {
    const auto it = times.phase.find(name);
    if (it == times.phase.end()) continue;
    fmt::print("  {:<20} {:>10.3f} {:>10.3f} {:>10.3f}\n", name, it->second[0], it->second[1], it->second[2]);
  }
  fmt::print("  {:<20} {:>32.3f}\n", "step (wall, max)", times.total);
}

Json config_json(const Config& c, const Derived& d, int ranks) {
  return {{"particles", c.particles}, {"steps", c.steps}, {"ranks", ranks},
          {"divisions", {d.divisions[0], d.divisions[1], d.divisions[2]}},
          {"dt", c.dt}, {"theta", c.theta}, {"leaf_limit", c.leaf_limit}, {"group_limit", c.group_limit},
          {"quadrupole", c.quadrupole}, {"reuse", c.reuse}, {"let", c.let}, {"rebalance_every", c.rebalance_every},
          {"legacy", to_string(d.legacy)}, {"particle_radius", d.particle_radius}, {"particle_mass", d.particle_mass},
          {"softening", d.softening}, {"restitution", c.restitution}, {"contact_time", c.contact_steps * c.dt},
          {"self_gravity", c.self_gravity}, {"collisions", c.collisions}};
}

/// The seed's before/after table: all-legacy, each fix alone, all fixes.
void compare_legacy(domex::Comm& comm, Config config) {
  const bool root = comm.rank() == 0;
  struct Case {
    std::string name, legacy;
  };
  const std::vector<Case> cases{{"all legacy", "all"},
                                {"fix exchange", "alltoallv-let,merge-sort,bcast-decompose"},
                                {"fix LET", "alltoall-exchange,merge-sort,bcast-decompose"},
                                {"fix sort", "alltoall-exchange,alltoallv-let,bcast-decompose"},
                                {"fix decompose", "alltoall-exchange,alltoallv-let,merge-sort"},
                                {"all fixes", "none"}};
  const fs::path folder = config.output;
  if (!folder.empty())
    domex::apps::create_output_folder(comm, folder);
  config.compare_legacy = false;
  config.output.clear();
  Json runs = Json::array();
  std::vector<StepTimes> results;
  for (const Case& c : cases) {
    config.legacy = c.legacy;
    const Derived derived = validate(config, comm);
    Ring ring(comm, config, derived);
    for (long s = 0; s < config.rebalance_every; ++s) ring.step();  // warm-up: first rebalance, learning
    ring.profile().clear();
    comm.barrier();
    const double start = MPI_Wtime();
    for (long s = 0; s < config.steps; ++s) ring.step();
    const StepTimes times = step_times(comm, ring.profile(), config.steps, MPI_Wtime() - start);
    if (root) fmt::print(stderr, "  {:<14} {:8.2f} ms/step\n", c.name, times.total);
    results.push_back(times);
    runs.push_back({{"case", c.name}, {"legacy", to_string(derived.legacy)}, {"step_ms", times.total},
                    {"phases", times_json(times)}});
  }
  const domex::Provenance where = domex::provenance(comm);
  if (!root) return;
  // The seed's figures (FDPS on Fugaku, ms per step): what each fix took a phase from and to.
  const std::map<std::string, std::pair<double, double>> seed{{"exchange particles", {22, 2.2}},
                                                              {"exchange LET", {15, 0.3}},
                                                              {"build tree", {9.4, 0.44}},
                                                              {"decompose", {8, 0.4}}};
  fmt::print("domex-ring --compare-legacy  N {}  {} ranks  {} steps each (after {} warm-up), ms per step, max over "
             "ranks\n",
             config.particles, comm.size(), config.steps, config.rebalance_every);
  fmt::print("  {:<20}", "phase");
  for (const Case& c : cases) fmt::print(" {:>13}", c.name);
  fmt::print("   {:>16}\n", "seed (Fugaku)");
  for (const char* name : phases) {
    fmt::print("  {:<20}", name);
    for (const StepTimes& t : results) {
      const auto it = t.phase.find(name);
      fmt::print(" {:>13.3f}", it == t.phase.end() ? 0.0 : it->second[2]);
    }
    const auto s = seed.find(name);
    if (s != seed.end()) fmt::print("   {:>7.2f} -> {:<6.2f}", s->second.first, s->second.second);
    fmt::print("\n");
  }
  fmt::print("  {:<20}", "step (wall)");
  for (const StepTimes& t : results) fmt::print(" {:>13.3f}", t.total);
  fmt::print("   {:>7.2f} -> {:<6.2f}\n", 105.0, 7.2);
  fmt::print("  {:<20}", "speed-up vs legacy");
  for (const StepTimes& t : results) fmt::print(" {:>12.2f}x", results.front().total / t.total);
  fmt::print("   {:>15.1f}x\n", 105.0 / 7.2);
  const Json document{{"benchmark", "ring-legacy"}, {"provenance", where}, {"particles", config.particles},
                      {"ranks", comm.size()},      {"steps", config.steps}, {"runs", runs}};
  if (!folder.empty()) {
    const fs::path path = folder / "ring-legacy.json";
    domex::apps::write_file(path, document.dump(1) + "\n");
    fmt::print("  results              {}   (plot: tools/plot_ring.py {})\n", path.string(), path.string());
  }
}

/// The whole run after validation. Collective; throws domex::Error on every rank.
void simulate(domex::Comm& comm, const Config& config, const Derived& derived, std::optional<Checkpoint> checkpoint,
              bool verify) {
  const bool root = comm.rank() == 0;
  const fs::path folder = config.output;
  const bool writing = !config.output.empty();
  if (writing)
    domex::apps::create_output_folder(comm, folder);
  Ring ring = [&] {
    if (checkpoint) return Ring(comm, config, derived, std::move(*checkpoint));
    return Ring(comm, config, derived);
  }();
  const Energy initial = ring.energy();
  if (root)
    fmt::print(stderr,
               "domex-ring: N {} on {} ranks (r x phi x z = {}x{}x{}), {} threads/rank, dt {:.4g}, particle radius "
               "{:.3g}, legacy {}{}\n",
               config.particles, comm.size(), derived.divisions[0], derived.divisions[1], derived.divisions[2],
               ring.tree().threads(), config.dt, derived.particle_radius, to_string(derived.legacy),
               config.restart.empty() ? "" : fmt::format(", restarted at step {}", ring.steps()));
  domex::apps::warn_if_oversubscribed(comm, "domex-ring", ring.tree().threads());  // collective
  const long first = ring.steps(), last = config.steps;  // --steps counts from step 0, also after a restart
  const auto due = [&](long every) { return every > 0 && (ring.steps() % every == 0 || ring.steps() == last); };
  std::vector<Json> energies;
  const auto energy_line = [&](const Energy& e) {
    const double error = (e.conserved() - initial.conserved()) / std::abs(initial.conserved());
    energies.push_back({{"step", ring.steps()}, {"time", ring.time()}, {"kinetic", e.kinetic},
                        {"central", e.central}, {"self", e.self}, {"spring", e.spring},
                        {"dissipated", e.dissipated}, {"relative_error", error}});
    return error;
  };
  energy_line(initial);
  ring.profile().clear();
  domex::Profile output_profile;
  double wall = 0;
  const long progress = std::max(1L, (last - first) / 10);
  while (ring.steps() < last) {
    comm.barrier();
    const double start = MPI_Wtime();
    ring.step();
    wall += MPI_Wtime() - start;
    auto timer = output_profile.phase("output");
    if (writing && due(config.snapshot_every) && config.snapshot_format == "hdf5")
      write_hdf5(comm, ring, folder / fmt::format("ring_{:06}.h5", ring.steps()));  // with its .xmf
    else if (writing && due(config.snapshot_every))
      write_vtk(comm, ring, folder / fmt::format("ring_{:06}.vtk", ring.steps()));
    if (writing && due(config.image_every)) {
      // Surface density over its mean in the ring, on a fixed scale 0..3.
      constexpr int cells = 256;
      const double extent = config.ring_radius + config.ring_width;
      auto density = ring.surface_density(cells, extent);
      if (root) {
        const double cell_area = std::pow(2 * extent / cells, 2);
        const double mean = static_cast<double>(config.particles) * cell_area /
                            (2 * std::numbers::pi * config.ring_radius * config.ring_width);
        for (double& value : density) value /= mean;
        domex::apps::write_png_field(folder / fmt::format("ring_{:06}.png", ring.steps()), cells, cells, density,
                                     {.lo = 0,
                                      .hi = 3,
                                      .title = fmt::format("surface density / mean   t = {:.4f}  step {}", ring.time(),
                                                           ring.steps()),
                                      .x_label = "x",
                                      .y_label = "y",
                                      .colorbar_label = "sigma / mean",
                                      .x_range = {-extent, extent},
                                      .y_range = {-extent, extent}});
      }
    }
    if (writing && config.checkpoint_every > 0 && ring.steps() % config.checkpoint_every == 0)
      ring.write_checkpoint(folder / fmt::format("checkpoint_{:06}", ring.steps()));
    const bool line = (ring.steps() - first) % progress == 0 || ring.steps() == last;
    // Energy (an extra fp64 tree pass) with the progress lines (energy-every
    // 0), every N steps, or (-1) only at the start and the end.
    const bool energy = (config.energy_every == 0 && line) || (config.energy_every > 0 && due(config.energy_every));
    const double error = energy ? energy_line(ring.energy()) : 0.0;
    if (root && line)
      fmt::print(stderr, "  step {:>6}/{}  t {:8.4f}  {:8.2f} ms/step{}\n", ring.steps(), last, ring.time(),
                 1e3 * wall / static_cast<double>(ring.steps() - first),
                 energy ? fmt::format("  energy error {:+.3e}", error) : std::string());
  }
  const long steps = ring.steps() - first;
  const StepTimes times = step_times(comm, ring.profile(), steps, wall);
  const Energy final_energy = ring.energy();
  const double error = (final_energy.conserved() - initial.conserved()) / std::abs(initial.conserved());
  const std::uint64_t count = ring.global_count(), checksum = ring.checksum();
  const double ipp = comm.allreduce(ring.interactions_per_particle(), MPI_SUM) / comm.size();
  const domex::TreeStats& stats = ring.tree().stats();
  const double groups = comm.allreduce(static_cast<double>(stats.groups), MPI_SUM);
  const double epj = comm.allreduce(static_cast<double>(stats.epj_interactions), MPI_SUM);
  const auto contacts = comm.allreduce(ring.contacts(), MPI_SUM);
  const domex::Provenance where = domex::provenance(comm);
  if (!root) return;
  const double per_rank = static_cast<double>(config.particles) / comm.size();
  double non_force = 0;
  for (const char* name : {"decompose", "exchange particles", "other"})
    if (times.phase.count(name)) non_force += times.phase.at(name)[1];
  const double imbalance = times.phase.count("imbalance") ? times.phase.at("imbalance")[2] : 0.0;
  fmt::print("domex-ring  N {}  {} ranks  {} steps  t {:.4f}  legacy {}\n", count, comm.size(), steps, ring.time(),
             to_string(derived.legacy));
  print_times(times);
  fmt::print("  interactions/particle {:>10.1f}   (particles {:.1f}, cells {:.1f}; {:.1f} targets per group)   contacts {}\n",
             ipp, epj / static_cast<double>(count), ipp - epj / static_cast<double>(count),
             static_cast<double>(count) / std::max(groups, 1.0), contacts);
  fmt::print("  non-force work        {:>10.1f} ns per particle per step (decompose + exchange + other, avg)\n",
             1e6 * non_force / per_rank);
  fmt::print("  imbalance             {:>10.1f} % of the step (max over ranks)\n",
             times.total > 0 ? 100 * imbalance / times.total : 0.0);
  fmt::print("  energy error          {:>+10.3e}   (kinetic + central + self + springs + dissipated {:.3e})\n", error,
             final_energy.dissipated);
  if (verify) fmt::print("  checksum              {:016x}\n", checksum);
  if (!writing) return;
  const Json document{{"benchmark", "ring"},
                      {"provenance", where},
                      {"config", config_json(config, derived, comm.size())},
                      {"steps_run", steps},
                      {"step_ms", times.total},
                      {"phases", times_json(times)},
                      {"interactions_per_particle", ipp},
                      {"non_force_ns_per_particle", 1e6 * non_force / per_rank},
                      {"energy_relative_error", error},
                      {"energy", energies},
                      {"checksum", fmt::format("{:016x}", checksum)}};
  domex::apps::write_file(folder / "ring.json", document.dump(1) + "\n");
  fmt::print("  results               {}\n", (folder / "ring.json").string());
}

int run(int argc, char** argv) {
  domex::Comm comm{MPI_COMM_WORLD};
  CommandLine line;
  auto app = make_app(line);
  Config config;
  Derived derived;
  std::optional<Checkpoint> checkpoint;
  return domex::apps::run_app(
      comm, *app, argc, argv,
      [&] {
        config = line.finish();
        // A checkpoint is input: missing, damaged or mismatched, it exits
        // with 2 like any bad value. Its meta.txt sets --particles, which
        // the derived values (particle radius and mass) need.
        std::optional<CheckpointInfo> info;
        if (!config.restart.empty()) info = read_checkpoint_info(comm, config, line.particles_given());
        derived = validate(config, comm);
        if (info) checkpoint = read_checkpoint(comm, config, derived, std::move(*info));
      },
      [&] {
        if (config.compare_legacy)
          compare_legacy(comm, config);
        else
          simulate(comm, config, derived, std::move(checkpoint), line.verify);
      });
}

}  // namespace

int main(int argc, char** argv) { return domex::apps::main_of("domex-ring", argc, argv, run); }

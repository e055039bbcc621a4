// SPDX-License-Identifier: BSD-3-Clause
// domex-md: LAMMPS's bench/in.lj on domex's public API (GhostPlan,
// NeighborList, migrate), with LAMMPS's thermo lines and timing table.
//   mpirun -n 2 domex-md --cells 37 --timer-sync --output results/md
// Exit codes: 0 done, 1 the run failed, 2 bad arguments.

#include <fmt/format.h>
#include <mpi.h>

#include <domex/comm/collective.hpp>
#include <domex/comm/provenance.hpp>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "cli.hpp"
#include "config.hpp"
#include "files.hpp"
#include "md.hpp"
#include "run_app.hpp"

namespace {

using namespace domex::md;
using Json = nlohmann::ordered_json;

std::string thermo_line(const Thermo& t) {
  return fmt::format("{:8d} {:12.8g} {:12.8g} {:12.8g} {:12.8g} {:12.8g}", t.step, t.temperature, t.e_pair, t.e_mol,
                     t.total_energy, t.pressure);
}

/// min / avg / max over the ranks of one local value.
std::array<double, 3> spread(const domex::Comm& comm, double value) {
  return {comm.allreduce(value, MPI_MIN), comm.allreduce(value, MPI_SUM) / comm.size(),
          comm.allreduce(value, MPI_MAX)};
}

/// The whole run after validation. Collective; throws domex::Error on every rank.
void simulate(domex::Comm& comm, const Config& config, bool verify) {
  namespace fs = std::filesystem;
  const bool root = comm.rank() == 0;
  const fs::path folder = config.output;
  const bool writing = !config.output.empty();
  System system(comm, config, config.restart.empty());
  if (!config.restart.empty()) {
    // A missing, short or mismatched checkpoint is bad input: exit status 2
    // (the same verdict on every rank: read_checkpoint agrees on it).
    try {
      system.read_checkpoint(config.restart);
    } catch (const domex::Error& error) {
      throw domex::apps::InputError(error.what());
    }
    if (system.steps() > config.steps)
      throw domex::apps::InputError(fmt::format("domex-md: --restart {}: at step {}, beyond --steps {} (--steps "
                                                "counts from step 0)",
                                                config.restart, system.steps(), config.steps));
  }
  if (writing) domex::apps::create_output_folder(comm, folder);  // after the checkpoint: bad input writes nothing
  if (root)
    fmt::print(stderr,
               "domex-md: {} atoms ({}^3 fcc cells, density {}, box side {:.6g}) on {} rank{}, cutoff {} + skin {}, dt {}, "
               "steps {} to {}, lists every {} (check {}), overlap {}, boundary last {}{}\n",
               system.atoms(), config.cells, config.density, system.side(), comm.size(), comm.size() == 1 ? "" : "s",
               config.cutoff, config.skin, config.dt, system.steps(), config.steps, config.neigh_every,
               config.neigh_check, config.overlap, config.boundary_last, config.timer_sync ? ", timer sync" : "");
  system.setup();
  if (!config.write_data.empty()) {
    system.write_data(config.write_data);
    if (root) fmt::print(stderr, "domex-md: wrote the state at step {} to {} (LAMMPS read_data)\n", system.steps(),
                         config.write_data);
  }
  std::vector<Thermo> lines{system.thermo()};
  if (root) fmt::print("Step Temp E_pair E_mol TotEng Press\n{}\n", thermo_line(lines.back()));
  system.profile().clear();  // the loop's phases only (LAMMPS's Loop time)
  const long first = system.steps(), last = config.steps;
  const long every = std::max(1L, (last - first) / 10);
  comm.barrier();
  const double start = MPI_Wtime();
  while (system.steps() < last) {
    system.step();
    const long step = system.steps();
    if (system.thermo_due(step)) {
      lines.push_back(system.thermo());
      if (root) fmt::print("{}\n", thermo_line(lines.back()));
    }
    if (writing && config.checkpoint_every > 0 && (step % config.checkpoint_every == 0 || step == last)) {
      auto timer = system.profile().phase("Output");
      system.write_checkpoint(folder / fmt::format("checkpoint_{:06}.dmx", step));
    }
    if ((step - first) % every == 0 && step != last && root) {
      const double wall = MPI_Wtime() - start;
      fmt::print(stderr, "  step {:>8}/{}  {:8.3f} ms/step  wall {:8.2f} s  ETA {:8.2f} s\n", step, last,
                 1e3 * wall / static_cast<double>(step - first), wall,
                 wall / static_cast<double>(step - first) * static_cast<double>(last - step));
    }
  }
  const double local_wall = MPI_Wtime() - start;
  const double wall = comm.allreduce(local_wall, MPI_MAX);
  const long ran = system.steps() - first;
  domex::Profile& profile = system.profile();
  // Other: the loop's time outside every timed phase (and outside the bound's, not part of a step).
  double timed = 0;
  for (const char* phase : {"Pair", "Neigh", "Comm", "Output", "Modify", "Sync", "bound update", "bound reverse"})
    timed += profile.local_seconds(phase);
  profile.add("Other", std::max(0.0, local_wall - timed));
  const auto rows = profile.reduce(comm);
  const auto& ghosts = system.ghosts();
  const auto ghost_count = spread(comm, static_cast<double>(ghosts.ghost_count()));
  const auto owned = spread(comm, static_cast<double>(system.local_count()));
  const double pairs = comm.allreduce(static_cast<double>(system.list().pairs()), MPI_SUM);
  const auto update_bytes = spread(comm, static_cast<double>(system.comm_stats().update_bytes));
  const auto reverse_bytes = spread(comm, static_cast<double>(system.comm_stats().reverse_bytes));
  const long rebuilds = system.comm_stats().rebuilds;
  const std::uint64_t checksum = verify ? system.checksum() : 0;
  const domex::Provenance where = domex::provenance(comm);  // collective
  if (!root) return;

  const double per_step = ran > 0 ? 1.0 / static_cast<double>(ran) : 0.0;
  fmt::print("Loop time of {:.6g} on {} procs for {} steps with {} atoms\n\n", wall, comm.size(), ran, system.atoms());
  fmt::print("Performance: {:.3f} ms/step, {:.4g} atom-steps/s\n\n", 1e3 * wall * per_step,
             static_cast<double>(system.atoms()) * static_cast<double>(ran) / std::max(wall, 1e-300));
  fmt::print("MPI task timing breakdown:\n");
  fmt::print("Section |  min time  |  avg time  |  max time  | %total | ms/step (avg)\n");
  fmt::print("-----------------------------------------------------------------------\n");
  auto row_of = [&](std::string_view name) -> const domex::Profile::Row* {
    for (const auto& row : rows)
      if (row.name == name) return &row;
    return nullptr;
  };
  std::vector<std::string> sections{"Pair", "Neigh", "Comm", "Output", "Modify"};
  if (config.timer_sync) sections.push_back("Sync");
  sections.push_back("Other");
  for (const auto& name : sections) {
    const auto* row = row_of(name);
    const domex::Profile::Row zero{name, 0, 0, 0, 0};
    const auto& r = row ? *row : zero;
    fmt::print("{:<7} | {:10.4g} | {:10.4g} | {:10.4g} | {:6.2f} | {:8.4f}\n", name, r.min, r.avg, r.max,
               100 * r.avg / std::max(wall, 1e-300), 1e3 * r.avg * per_step);
  }
  fmt::print("\nComm in detail (ms per step, max over ranks; rebuild parts amortised over the {} steps):\n", ran);
  for (const char* name : {"update", "reverse", "migrate", "sort", "partition", "ghost build", "skin check"})
    if (const auto* row = row_of(name)) fmt::print("  {:<12} {:8.4f}\n", name, 1e3 * row->max * per_step);
  if (config.bound) {
    const auto* update = row_of("update");
    const auto* reverse = row_of("reverse");
    const auto* bound_update = row_of("bound update");
    const auto* bound_reverse = row_of("bound reverse");
    if (update && reverse && bound_update && bound_reverse)
      fmt::print(
          "  bound (memcpy + MPI of the same bytes, timed in the loop): update {:.4f} ms -> {:.2f}x, reverse "
          "{:.4f} ms -> {:.2f}x (avg over ranks)\n",
          1e3 * bound_update->avg * per_step, update->avg / std::max(bound_update->avg, 1e-300),
          1e3 * bound_reverse->avg * per_step, reverse->avg / std::max(bound_reverse->avg, 1e-300));
  }
  fmt::print("\nNlocal:    {:.6g} ave {:.6g} max {:.6g} min\n", owned[1], owned[2], owned[0]);
  fmt::print("Nghost:    {:.6g} ave {:.6g} max {:.6g} min\n", ghost_count[1], ghost_count[2], ghost_count[0]);
  fmt::print("Total # of neighbors = {:.0f}\nAve neighs/atom = {:.4g}\nNeighbor list builds = {}\n", pairs,
             pairs / static_cast<double>(system.atoms()), rebuilds);
  fmt::print("Ghost bytes per step and rank: update {:.4g} MB, reverse {:.4g} MB (max)\n", update_bytes[2] / 1e6,
             reverse_bytes[2] / 1e6);
  if (verify) fmt::print("checksum {:016x}\n", checksum);
  if (!writing) return;
  Json profile_rows = Json::array();
  for (const auto& row : rows)
    profile_rows.push_back(
        {{"phase", row.name}, {"min", row.min}, {"avg", row.avg}, {"max", row.max}, {"calls", row.calls}});
  Json thermo_rows = Json::array();
  for (const Thermo& t : lines)
    thermo_rows.push_back({{"step", t.step},
                           {"temp", t.temperature},
                           {"e_pair", t.e_pair},
                           {"e_mol", t.e_mol},
                           {"toteng", t.total_energy},
                           {"press", t.pressure}});
  const Json document{{"benchmark", "md"},
                      {"provenance", where},
                      {"ranks", comm.size()},
                      {"atoms", system.atoms()},
                      {"cells", config.cells},
                      {"density", config.density},
                      {"cutoff", config.cutoff},
                      {"skin", config.skin},
                      {"dt", config.dt},
                      {"neigh_every", config.neigh_every},
                      {"neigh_check", config.neigh_check},
                      {"overlap", config.overlap},
                      {"boundary_last", config.boundary_last},
                      {"timer_sync", config.timer_sync},
                      {"first_step", first},
                      {"steps", ran},
                      {"loop_seconds", wall},
                      {"ms_per_step", 1e3 * wall * per_step},
                      {"neighbor_list_builds", rebuilds},
                      {"pairs", pairs},
                      {"ghosts_per_rank", {{"min", ghost_count[0]}, {"avg", ghost_count[1]}, {"max", ghost_count[2]}}},
                      {"update_bytes_per_rank_max", update_bytes[2]},
                      {"reverse_bytes_per_rank_max", reverse_bytes[2]},
                      {"thermo", thermo_rows},
                      {"checksum", fmt::format("{:016x}", checksum)},
                      {"profile", profile_rows}};
  domex::apps::write_file(folder / "md.json", document.dump(1) + "\n");
  fmt::print("results {}\n", (folder / "md.json").string());
}

int run(int argc, char** argv) {
  domex::Comm comm{MPI_COMM_WORLD};
  CommandLine line;
  auto app = make_app(line);
  return domex::apps::run_app(
      comm, *app, argc, argv, [&] { validate(line.config, comm); }, [&] { simulate(comm, line.config, line.verify); });
}

}  // namespace

int main(int argc, char** argv) { return domex::apps::main_of("domex-md", argc, argv, run); }

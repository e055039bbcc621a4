// SPDX-License-Identifier: BSD-3-Clause
// domex-mhd: 3-D MHD magnetosphere on a deep-halo Cartesian grid.
//   mpirun -n 4 domex-mhd --cells 64 48 48 --steps 200 --depth 2 --output results/mhd
// Exit codes: 0 done, 1 the run failed (e.g. the state blew up), 2 bad arguments.

#include <fmt/format.h>
#include <mpi.h>

#include <domex/comm/provenance.hpp>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint.hpp"
#include "cli.hpp"
#include "config.hpp"
#include "output.hpp"
#include "run_app.hpp"
#include "solver.hpp"

namespace {

using namespace domex::mhd;

/// The whole run after validation. Collective; throws domex::Error on every rank.
void simulate(const domex::Comm& comm, const Config& config, bool verify) {
  namespace fs = std::filesystem;
  const bool root = comm.rank() == 0;
  const fs::path folder = config.output;
  const bool writing = !config.output.empty();
  Solver solver(comm, config);
  if (!config.restart.empty()) {
    // A missing, short or mismatched checkpoint is bad input: exit status 2
    // (the same verdict on every rank: read_checkpoint agrees on it).
    try {
      read_checkpoint(solver, config.restart);  // collective; any np, dims, depth
    } catch (const domex::Error& error) {
      throw domex::apps::InputError(error.what());
    }
    if (solver.steps() > config.steps)
      throw domex::apps::InputError(fmt::format(
          "domex-mhd: --restart {}: the checkpoint is at step {}, beyond --steps {} (--steps counts from step 0)",
          config.restart, solver.steps(), config.steps));
  }
  if (writing)  // after the checkpoint is read: bad input writes nothing
    domex::apps::create_output_folder(comm, folder);
  const long first_step = solver.steps();
  domex::Profile& profile = solver.profile();
  const auto output = [&] {
    const long step = solver.steps();
    const bool last = step == config.steps;
    if (writing && config.checkpoint_every > 0 && step > first_step && (step % config.checkpoint_every == 0 || last)) {
      auto timer = profile.phase("output");
      solver.check_state();  // never checkpoint a broken state
      write_checkpoint(solver, folder / fmt::format("checkpoint_{:06}.dmx", step));
    }
    const bool image = writing && config.image_every > 0 && (step % config.image_every == 0 || last);
    const bool snapshot = writing && config.snapshot_every > 0 && (step % config.snapshot_every == 0 || last);
    if (!image && !snapshot) return;
    auto timer = profile.phase("output");
    solver.check_state();  // never write a broken state
    if (image) {
      const domex::apps::Picture slice = slice_image(solver);
      collectively(comm, [&] {
        if (root) domex::apps::write_png(folder / fmt::format("slice_{:06}.png", step), slice);
      });
    }
    if (snapshot && config.snapshot_format == "hdf5")
      write_hdf5(solver, folder / fmt::format("snapshot_{:06}.h5", step));  // collective, with its .xmf
    else if (snapshot)
      collectively(comm, [&] { write_vtk(solver, folder / fmt::format("snapshot_{:06}.vtk", step)); });
  };

  const double mass0 = solver.mass();
  const auto [gx, gy, gz] = solver.grid().global_cells();
  const auto dims = solver.grid().dims();
  if (root)
    fmt::print(stderr, "domex-mhd: {} {}x{}x{} cells on {} ranks (dims {}x{}x{}), depth {}, dt {:.4g}\n",
               config.problem, gx, gy, gz, comm.size(), dims[0], dims[1], dims[2], solver.depth(), solver.dt());
  output();
  const double start = MPI_Wtime();
  const long every = std::max(1L, config.steps / 10);
  while (solver.steps() < config.steps) {
    solver.step();
    output();
    if (solver.steps() % every == 0 || solver.steps() == config.steps) {
      const double mass = solver.mass(), wall = MPI_Wtime() - start;
      const double eta =
          wall / static_cast<double>(solver.steps() - first_step) * static_cast<double>(config.steps - solver.steps());
      if (root)
        fmt::print(stderr, "  step {:>6}/{}  t {:8.3f}  wall {:7.2f} s  ETA {:7.2f} s  mass {:.9e}\n", solver.steps(),
                   config.steps, solver.time(), wall, eta, mass);
    }
  }
  solver.check_state();
  const double wall = comm.allreduce(MPI_Wtime() - start, MPI_MAX);
  const long ran = std::max(1L, solver.steps() - first_step);  // steps of this run (after a restart: since it)
  const double mass = solver.mass();
  const std::uint64_t checksum = solver.checksum();
  const auto rows = profile.reduce(comm);
  const auto max_of = [&](const char* name) {
    for (const auto& row : rows)
      if (row.name == name) return row.max;
    return 0.0;
  };
  const double compute = max_of("compute"), halo = max_of("halo"), boundary = max_of("boundary");
  const double efficiency = compute / std::max(compute + halo + boundary, 1e-300);
  const char* definition = "compute / (compute + halo + boundary), each the max over ranks";
  const domex::Provenance where = domex::provenance(comm);  // collective
  if (!root) return;

  fmt::print("domex-mhd  {}  {}x{}x{} cells  {} ranks  dims {}x{}x{}\n", config.problem, gx, gy, gz, comm.size(),
             dims[0], dims[1], dims[2]);
  fmt::print("  depth k          {:>12}   (one exchange per {} steps)\n", solver.depth(), solver.depth());
  fmt::print("  steps            {:>12}   exchanges {}, dt {:.4g}, t {:.4g}\n", solver.steps(), solver.exchanges(),
             solver.dt(), solver.time());
  fmt::print("  time per step    {:>12.3f} ms (wall {:.3f} s)\n", 1e3 * wall / static_cast<double>(ran),
             wall);
  for (const char* phase : {"compute", "halo", "boundary", "output"})
    fmt::print("  {:<8} (max)   {:>12.3f} s\n", phase, max_of(phase));
  fmt::print("  efficiency       {:>12.1f} %  = {}\n", 100 * efficiency, definition);
  fmt::print("  mass             {:>12.6e}   relative change {:+.3e}\n", mass, (mass - mass0) / mass0);
  if (verify) fmt::print("  checksum         {:016x}\n", checksum);
  if (!writing) return;
  // nlohmann::json: valid JSON whatever the values (NaN becomes null).
  using Json = nlohmann::ordered_json;
  Json profile_rows = Json::array();
  for (const auto& row : rows)
    profile_rows.push_back({{"phase", row.name}, {"min", row.min}, {"avg", row.avg}, {"max", row.max},
                            {"calls", row.calls}});
  const Json document{
      {"benchmark", "mhd"},
      {"provenance", where},
      {"problem", config.problem},
      {"ranks", comm.size()},
      {"dims", {dims[0], dims[1], dims[2]}},
      {"cells", {gx, gy, gz}},
      {"depth", solver.depth()},
      {"steps", solver.steps()},
      {"exchanges", solver.exchanges()},
      {"dt", solver.dt()},
      {"time", solver.time()},
      {"wall_seconds", wall},
      {"seconds_per_step", wall / static_cast<double>(ran)},
      {"compute_max", compute},
      {"halo_max", halo},
      {"boundary_max", boundary},
      {"output_max", max_of("output")},
      {"efficiency", efficiency},
      {"efficiency_definition", definition},
      {"mass_initial", mass0},
      {"mass_final", mass},
      {"checksum", fmt::format("{:016x}", checksum)},
      {"profile", profile_rows}};
  const std::string json = document.dump(1) + "\n";
  write_file(folder / "mhd.json", json);
  fmt::print("  results          {}\n", (folder / "mhd.json").string());
}

int run(int argc, char** argv) {
  domex::Comm comm{MPI_COMM_WORLD};
  CommandLine line;
  auto app = make_app(line);
  Config config;
  return domex::apps::run_app(
      comm, *app, argc, argv,
      [&] {
        config = line.finish();
        validate(config, comm);
      },
      [&] { simulate(comm, config, line.verify); });
}

}  // namespace

int main(int argc, char** argv) { return domex::apps::main_of("domex-mhd", argc, argv, run); }

// SPDX-License-Identifier: BSD-3-Clause
// domex-mps: 2-D MPS dam break (Koshizuka & Oka 1996) on domex's ghost
// particles, compared with the surge front of Martin & Moyce (1952).
//   mpirun -n 2 domex-mps --resolution 20 --output results/mps
// Exit codes: 0 done, 1 the run failed (CG did not converge, a particle
// left the box), 2 bad arguments.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>

#include <domex/comm/collective.hpp>
#include <domex/comm/provenance.hpp>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "cli.hpp"
#include "config.hpp"
#include "files.hpp"
#include "output.hpp"
#include "run_app.hpp"
#include "solver.hpp"

namespace {

using namespace domex::mps;

/// "1 rank", "2 ranks".
std::string ranks(int count) { return fmt::format("{} rank{}", count, count == 1 ? "" : "s"); }

/// The whole run after validation. Collective; throws domex::Error on every rank.
void simulate(domex::Comm& comm, const Config& config, bool verify) {
  namespace fs = std::filesystem;
  const bool root = comm.rank() == 0;
  const fs::path folder = config.output;
  const bool writing = !config.output.empty();
  if (writing)
    domex::apps::create_output_folder(comm, folder);

  Solver solver(comm, config);
  if (!config.restart.empty()) {
    solver.read_checkpoint(config.restart);
    if (solver.steps() > solver.total_steps())
      domex::apps::fail_app("domex-mps", fmt::format("--restart {}: at step {}, beyond the {} steps of this run",
                                                     config.restart, solver.steps(), solver.total_steps()));
  }
  const long first_step = solver.steps(), last_step = solver.total_steps();
  domex::Profile& profile = solver.profile();
  const auto counts = solver.counts();
  if (root)
    fmt::print(stderr,
               "domex-mps: dam break a = {} m, l0 = a/{} = {:.4g} m, {} fluid + {} wall + {} dummy particles on {} "
               "({}), dt {:.4g} s, {} steps to T = {:.3g}\n",
               config.width, config.resolution, solver.spacing(), counts[0], counts[1], counts[2], ranks(comm.size()),
               config.decomposition, solver.dt(), last_step,
               static_cast<double>(last_step) * solver.dt() * std::sqrt(2 * config.gravity / config.width));

  std::vector<std::array<double, 2>> series{{solver.dimensionless_time(), solver.front()}};
  std::vector<long> iterations;
  const auto image = [&] {
    auto timer = profile.phase("output");
    const auto picture = flow_picture(solver);
    domex::collectively(comm, [&] {
      if (root) domex::apps::write_png(folder / fmt::format("flow_{:06}.png", solver.steps()), picture);
    });
  };
  const double start = MPI_Wtime();
  const long every = std::max(1L, (last_step - first_step) / 10);
  while (solver.steps() < last_step) {
    solver.step();
    series.push_back({solver.dimensionless_time(), solver.front()});
    iterations.push_back(solver.last_cg_iterations());
    const long step = solver.steps();
    const bool last = step == last_step;
    if (writing && config.checkpoint_every > 0 && (step % config.checkpoint_every == 0 || last)) {
      auto timer = profile.phase("output");
      solver.write_checkpoint(folder / fmt::format("checkpoint_{:06}.dmx", step));
    }
    if (writing && config.snapshot_every > 0 && (step % config.snapshot_every == 0 || last)) {
      auto timer = profile.phase("output");
      const char* extension = config.snapshot_format == "hdf5" ? "h5" : "vtk";
      write_snapshot(solver, folder / fmt::format("particles_{:06}.{}", step, extension));  // .h5 with its .xmf
    }
    if (writing && config.image_every > 0 && step % config.image_every == 0 && !last) image();  // the last: below
    if (step % every == 0 || last) {
      const double wall = MPI_Wtime() - start;
      const double eta = wall / static_cast<double>(step - first_step) * static_cast<double>(last_step - step);
      if (root)
        fmt::print(stderr, "  step {:>6}/{}  T {:6.3f}  Z {:6.3f}  CG {:>5} it  wall {:7.2f} s  ETA {:7.2f} s\n", step,
                   last_step, series.back()[0], series.back()[1], solver.last_cg_iterations(), wall, eta);
    }
  }
  const double wall = comm.allreduce(MPI_Wtime() - start, MPI_MAX);
  const auto final_counts = solver.counts();
  const std::uint64_t checksum = solver.checksum();
  const auto rows = profile.reduce(comm);
  // The count exchange as the study reports it: per step the slowest rank,
  // median over steps; partners over ranks and steps.
  const auto& samples = solver.count_exchange();
  std::vector<double> seconds(samples.size());
  std::vector<int> partners(samples.size());
  for (std::size_t k = 0; k < samples.size(); ++k) {
    seconds[k] = samples[k].seconds;
    partners[k] = samples[k].partners;
  }
  comm.allreduce_in_place(std::span<double>(seconds), MPI_MAX);
  const auto all_partners = comm.allgatherv(std::span<const int>(partners));
  const auto exchange_time = quartiles(seconds);
  const auto partner_stats = quartiles(std::vector<double>(all_partners.begin(), all_partners.end()));
  // Load balance of the last step: owned particles, max over ranks / mean.
  const double owned = static_cast<double>(solver.ids().size());
  const double imbalance =
      comm.allreduce(owned, MPI_MAX) / std::max(1e-300, comm.allreduce(owned, MPI_SUM) / comm.size());
  // Ghosts of the last step per rank (what a ghost update copies), min and max over ranks.
  const auto ghosts = static_cast<long>(solver.ghost_count());
  const long ghosts_min = comm.allreduce(ghosts, MPI_MIN), ghosts_max = comm.allreduce(ghosts, MPI_MAX);
  const domex::Provenance where = domex::provenance(comm);  // collective
  if (writing) image();                                     // collective; also when the run had nothing left to do
  // The last step's count partners of every rank, for the count exchange's
  // replay under SimGrid (sim/counts.cpp --partners): written with the outputs.
  std::vector<int> partner_lengths, partner_lists;
  if (writing) {
    const std::vector<int> partners = solver.count_partners();
    partner_lengths = comm.allgather(static_cast<int>(partners.size()));
    partner_lists = comm.allgatherv(std::span<const int>(partners));
  }
  if (!root) return;

  const long ran = std::max(1L, solver.steps() - first_step);
  double cg_seconds = 0;  // the slowest rank's
  for (const auto& row : rows)
    if (row.name == "Poisson CG") cg_seconds = row.max;
  const double mean_iterations =
      static_cast<double>(solver.total_cg_iterations()) / static_cast<double>(std::max(1L, solver.solved_steps()));
  fmt::print("domex-mps  dam break (Martin & Moyce n^2 = 2)  a {} m  l0 a/{}  {}  {}  count exchange {}\n",
             config.width, config.resolution, ranks(comm.size()), config.decomposition, config.count_exchange);
  fmt::print("  particles        {:>12}   fluid {}, wall {}, dummy {} (at the start: {})\n",
             final_counts[0] + final_counts[1] + final_counts[2], final_counts[0], final_counts[1], final_counts[2],
             counts[0] + counts[1] + counts[2]);
  fmt::print("  steps            {:>12}   dt {:.4g} s, t {:.4g} s, T {:.4f}\n", solver.steps(), solver.dt(),
             solver.time(), solver.dimensionless_time());
  fmt::print("  time per step    {:>12.3f} ms (wall {:.3f} s)\n", 1e3 * wall / static_cast<double>(ran), wall);
  fmt::print("  CG iterations    {:>12}   {:.1f} per step, last {} (tolerance {:g}, preconditioner {})\n",
             solver.total_cg_iterations(), mean_iterations, solver.last_cg_iterations(), config.cg_tolerance,
             config.cg_preconditioner);
  fmt::print("  CG time          {:>12.1f} us per iteration, {:.1f} % of the step (slowest rank)\n",
             1e6 * cg_seconds / static_cast<double>(std::max(1L, solver.total_cg_iterations())),
             100 * cg_seconds / std::max(1e-300, wall));
  fmt::print("  imbalance        {:>12.3f}   max / mean owned particles per rank (last step)\n", imbalance);
  fmt::print("  ghosts           {:>12}   per rank at most, fewest {} (last step)\n", ghosts_max, ghosts_min);
  fmt::print("  phase                      min s      avg s      max s    calls\n");
  for (const auto& row : rows) {
    std::string name = row.name;
    if (name == "Poisson CG") name += fmt::format(" ({} it)", solver.total_cg_iterations());
    fmt::print("  {:<24} {:>10.4f} {:>10.4f} {:>10.4f} {:>8}\n", name, row.min, row.avg, row.max, row.calls);
  }
  fmt::print(
      "  count exchange ({}): barrier, then the exchange; slowest rank per step, median over {} steps: "
      "{:.2f} us (min {:.2f}, max {:.2f})\n",
      config.count_exchange, seconds.size(), 1e6 * exchange_time[2], 1e6 * exchange_time[0], 1e6 * exchange_time[4]);
  fmt::print("  ranks each rank exchanges with (over ranks and steps): min {} / q1 {} / median {} / q3 {} / max {}\n",
             partner_stats[0], partner_stats[1], partner_stats[2], partner_stats[3], partner_stats[4]);
  const FrontComparison comparison = compare_front(series, far_wall_front(config));
  const auto& front = comparison.rows;
  fmt::print("  surge front Z(T) against Martin & Moyce (1952), n^2 = 2; Z = max x of fluid / a from the back wall\n");
  fmt::print("      T    Z exp    Z sim   deviation   | T shifted +0.175: Z sim  deviation\n");
  // A T the run did not reach (--end-time, --steps) shows as "-", not nan;
  // one at or past the impact on the far wall as "wall".
  const auto cells = [](double Z, double deviation) {
    if (std::isnan(Z)) return fmt::format("{:>7}  {:>10}", "-", "-");
    if (std::isnan(deviation)) return fmt::format("{:7.3f}  {:>10}", Z, "wall");
    return fmt::format("{:7.3f}  {:+8.1f} %", Z, 100 * deviation);
  };
  for (const auto& row : front) {
    if (std::isnan(row.Z) && std::isnan(row.Z_shifted)) continue;
    fmt::print("  {:5.2f}  {:7.2f}  {}   |                    {}\n", row.T, row.Z_experiment, cells(row.Z, row.deviation),
               cells(row.Z_shifted, row.deviation_shifted));
  }
  if (!std::isnan(comparison.impact_T))
    fmt::print(
        "  the front reached the far wall (Z >= {:.3f}, within 1.5 l0 of its first layer) at T = {:.3f}: no comparison "
        "from there (\"wall\")\n",
        comparison.impact_Z, comparison.impact_T);
  if (verify) fmt::print("  checksum         {:016x}\n", checksum);
  if (!writing) return;
  using Json = nlohmann::ordered_json;
  Json profile_rows = Json::array();
  for (const auto& row : rows)
    profile_rows.push_back(
        {{"phase", row.name}, {"min", row.min}, {"avg", row.avg}, {"max", row.max}, {"calls", row.calls}});
  Json front_rows = Json::array();
  for (const auto& row : front)
    front_rows.push_back({{"T", row.T},
                          {"Z_experiment", row.Z_experiment},
                          {"Z", row.Z},
                          {"deviation", row.deviation},
                          {"Z_shifted_0.175", row.Z_shifted},
                          {"deviation_shifted_0.175", row.deviation_shifted}});
  Json series_rows = Json::array();
  for (const auto& [T, Z] : series) series_rows.push_back({T, Z});
  const Json document{
      {"benchmark", "mps"},
      {"provenance", where},
      {"ranks", comm.size()},
      {"decomposition", config.decomposition},
      {"count_exchange", config.count_exchange},
      {"width", config.width},
      {"resolution", config.resolution},
      {"spacing", solver.spacing()},
      {"particles", {{"fluid", final_counts[0]}, {"wall", final_counts[1]}, {"dummy", final_counts[2]}}},
      {"steps", solver.steps()},
      {"dt", solver.dt()},
      {"T", solver.dimensionless_time()},
      {"wall_seconds", wall},
      {"imbalance", imbalance},
      {"ghosts_per_rank", {{"min", ghosts_min}, {"max", ghosts_max}}},
      {"cg_iterations_total", solver.total_cg_iterations()},
      {"cg_iterations_per_step", iterations},
      {"cg_tolerance", config.cg_tolerance},
      {"cg_preconditioner", config.cg_preconditioner},
      {"cg_seconds_per_iteration", cg_seconds / static_cast<double>(std::max(1L, solver.total_cg_iterations()))},
      {"count_exchange_median_seconds", exchange_time[2]},
      {"exchange_partners",
       {{"min", partner_stats[0]},
        {"q1", partner_stats[1]},
        {"median", partner_stats[2]},
        {"q3", partner_stats[3]},
        {"max", partner_stats[4]}}},
      {"front_vs_martin_moyce", front_rows},
      {"front_impact_T", std::isnan(comparison.impact_T) ? Json(nullptr) : Json(comparison.impact_T)},
      {"front_T_Z", series_rows},
      {"checksum", fmt::format("{:016x}", checksum)},
      {"profile", profile_rows}};
  domex::apps::write_file(folder / "mps.json", document.dump(1) + "\n");
  std::string partners_text = fmt::format(
      "# domex-mps: the ranks each rank sends ghost counts to at step {} ({}, {}); line r: rank r's\n",
      solver.steps(), ranks(comm.size()), config.decomposition);
  for (std::size_t r = 0, at = 0; r < partner_lengths.size(); at += static_cast<std::size_t>(partner_lengths[r++]))
    partners_text += fmt::format(
        "{}\n", fmt::join(std::span(partner_lists).subspan(at, static_cast<std::size_t>(partner_lengths[r])), " "));
  domex::apps::write_file(folder / "count_partners.txt", partners_text);
  domex::apps::write_file(folder / "front.csv", front_csv(series, first_step, comparison));
  const double far_wall = 4 + 1.0 / static_cast<double>(config.resolution);  // its first layer, x = 4a + l0
  domex::apps::write_png(
      folder / "front.png",
      front_picture(series, far_wall, fmt::format("MPS a/{}", config.resolution),
                    fmt::format("surge front Z(T), MPS a/{} vs Martin & Moyce (1952)", config.resolution)));
  fmt::print("  results          {} (front.csv, front.png, flow_*.png beside it)\n", (folder / "mps.json").string());
}

int run(int argc, char** argv) {
  domex::Comm comm{MPI_COMM_WORLD};
  CommandLine line;
  auto app = make_app(line);
  return domex::apps::run_app(
      comm, *app, argc, argv, [&] { validate(line.config, comm); }, [&] { simulate(comm, line.config, line.verify); });
}

}  // namespace

int main(int argc, char** argv) { return domex::apps::main_of("domex-mps", argc, argv, run); }

// SPDX-License-Identifier: BSD-3-Clause
// domex-bench tree: tree-code gravity of N particles (uniform cube, Plummer
// sphere or planetary ring) decomposed by multisection, per LET mode: the
// phase table, interactions per particle, interactions/s/core of the kernel
// and of the whole step, and the force error against a direct sum.
//
//   mpirun -n 2 domex-bench tree --particles 1000000 --lets p2p_fast alltoallv --json tree.json

#include "command.hpp"
#include "results.hpp"
#include "timing.hpp"

#include <domex/decompose/multisection.hpp>
#include <domex/migrate/migrate.hpp>
#include <domex/tree/tree.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

// Named per file: the files are compiled as one (UNITY_BUILD, CMakeLists.txt).
namespace domex::bench::tree_command {
namespace {

struct TreeBenchOptions {
  std::size_t particles = 100000;  ///< in total
  std::string distribution = "uniform";
  std::vector<double> thetas{0.5};
  /// Runs with TreeOptions::target_error (theta, opening, moments chosen by
  /// the calibration table), after the theta runs.
  std::vector<double> target_errors;
  std::string error_measure = "per_particle";
  bool at_fdps_error = false;  ///< add a run at FDPS's per-particle error for the distribution
  int leaf_limit = TreeOptions{}.leaf_limit;
  int group_limit = TreeOptions{}.group_limit;
  bool merge_groups = TreeOptions{}.merge_groups;
  bool quadrupole = false;
  std::string opening = "cell";
  std::vector<std::string> lets{"p2p_fast"};
  int reuse = 1;
  int steps = 3;
  int rebalance_every = 1;  ///< decompose + migrate every this many steps
  int threads = 0;
  double softening = 1.0 / 32;
  bool fp64_accumulation = false;
  std::size_t error_samples = 2000;  ///< 0: no force error
  std::size_t check_samples = TreeOptions{}.check_samples;  ///< TreeOptions::check_samples
  std::uint64_t seed = 2024;         ///< rank r draws its particles from the stream seed + r
  std::string json;
};

Box root_of(const std::string& distribution) {
  if (distribution == "uniform") return {{0, 0, 0}, {1, 1, 1}};
  if (distribution == "plummer") return {{-10, -10, -10}, {10, 10, 10}};
  if (distribution == "ring") return {{-2, -2, -2}, {2, 2, 2}};
  bad_argument("domex-bench tree", "unknown distribution '" + distribution + "' (uniform, plummer, ring)");
}

/// This rank's share of the set (its own random stream), total mass 1.
void generate(const Comm& comm, const TreeBenchOptions& options, std::vector<Point>& x, std::vector<double>& m) {
  const auto size = static_cast<std::size_t>(comm.size()), rank = static_cast<std::size_t>(comm.rank());
  const std::size_t count = options.particles * (rank + 1) / size - options.particles * rank / size;
  std::mt19937_64 random(options.seed + rank);
  std::uniform_real_distribution<double> u(0, 1);
  x.resize(count);
  m.assign(count, 1.0 / static_cast<double>(options.particles));
  constexpr double two_pi = 6.283185307179586;
  for (Point& p : x) {
    if (options.distribution == "uniform") {
      p = {u(random), u(random), u(random)};
    } else if (options.distribution == "plummer") {
      // Henon units, scale radius 3 pi / 16, truncated at r = 9.
      double r;
      do r = 3 * 3.141592653589793 / 16 / std::sqrt(std::pow(std::max(u(random), 1e-12), -2.0 / 3.0) - 1.0);
      while (r > 9);
      const double cos_theta = 2 * u(random) - 1, phi = two_pi * u(random), s = std::sqrt(1 - cos_theta * cos_theta);
      p = {r * s * std::cos(phi), r * s * std::sin(phi), r * cos_theta};
    } else {
      // Planetary ring: radius 1, width 0.1, thickness 0.001 (uniform in area).
      const double r = std::sqrt(0.95 * 0.95 + (1.05 * 1.05 - 0.95 * 0.95) * u(random)), phi = two_pi * u(random);
      p = {r * std::cos(phi), r * std::sin(phi), 0.001 * (u(random) - 0.5)};
    }
  }
}

struct Row {
  std::string let;
  double theta;
  double target_error;  ///< 0: theta given
  std::string opening;
  bool quadrupole;
  double cell_interactions_per_particle;
  std::vector<Profile::Row> phases;  // seconds per step
  double step_s;                     // slowest rank, per step
  double interactions_per_particle;
  double kernel_rate, step_rate;  // interactions / s / core
  double error_median, error_p99;          ///< per particle, |da| / |a|
  double error_rms_median, error_rms_p99;  ///< |da| / rms |a|
  std::size_t let_messages, let_items;  // per rank, max
  int threads;
  double build_parts[4];  // keys, sort, link (local + global tree), moments; slowest rank, per step
};

/// One configuration: the given theta, or (target_error > 0) what the
/// calibration table chooses for that error in `measure`.
Row run_configuration(Comm& comm, const TreeBenchOptions& options, LetMode let, double theta, double target_error,
                      ErrorMeasure measure) {
  const Box root = root_of(options.distribution);
  std::vector<Point> x;
  std::vector<double> m;
  generate(comm, options, x, m);
  Multisection domains(comm, root);
  TreeForce tree(comm, {.theta = theta,
                        .opening = opening_from_string(options.opening),
                        .leaf_limit = options.leaf_limit,
                        .group_limit = options.group_limit,
                        .merge_groups = options.merge_groups,
                        .quadrupole = options.quadrupole,
                        .let = let,
                        .reuse = options.reuse,
                        .softening = options.softening,
                        .fp64_accumulation = options.fp64_accumulation,
                        .threads = options.threads,
                        .root = root,
                        .target_error = target_error,
                        .error_measure = measure,
                        .check_samples = options.check_samples});
  std::vector<Point> a;
  Profile profile;
  double step_total = 0, interactions = 0, cell_interactions = 0, kernel_core_s = 0, targets = 0;
  double build_parts[4] = {0, 0, 0, 0};  // keys, sort, link, moments
  std::size_t let_messages = 0, let_items = 0;
  // One untimed step first (page faults, first allocations); then `steps`.
  for (int step = -1; step < options.steps; ++step) {
    Profile step_profile;
    const double seconds = time_collective(comm, [&] {
      // The particles do not move, but the decomposition and migration run
      // every step as in a simulation (FDPS's sample does the same).
      // With list reuse the particle set must stay put between the calls
      // that build the lists (call = step + 1: the untimed step is call 0).
      const int reuse = options.reuse, every = reuse * ((std::max(1, options.rebalance_every) + reuse - 1) / reuse);
      // One rank owns the whole box: nothing to balance or move.
      if (comm.size() > 1 && (step + 1) % every == 0) {
        {
          auto timer = step_profile.phase("decompose");
          domains.rebalance(x);
        }
        auto timer = step_profile.phase("exchange particles");
        MigrationPlan plan(comm, domains, x);
        migrate(plan, x, m);
      }
      a.resize(x.size());
      tree.compute(x, m, a, step_profile);
    });
    if (step < 0) continue;
    step_total += seconds;
    const TreeStats& stats = tree.stats();
    interactions += static_cast<double>(stats.epj_interactions + stats.spj_interactions);
    cell_interactions += static_cast<double>(stats.spj_interactions);
    targets += static_cast<double>(stats.targets);
    kernel_core_s += stats.kernel_s * tree.threads();
    build_parts[0] += stats.keys_s, build_parts[1] += stats.sort_s, build_parts[2] += stats.link_s,
        build_parts[3] += stats.moments_s;
    let_messages = std::max(let_messages, stats.let_messages_sent);
    let_items = std::max(let_items, stats.let_items_sent);
    for (const char* name : {"decompose", "exchange particles", "build tree", "build LET", "exchange LET", "traverse",
                             "kernel", "other", "imbalance"})
      profile.add(name, step_profile.local_seconds(name));
  }
  double sums[5] = {interactions, targets, kernel_core_s, static_cast<double>(tree.threads()), cell_interactions};
  comm.allreduce_in_place(std::span<double>(sums), MPI_SUM);
  comm.allreduce_in_place(std::span<double>(build_parts), MPI_MAX);
  Row row;
  for (int k = 0; k < 4; ++k) row.build_parts[k] = build_parts[k] / options.steps;
  row.let = std::string(to_string(let));
  row.theta = tree.options().theta;
  row.target_error = target_error;
  row.opening = std::string(to_string(tree.options().opening));
  row.quadrupole = tree.options().quadrupole;
  row.phases = profile.reduce(comm);
  for (auto& phase : row.phases) {
    phase.min /= options.steps;
    phase.avg /= options.steps;
    phase.max /= options.steps;
  }
  row.step_s = step_total / options.steps;
  row.interactions_per_particle = sums[1] > 0 ? sums[0] / sums[1] : 0;
  row.cell_interactions_per_particle = sums[1] > 0 ? sums[4] / sums[1] : 0;
  row.kernel_rate = sums[2] > 0 ? sums[0] / sums[2] : 0;
  row.step_rate = sums[0] / (step_total * sums[3]);
  row.threads = tree.threads();
  unsigned long long counts[2] = {let_messages, let_items};
  comm.allreduce_in_place(std::span<unsigned long long>(counts), MPI_MAX);
  row.let_messages = counts[0];
  row.let_items = counts[1];
  row.error_median = row.error_p99 = row.error_rms_median = row.error_rms_p99 = -1;
  if (options.error_samples > 0) {
    const SampledForceError error = sampled_force_error(comm, x, m, a, options.error_samples, options.softening);
    row.error_median = error.median;
    row.error_p99 = error.p99;
    row.error_rms_median = error.rms_median;
    row.error_rms_p99 = error.rms_p99;
  }
  return row;
}

/// The gravity kernel alone on one core: 64 targets x 2048 sources (fits L1),
/// repeated for ~0.2 s; interactions per second, best of 3.
double kernel_alone_rate(double softening) {
#ifdef DOMEX_SMPI
  // Under SMPI (sim/run) the host's computation takes no simulated time, so
  // this loop, timed with MPI_Wtime, would not end: not measured (0).
  static_cast<void>(softening);
  return 0;
#endif
  const std::size_t targets = 64, sources = 2048;
  std::mt19937 random(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> tx(targets), ty(targets), tz(targets), ax(targets), ay(targets), az(targets);
  std::vector<float> sx(sources), sy(sources), sz(sources), sm(sources);
  for (auto* v : {&tx, &ty, &tz}) for (float& f : *v) f = 0.01f * u(random);
  for (auto* v : {&sx, &sy, &sz}) for (float& f : *v) f = u(random);
  for (float& f : sm) f = 1e-6f * (1.5f + u(random));
  const auto eps2 = static_cast<float>(softening * softening);
  double best = 0;
  for (int trial = 0; trial < 3; ++trial) {
    int calls = 0;
    const double start = MPI_Wtime();
    double seconds = 0;
    do {
      for (int k = 0; k < 20; ++k, ++calls) gravity_kernel({tx, ty, tz, ax, ay, az}, {sx, sy, sz, sm}, eps2);
      seconds = MPI_Wtime() - start;
    } while (seconds < 0.07);
    best = std::max(best, calls * static_cast<double>(targets * sources) / seconds);
  }
  return best;
}

void run_tree(const TreeBenchOptions& options) {
  Comm comm{MPI_COMM_WORLD};
  std::vector<Row> rows;
  if (comm.rank() == 0)
    std::printf("domex-bench tree: %d ranks, %zu %s particles, leaf %d, group %d%s, %s, opening test %s, reuse %d, "
                "%d steps, kernel %s\n",
                comm.size(), options.particles, options.distribution.c_str(), options.leaf_limit, options.group_limit,
                options.merge_groups ? " (siblings merged)" : " (unmerged)",
                options.quadrupole ? "quadrupole" : "monopole", options.opening.c_str(), options.reuse, options.steps,
                gravity_kernel_target().c_str());
  // Every rank measures (each on its own core); rank 0 reports the slowest.
  const double kernel_alone = comm.allreduce(kernel_alone_rate(options.softening), MPI_MIN);
  if (comm.rank() == 0)
    std::printf("gravity kernel alone (64 targets x 2048 sources in L1, %s): %.3g interactions/s/core\n",
                gravity_kernel_target().c_str(), kernel_alone);
  // Runs: the thetas given, then the target errors (in the measure given),
  // then FDPS's per-particle error for the distribution.
  struct Run {
    double theta, target_error;
    ErrorMeasure measure;
  };
  std::vector<Run> runs;
  const ErrorMeasure measure = error_measure_from_string(options.error_measure);
  for (double theta : options.thetas) runs.push_back({theta, 0, measure});
  for (double target : options.target_errors) runs.push_back({options.thetas.front(), target, measure});
  // FDPS 7.1 at theta 0.5, median per-particle error of 1e6 particles (../shared/ANCHORS.md).
  const double fdps_error = options.distribution == "uniform" ? 4.8e-3 : options.distribution == "plummer" ? 4.7e-4 : 0;
  if (options.at_fdps_error && fdps_error > 0)
    runs.push_back({options.thetas.front(), fdps_error, ErrorMeasure::per_particle});
  if (options.at_fdps_error && fdps_error == 0 && comm.rank() == 0)
    std::printf("no FDPS per-particle error for a %s (per-particle errors of a ring are meaningless)\n",
                options.distribution.c_str());
  for (const Run& run : runs)
    for (const auto& name : options.lets) {
      Row row = run_configuration(comm, options, let_mode_from_string(name), run.theta, run.target_error, run.measure);
      if (comm.rank() == 0) {
        if (row.target_error > 0)
          std::printf("\ntarget error %.3g (%s): chose theta %.3f, opening %s, %s", row.target_error,
                      std::string(to_string(run.measure)).c_str(), row.theta, row.opening.c_str(),
                      row.quadrupole ? "quadrupole" : "monopole");
        std::printf("\n%s theta %.2f, %d thread(s) per rank: step %.1f ms, %.0f interactions/particle (%.0f cells), "
                    "kernel %.3g and step %.3g interactions/s/core, LET to %zu ranks (%zu items, max rank)",
                    row.let.c_str(), row.theta, row.threads, 1e3 * row.step_s, row.interactions_per_particle,
                    row.cell_interactions_per_particle, row.kernel_rate, row.step_rate, row.let_messages,
                    row.let_items);
        if (row.error_median >= 0)
          std::printf(", force error median %.3g p99 %.3g (per particle; by rms |a|: %.3g / %.3g)", row.error_median,
                      row.error_p99, row.error_rms_median, row.error_rms_p99);
        std::printf("\nbuild tree (slowest rank): keys %.2f ms, sort %.2f ms, link %.2f ms, moments %.2f ms",
                    1e3 * row.build_parts[0], 1e3 * row.build_parts[1], 1e3 * row.build_parts[2],
                    1e3 * row.build_parts[3]);
        std::printf("\n%-20s %10s %10s %10s\n", "phase (ms/step)", "min", "avg", "max");
        for (const auto& phase : row.phases)
          std::printf("%-20s %10.2f %10.2f %10.2f\n", phase.name.c_str(), 1e3 * phase.min, 1e3 * phase.avg,
                      1e3 * phase.max);
        std::fflush(stdout);
      }
      rows.push_back(std::move(row));
    }
  // Side by side: work and error of every run (theta 0.5 beside the runs at
  // a target error, FDPS's included).
  if (comm.rank() == 0 && rows.size() > 1) {
    std::printf("\n%-10s %-14s %6s %-10s %-10s %12s %11s %11s\n", "LET", "target", "theta", "opening", "moments",
                "inter./part.", "err median", "err rms med");
    for (const Row& r : rows)
      std::printf("%-10s %-14s %6.3f %-10s %-10s %12.0f %11.3g %11.3g\n", r.let.c_str(),
                  r.target_error > 0 ? fmt::format("{:.3g}", r.target_error).c_str() : "-", r.theta, r.opening.c_str(),
                  r.quadrupole ? "quadrupole" : "monopole", r.interactions_per_particle, r.error_median,
                  r.error_rms_median);
  }
  const Json where = provenance_json(comm);
  if (comm.rank() == 0 && !options.json.empty()) {
    Json list = Json::array();
    for (const Row& r : rows) {
      Json phases = Json::array();
      for (const auto& phase : r.phases)
        phases.push_back({{"name", phase.name}, {"min_s", phase.min}, {"avg_s", phase.avg}, {"max_s", phase.max}});
      // error_median / error_p99 < 0: not measured (written as null).
      const auto measured = [](double value) { return value >= 0 ? Json(value) : Json(nullptr); };
      list.push_back({{"let", r.let},
                      {"theta", r.theta},
                      {"target_error", r.target_error},
                      {"opening", r.opening},
                      {"quadrupole", r.quadrupole},
                      {"cell_interactions_per_particle", r.cell_interactions_per_particle},
                      {"threads", r.threads},
                      {"step_s", r.step_s},
                      {"interactions_per_particle", r.interactions_per_particle},
                      {"kernel_interactions_per_s_per_core", r.kernel_rate},
                      {"step_interactions_per_s_per_core", r.step_rate},
                      {"let_messages", r.let_messages},
                      {"let_items", r.let_items},
                      {"error_median", measured(r.error_median)},
                      {"error_p99", measured(r.error_p99)},
                      {"error_rms_median", measured(r.error_rms_median)},
                      {"error_rms_p99", measured(r.error_rms_p99)},
                      {"build_keys_s", r.build_parts[0]},
                      {"build_sort_s", r.build_parts[1]},
                      {"build_link_s", r.build_parts[2]},
                      {"build_moments_s", r.build_parts[3]},
                      {"phases", phases}});
    }
    write_results(options.json, "tree", where,
                  {{"ranks", comm.size()},
                   {"particles", options.particles},
                   {"distribution", options.distribution},
                   {"seed", options.seed},
                   {"leaf_limit", options.leaf_limit},
                   {"group_limit", options.group_limit},
                   {"merge_groups", options.merge_groups},
                   {"quadrupole", options.quadrupole},
                   {"opening", options.opening},
                   {"reuse", options.reuse},
                   {"steps", options.steps},
                   {"kernel", gravity_kernel_target()},
                   {"kernel_alone_interactions_per_s_per_core", kernel_alone},
                   {"rows", list}},
                  "domex-bench tree");
  }
}

const Registration registration{[](CLI::App& app) {
  auto options = std::make_shared<TreeBenchOptions>();
  auto* command = app.add_subcommand("tree", "tree-code gravity with LET exchange: phases, interaction rates, error");
  command->add_option("--particles", options->particles, "particles in total")->capture_default_str();
  command->add_option("--distribution", options->distribution, "uniform, plummer or ring")->capture_default_str();
  command->add_option("--thetas", options->thetas, "opening angles")->capture_default_str();
  command->add_option("--target-errors", options->target_errors,
                      "force errors to reach (TreeOptions::target_error; theta, opening and moments chosen)");
  command->add_option("--error-measure", options->error_measure, "measure of --target-errors: per_particle or rms")
      ->check(CLI::IsMember({"per_particle", "rms"}))
      ->capture_default_str();
  command->add_flag("--at-fdps-error", options->at_fdps_error,
                    "also run at FDPS's median per-particle error (4.8e-3 uniform, 4.7e-4 Plummer)");
  command->add_option("--leaf-limit", options->leaf_limit, "items per leaf")->capture_default_str();
  command->add_option("--group-limit", options->group_limit, "targets per interaction list")->capture_default_str();
  command->add_flag("--merge-groups,!--no-merge-groups", options->merge_groups,
                    "merge consecutive sibling group cells up to --group-limit (TreeOptions::merge_groups, the "
                    "default); --no-merge-groups: each group a cell, as FDPS's")
      ->capture_default_str();
  command->add_flag("--quadrupole", options->quadrupole, "quadrupole moments");
  command->add_option("--opening", options->opening,
                      "opening test length: cell (Morton cell edge or corner b_max) or particles (b_max)")
      ->check(CLI::IsMember({"cell", "particles"}))
      ->capture_default_str();
  command->add_option("--lets", options->lets, "LET modes: alltoallv p2p_exact p2p_fast sparse")
      ->capture_default_str();
  command->add_option("--reuse", options->reuse, "build the interaction lists every this many steps")
      ->capture_default_str();
  command->add_option("--steps", options->steps, "timed steps per configuration (after one untimed)")
      ->capture_default_str();
  command->add_option("--rebalance-every", options->rebalance_every,
                      "decompose and migrate every this many steps (always on list-building steps)")
      ->capture_default_str();
  command->add_option("--threads", options->threads, "OpenMP threads per rank (0: cores / ranks on the node)")
      ->capture_default_str();
  command->add_option("--softening", options->softening, "Plummer softening length")->capture_default_str();
  command->add_flag("--fp64-accumulation", options->fp64_accumulation, "fp64 sums of fp32 partial sums");
  command->add_option("--error-samples", options->error_samples, "particles checked against a direct sum (0: none)")
      ->capture_default_str();
  command->add_option("--check-samples", options->check_samples,
                      "with --target-errors: targets sampled to check the table's choice on the input "
                      "(TreeOptions::check_samples; 0: the table alone)")
      ->capture_default_str();
  command->add_option("--seed", options->seed, "rank r's particles come from the random stream seed + r")
      ->capture_default_str();
  command->add_option("--json", options->json, "write the rows as JSON to this file");
  command->callback([options] { run_tree(*options); });
}};

}  // namespace
}  // namespace domex::bench::tree_command

// SPDX-License-Identifier: BSD-3-Clause
// domex-bench migrate: particles that drift and cluster, decomposed by
// multisection and migrated every step, by the neighbour-only path and by the
// general sparse exchange with each algorithm. Table + JSON.
//
//   mpirun -n 8 domex-bench migrate --json migrate.json

#include "command.hpp"
#include "results.hpp"
#include "timing.hpp"

#include <domex/migrate/migrate.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

// Named per file: the files are compiled as one (UNITY_BUILD, CMakeLists.txt).
namespace domex::bench::migrate_command {
namespace {

struct MigrateOptions {
  std::size_t particles = 4000;  ///< per rank
  int steps = 40;
  int rebalance_every = 5;
  double step = 0.002;  ///< largest displacement per step and axis
  std::vector<double> clustering{0.0, 0.5, 0.9};
  std::vector<int> divisions{0, 0, 0};  ///< domains per axis; 0: chosen
  std::vector<std::string> paths{"neighbour", "alltoall", "nbx", "reduce_scatter", "automatic"};
  std::string json;
};

struct Particle {
  Point x;
  double mass;
  std::uint64_t id;
};

/// Fraction `clustering` of the particles in two Plummer-like clumps, the
/// rest uniform in the unit box; deterministic per rank.
std::vector<Particle> initial(const Comm& comm, std::size_t count, double clustering) {
  std::mt19937_64 random(1000 + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Particle> particles;
  const Point centres[2] = {{0.3, 0.3, 0.4}, {0.7, 0.65, 0.55}};
  for (std::size_t i = 0; i < count; ++i) {
    Point x{u(random), u(random), u(random)};
    if (u(random) < clustering) {
      const Point& c = centres[i % 2];
      const double r = std::min(0.04 / std::sqrt(std::pow(std::max(u(random), 1e-9), -2.0 / 3.0) - 1.0), 0.25);
      const double cos_theta = 2 * u(random) - 1, phi = 6.283185307179586 * u(random);
      const double s = std::sqrt(1 - cos_theta * cos_theta);
      x = {c[0] + r * s * std::cos(phi), c[1] + r * s * std::sin(phi), c[2] + r * cos_theta};
      for (double& v : x) v -= std::floor(v);
    }
    particles.push_back({x, 1.0, static_cast<std::uint64_t>(comm.rank()) * count + i});
  }
  return particles;
}

struct Row {
  double clustering;
  std::string path;
  double decompose_s, migrate_s;  // medians per step (decompose: per rebalance)
  unsigned long long contacted, messages_sent, messages_received, bytes_sent;
  double imbalance;
  int general_steps;  // steps that needed the general exchange
};

void run_migrate(const MigrateOptions& options) {
  Comm comm{MPI_COMM_WORLD};
  std::vector<Row> rows;
  if (comm.rank() == 0)
    std::fprintf(stderr, "domex-bench migrate: %d ranks, %zu particles per rank, %d steps\n", comm.size(),
                 options.particles, options.steps);
  for (double clustering : options.clustering)
    for (const auto& path : options.paths) {
      MigrationOptions migration;
      if (path != "neighbour") migration = {.algorithm = algorithm_from_string(path), .neighbour_only = false};
      auto particles = initial(comm, options.particles, clustering);
      Multisection decomposition(comm, {{0, 0, 0}, {1, 1, 1}},
                                 {.divisions = {options.divisions[0], options.divisions[1], options.divisions[2]},
                                  .periodic = {true, true, true},
                                  .neighbour_margin = options.step});
      {  // untimed: the particles start on the wrong ranks; send them home first
        std::vector<Point> start;
        for (const auto& p : particles) start.push_back(p.x);
        decomposition.rebalance(start);
        MigrationPlan settle(comm, decomposition, start);
        domex::migrate(settle, particles);
      }
      std::mt19937_64 random(7 + static_cast<std::uint64_t>(comm.rank()));
      std::uniform_real_distribution<double> u(-options.step, options.step);
      std::vector<double> decompose, migrate_times;
      unsigned long long worst[4] = {0, 0, 0, 0};
      int general = 0;
      std::vector<Point> positions;
      for (int t = 0; t < options.steps; ++t) {
        positions.clear();
        for (const auto& p : particles) positions.push_back(p.x);
        if (t % options.rebalance_every == 0)
          decompose.push_back(time_collective(comm, [&] { decomposition.rebalance(positions); }));
        for (auto& p : particles)
          for (double& v : p.x) {
            v += u(random);
            v -= std::floor(v);  // periodic unit box
          }
        positions.clear();
        for (const auto& p : particles) positions.push_back(p.x);
        std::unique_ptr<MigrationPlan> plan;
        migrate_times.push_back(time_collective(comm, [&] {
          plan = std::make_unique<MigrationPlan>(comm, decomposition, positions, migration);
          domex::migrate(*plan, particles);
        }));
        general += plan->neighbour_path() ? 0 : 1;
        const unsigned long long now[4] = {plan->contacted().size(), plan->stats().messages_sent,
                                           plan->stats().messages_received, plan->stats().bytes_sent};
        for (int k = 0; k < 4; ++k) worst[k] = std::max(worst[k], now[k]);
      }
      comm.allreduce_in_place(std::span<unsigned long long>(worst), MPI_MAX);
      const double count = static_cast<double>(particles.size());
      const double imbalance = comm.allreduce(count, MPI_MAX) / (comm.allreduce(count, MPI_SUM) / comm.size());
      rows.push_back({clustering, path, summarize(decompose).median, summarize(migrate_times).median, worst[0],
                      worst[1], worst[2], worst[3], imbalance, general});
      if (comm.rank() == 0) std::fprintf(stderr, "  clustering %.2f, %-15s done\n", clustering, path.c_str());
    }
  const Json where = provenance_json(comm);
  if (comm.rank() != 0) return;
  std::printf("particle migration, %d ranks, %zu particles per rank, %d steps, displacement <= %g per step,\n"
              "domains %d x %d x %d (0: chosen)\n"
              "%-10s %-15s %14s %13s %10s %9s %9s %11s %10s %8s\n",
              comm.size(), options.particles, options.steps, options.step, options.divisions[0],
              options.divisions[1], options.divisions[2], "clustering", "path", "decompose[ms]",
              "migrate[ms]", "contacted", "msgs out", "msgs in", "bytes out", "imbalance", "general");
  for (const auto& r : rows)
    std::printf("%-10.2f %-15s %14.3f %13.3f %10llu %9llu %9llu %11llu %10.3f %8d\n", r.clustering, r.path.c_str(),
                1e3 * r.decompose_s, 1e3 * r.migrate_s, r.contacted, r.messages_sent, r.messages_received,
                r.bytes_sent, r.imbalance, r.general_steps);
  std::printf("(times: median over steps of the slowest rank; contacted/msgs/bytes: max over ranks and steps;\n"
              " general: steps that needed the general exchange; msgs count non-empty messages: the neighbour\n"
              " path also sends an empty message to each neighbour that gets no particle)\n");
  if (!options.json.empty()) {
    Json list = Json::array();
    for (const auto& r : rows)
      list.push_back({{"clustering", r.clustering}, {"path", r.path}, {"decompose_s", r.decompose_s},
                      {"migrate_s", r.migrate_s}, {"contacted", r.contacted}, {"messages_sent", r.messages_sent},
                      {"messages_received", r.messages_received}, {"bytes_sent", r.bytes_sent},
                      {"imbalance", r.imbalance}, {"general_steps", r.general_steps}});
    write_results(options.json, "migrate", where,
                  {{"ranks", comm.size()}, {"particles_per_rank", options.particles}, {"steps", options.steps},
                   {"rows", list}},
                  "domex-bench migrate");
  }
}

const Registration registration{[](CLI::App& app) {
  auto options = std::make_shared<MigrateOptions>();
  auto* command = app.add_subcommand("migrate", "decomposition + particle migration: neighbour path vs general");
  command->add_option("--particles", options->particles, "particles per rank")->capture_default_str();
  command->add_option("--steps", options->steps, "steps per row")->capture_default_str();
  command->add_option("--rebalance-every", options->rebalance_every, "steps between rebalances")
      ->capture_default_str();
  command->add_option("--step", options->step, "largest displacement per step and axis")->capture_default_str();
  command->add_option("--clustering", options->clustering, "fractions of particles in clumps")
      ->capture_default_str();
  command->add_option("--divisions", options->divisions, "domains per axis (0: chosen)")
      ->expected(3)
      ->capture_default_str();
  command->add_option("--paths", options->paths, "neighbour, or a sparse-exchange algorithm for the general path")
      ->capture_default_str();
  command->add_option("--json", options->json, "write the rows as JSON to this file");
  command->callback([options] { run_migrate(*options); });
}};

}  // namespace
}  // namespace domex::bench::migrate_command

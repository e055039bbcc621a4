// SPDX-License-Identifier: BSD-3-Clause
// domex-bench decompose: Multisection rebalance per cut method and sample
// budget, on uniform, clustered and ring (cylindrical) particles: time per
// rebalance, what a rank receives and sorts, the imbalance after migration,
// and the time of a migration step in which almost nothing leaves. Table + JSON.
//
//   mpirun -n 8 domex-bench decompose --json decompose_8.json
//   python3 tools/plot_decompose.py decompose_*.json -o decompose.png

#include "command.hpp"
#include "results.hpp"
#include "timing.hpp"

#include <domex/migrate/migrate.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <vector>

// Named per file: the files are compiled as one (UNITY_BUILD, CMakeLists.txt).
namespace domex::bench::decompose_command {
namespace {

struct DecomposeOptions {
  std::size_t particles = 100000;  ///< per rank
  int repeats = 9;                 ///< timed rebalances (and migration steps) per row
  std::vector<std::string> inputs{"uniform", "clustered", "ring"};
  std::vector<std::string> methods{"histogram", "sampled", "global"};
  std::vector<std::size_t> budgets{64, 1024};  ///< samples per rank (global) or per part (sampled)
  double clustering = 0.9;                     ///< fraction in clumps for "clustered"
  double drift = 1e-4;                         ///< largest displacement per migration step and axis
  std::string json;
};

struct Particle {
  Point x;
  std::uint64_t id;
};

/// Deterministic per rank. uniform: the unit box, each rank's particles in
/// its own domain of the starting (equal-volume) decomposition `start`, so
/// that settling moves particles between neighbours only (drawn from the
/// whole box, the first migration would be an all-to-all of P^2 messages,
/// which no simulation at thousands of ranks gets through); clustered: the
/// unit box, drawn from the whole of it (as migrate's --clustering: two
/// Plummer-like clumps); ring: r in [0.8, 1.2), all phi, thin in z, denser
/// on one side, drawn from the whole ring.
std::vector<Particle> initial(const Comm& comm, const std::string& input, std::size_t count, double clustering,
                              const Multisection& start) {
  const Box home = start.box(comm.rank());
  std::mt19937_64 random(2000 + static_cast<std::uint64_t>(comm.rank()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Particle> particles(count);
  const Point centres[2] = {{0.3, 0.3, 0.4}, {0.7, 0.65, 0.55}};
  for (std::size_t i = 0; i < count; ++i) {
    Point x{u(random), u(random), u(random)};
    if (input == "uniform") {
      for (int a = 0; a < 3; ++a) x[a] = home.lo[a] + x[a] * (home.hi[a] - home.lo[a]);
    } else if (input == "clustered" && u(random) < clustering) {
      const Point& c = centres[i % 2];
      const double r = std::min(0.04 / std::sqrt(std::pow(std::max(u(random), 1e-9), -2.0 / 3.0) - 1.0), 0.25);
      const double cos_theta = 2 * u(random) - 1, phi = 2 * std::numbers::pi * u(random);
      const double s = std::sqrt(1 - cos_theta * cos_theta);
      x = {c[0] + r * s * std::cos(phi), c[1] + r * s * std::sin(phi), c[2] + r * cos_theta};
      for (double& v : x) v -= std::floor(v);
    } else if (input == "ring") {
      const double r = 0.8 + 0.4 * u(random);
      double phi = 2 * std::numbers::pi * u(random);
      if (u(random) < 0.3) phi *= 0.25;  // a denser quarter
      x = {r * std::cos(phi), r * std::sin(phi), 0.02 * (2 * u(random) - 1)};
    }
    particles[i] = {x, static_cast<std::uint64_t>(comm.rank()) * count + i};
  }
  return particles;
}

struct Row {
  std::string input, method;
  std::size_t budget;
  double rebalance_s, migrate_s, imbalance;
  double rebalance_min_s, migrate_min_s;  // fastest call: a shared machine's least disturbed figure
  unsigned long long bytes_received, samples_sorted, rounds;
};

std::vector<Point> positions_of(const std::vector<Particle>& particles) {
  std::vector<Point> positions(particles.size());
  for (std::size_t i = 0; i < particles.size(); ++i) positions[i] = particles[i].x;
  return positions;
}

void run_decompose(const DecomposeOptions& options) {
  Comm comm{MPI_COMM_WORLD};
  std::vector<Row> rows;
  if (comm.rank() == 0)
    std::fprintf(stderr, "domex-bench decompose: %d ranks, %zu particles per rank\n", comm.size(), options.particles);
  for (const auto& input : options.inputs)
    for (const auto& method_name : options.methods) {
      const CutMethod method = method_name == "global"    ? CutMethod::global
                               : method_name == "sampled" ? CutMethod::sampled
                                                          : CutMethod::histogram;
      if (method_name != "global" && method_name != "histogram" && method_name != "sampled")
        bad_argument("domex-bench decompose", "unknown method " + method_name + " (histogram, sampled, global)");
      const std::vector<std::size_t> budgets =
          method != CutMethod::histogram ? options.budgets : std::vector<std::size_t>{0};
      for (std::size_t budget : budgets) {
        const bool ring = input == "ring";
        MultisectionOptions settings{.periodic = {!ring, !ring, !ring},
                                     .geometry = ring ? Geometry::cylindrical : Geometry::cartesian,
                                     .method = method,
                                     .samples_per_rank = budget > 0 ? budget : 64,
                                     .neighbour_margin = options.drift};
        const Box domain = ring ? Box{{0.75, 0, -0.05}, {1.25, 0, 0.05}} : Box{{0, 0, 0}, {1, 1, 1}};
        Multisection decomposition(comm, domain, settings);
        auto particles = initial(comm, input, options.particles, options.clustering, decomposition);
        for (int settle = 0; settle < 2; ++settle) {  // untimed: send the particles home
          const auto positions = positions_of(particles);
          decomposition.rebalance(positions);
          MigrationPlan plan(comm, decomposition, positions);
          domex::migrate(plan, particles);
        }
        std::vector<double> rebalance_times, migrate_times;
        unsigned long long worst[3] = {0, 0, 0};
        std::mt19937_64 random(9 + static_cast<std::uint64_t>(comm.rank()));
        std::uniform_real_distribution<double> u(-options.drift, options.drift);
        for (int r = 0; r < options.repeats; ++r) {
          auto positions = positions_of(particles);
          rebalance_times.push_back(time_collective(comm, [&] { decomposition.rebalance(positions); }));
          const auto& s = decomposition.stats();
          worst[0] = std::max<unsigned long long>(worst[0], s.bytes_received);
          worst[1] = std::max<unsigned long long>(worst[1], s.samples_sorted);
          worst[2] = std::max<unsigned long long>(worst[2], static_cast<unsigned long long>(s.rounds));
          // A step in which almost nothing leaves: a tiny drift.
          for (auto& p : particles)
            for (int a = 0; a < (ring ? 2 : 3); ++a) {
              p.x[a] += u(random);
              if (!ring) p.x[a] -= std::floor(p.x[a]);
            }
          positions = positions_of(particles);
          migrate_times.push_back(time_collective(comm, [&] {
            MigrationPlan plan(comm, decomposition, positions);
            domex::migrate(plan, particles);
          }));
        }
        comm.allreduce_in_place(std::span<unsigned long long>(worst), MPI_MAX);
        const double count = static_cast<double>(particles.size());
        const double imbalance = comm.allreduce(count, MPI_MAX) / (comm.allreduce(count, MPI_SUM) / comm.size());
        rows.push_back({input, method_name, budget, summarize(rebalance_times).median,
                        summarize(migrate_times).median, imbalance, summarize(rebalance_times).min,
                        summarize(migrate_times).min, worst[0], worst[1], worst[2]});
        if (comm.rank() == 0)
          std::fprintf(stderr, "  %-9s %-9s budget %5zu done\n", input.c_str(), method_name.c_str(), budget);
      }
    }
  const Json where = provenance_json(comm);
  if (comm.rank() != 0) return;
  std::printf("multisection rebalance, %d ranks, %zu particles per rank, %d repeats\n"
              "%-9s %-9s %7s %13s %9s %11s %9s %11s %14s %7s %10s\n",
              comm.size(), options.particles, options.repeats, "input", "method", "budget", "rebalance[ms]", "(min)",
              "migrate[ms]", "(min)", "bytes recv", "samples sorted", "rounds", "imbalance");
  for (const auto& r : rows)
    std::printf("%-9s %-9s %7zu %13.3f %9.3f %11.3f %9.3f %11llu %14llu %7llu %10.4f\n", r.input.c_str(),
                r.method.c_str(), r.budget, 1e3 * r.rebalance_s, 1e3 * r.rebalance_min_s, 1e3 * r.migrate_s,
                1e3 * r.migrate_min_s, r.bytes_received, r.samples_sorted, r.rounds, r.imbalance);
  std::printf("(times: median (and min) over repeats of the slowest rank; bytes recv, samples sorted, rounds:\n"
              " max over ranks; budget: samples per rank (global), per part of a level (sampled);\n"
              " imbalance: max/mean particles after migration;\n"
              " migrate: one step with drift <= %g per axis, almost nothing leaves)\n",
              options.drift);
  if (!options.json.empty()) {
    Json list = Json::array();
    for (const auto& r : rows)
      list.push_back({{"input", r.input}, {"method", r.method}, {"budget", r.budget}, {"rebalance_s", r.rebalance_s},
                      {"rebalance_min_s", r.rebalance_min_s}, {"migrate_s", r.migrate_s},
                      {"migrate_min_s", r.migrate_min_s}, {"bytes_received", r.bytes_received},
                      {"samples_sorted", r.samples_sorted}, {"rounds", r.rounds}, {"imbalance", r.imbalance}});
    write_results(options.json, "decompose", where,
                  {{"ranks", comm.size()}, {"particles_per_rank", options.particles}, {"repeats", options.repeats},
                   {"rows", list}},
                  "domex-bench decompose");
  }
}

const Registration registration{[](CLI::App& app) {
  auto options = std::make_shared<DecomposeOptions>();
  auto* command = app.add_subcommand("decompose", "multisection rebalance: cut methods, budgets, inputs");
  command->add_option("--particles", options->particles, "particles per rank")->capture_default_str();
  command->add_option("--repeats", options->repeats, "timed rebalances per row")->capture_default_str();
  command->add_option("--inputs", options->inputs, "uniform, clustered, ring")->capture_default_str();
  command->add_option("--methods", options->methods, "histogram, sampled, global")->capture_default_str();
  command->add_option("--budgets", options->budgets, "samples per rank (global) or per part of a level (sampled)")
      ->capture_default_str();
  command->add_option("--clustering", options->clustering, "fraction in clumps (clustered input)")
      ->capture_default_str();
  command->add_option("--drift", options->drift, "largest displacement per migration step and axis")
      ->capture_default_str();
  command->add_option("--json", options->json, "write the rows as JSON to this file");
  command->callback([options] { run_decompose(*options); });
}};

}  // namespace
}  // namespace domex::bench::decompose_command

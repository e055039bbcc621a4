// SPDX-License-Identifier: BSD-3-Clause
// domex-bench halo: ghost exchange of a 27-point stencil code with deep halos
// (k = 1, 2, 3), domex's plan (26 or 6 neighbours) against
// MPI_Neighbor_alltoallv and the naive one-message-per-field exchange.
//
// Experiment A varies the communication volume (fields exchanged) with the
// computation fixed; experiment B varies the computation per cell with the
// volume fixed (the seed's experiments). alpha and beta are fitted to the
// plan's exchange times, and the depth choose_depth() picks is compared with
// the measured best.
//
//   mpirun -n 8 domex-bench halo --json halo.json

#include "command.hpp"
#include "results.hpp"
#include "timing.hpp"

#include <domex/halo/halo.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <span>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

// Named per file: the files are compiled as one (UNITY_BUILD, CMakeLists.txt).
namespace domex::bench::halo_command {
namespace {

struct HaloBenchOptions {
  std::size_t cells = 24;                    ///< per rank and axis
  std::size_t fields = 8;                    ///< fields updated by the kernel
  std::vector<int> depths{1, 2, 3};
  std::vector<std::size_t> exchanged{1, 2, 4, 8};  ///< experiment A: fields exchanged
  std::vector<int> work{0, 16, 64};                ///< experiment B: extra flops per cell and field
  double cell_seconds = 0;  ///< > 0: the kernel replaced by this cost per cell update (all fields)
  std::vector<std::string> variants{"plan/full", "plan/full/interlaced", "plan/faces", "neighbor_alltoallv/full",
                                    "naive/full"};
  int steps = 12;
  int repeats = 3;
  int back_to_back = 10;  ///< exchanges timed alone per repeat
  std::string experiments = "AB";
  std::string json;
};

struct Variant {
  HaloMethod method;
  Stencil stencil;
  bool interlaced = false;  ///< the exchanged fields as one array of N-double cells
};

Variant variant_from_string(const std::string& text) {
  const auto slash = text.find('/');
  const std::string method = text.substr(0, slash);
  std::string stencil = slash == std::string::npos ? "full" : text.substr(slash + 1);
  Variant v{};
  if (const auto layout = stencil.find('/'); layout != std::string::npos) {
    if (stencil.substr(layout + 1) != "interlaced")
      bad_argument("domex-bench halo", fmt::format("unknown layout '{}' in '{}' (interlaced)", stencil.substr(layout + 1), text));
    v.interlaced = true;
    stencil = stencil.substr(0, layout);
  }
  if (method == "plan") v.method = HaloMethod::plan;
  else if (method == "neighbor_alltoallv") v.method = HaloMethod::neighbor_alltoallv;
  else if (method == "naive") v.method = HaloMethod::naive;
  else bad_argument("domex-bench halo", fmt::format("unknown method '{}' in '{}' (plan, neighbor_alltoallv, naive)", method, text));
  if (stencil == "full") v.stencil = Stencil::full;
  else if (stencil == "faces") v.stencil = Stencil::faces;
  else bad_argument("domex-bench halo", fmt::format("unknown stencil '{}' in '{}' (full, faces)", stencil, text));
  return v;
}

struct Row {
  char experiment;
  std::string variant;
  int depth;
  std::size_t exchanged;
  int work;
  std::size_t messages, bytes;  // per exchange, this rank (all ranks alike: periodic); MPI messages
  double step_s, compute_s, halo_s;  // per step: median wall time, max over ranks of compute / halo
  double exchange_s;                 // one exchange alone (back-to-back, no computation between)
};

/// The 27-point box average of `in` into `out` on cells [-grow, n + grow),
/// plus `work` dependent multiply-adds per cell (more computation, same data).
void box_average(const HaloPlan& plan, const std::vector<double>& in, std::vector<double>& out, long grow, int work) {
  const auto n = plan.grid().local_cells();
  const long sx = 1, sy = static_cast<long>(plan.extent()[0]), sz = sy * static_cast<long>(plan.extent()[1]);
  for (long k = -grow; k < static_cast<long>(n[2]) + grow; ++k)
    for (long j = -grow; j < static_cast<long>(n[1]) + grow; ++j) {
      const std::size_t row = plan.index(0, j, k);
      for (long i = -grow; i < static_cast<long>(n[0]) + grow; ++i) {
        const double* c = in.data() + row + i;
        double sum = 0;
        for (long dz = -1; dz <= 1; ++dz)
          for (long dy = -1; dy <= 1; ++dy)
            for (long dx = -1; dx <= 1; ++dx) sum += c[dx * sx + dy * sy + dz * sz];
        double value = sum * (1.0 / 27);
        for (int w = 0; w < work; ++w) value = value * 0.999999 + 1e-9;
        out[row + static_cast<std::size_t>(i)] = value;
      }
    }
}

/// The process grid of the weak-scaling runs: MPI_Dims_create's balanced
/// factors, the most ranks on x. (Most on z, as CartesianGrid splits a cube
/// on ties, made the np 2 exchange of 8 separate fields slower here, 58 vs
/// 50 us: the strided x faces are then copied locally, which cost more than
/// packing them for a message.)
std::array<int, 3> process_dims(const Comm& comm) {
  int dims[3] = {0, 0, 0};
  check_mpi(MPI_Dims_create(comm.size(), 3, dims), "MPI_Dims_create");
  return {dims[0], dims[1], dims[2]};
}

/// A periodic grid of n^3 cells per rank on `dims`.
CartesianGrid cubes_grid(const Comm& comm, const std::array<int, 3>& dims, std::size_t n) {
  return CartesianGrid(comm,
                       {n * static_cast<std::size_t>(dims[0]), n * static_cast<std::size_t>(dims[1]),
                        n * static_cast<std::size_t>(dims[2])},
                       {.dims = dims, .periodic = {true, true, true}});
}

/// The kernel replaced by a fixed cost (--cell-seconds): simulated time under
/// SMPI (the host computes nothing, so the simulated time does not depend on
/// its speed or load, and large simulations stay fast), a spin otherwise.
void spend(double seconds) {
#ifdef DOMEX_SMPI
  smpi_execute(seconds);
#else
  for (const double end = MPI_Wtime() + seconds; MPI_Wtime() < end;) {
  }
#endif
}

Row run_row(const Comm& comm, const HaloBenchOptions& options, char experiment, const std::string& variant_name,
            int depth, std::size_t exchanged, int work) {
  const Variant variant = variant_from_string(variant_name);
  const auto dims = process_dims(comm);
  const std::size_t n = options.cells;
  const CartesianGrid grid = cubes_grid(comm, dims, n);
  HaloPlan plan(grid, {.depth = depth, .stencil = variant.stencil, .method = variant.method});
  std::vector<std::vector<double>> fields(options.fields, std::vector<double>(plan.cells()));
  std::vector<double> scratch(plan.cells());
  for (std::size_t f = 0; f < fields.size(); ++f)
    for (std::size_t c = 0; c < plan.cells(); ++c) fields[f][c] = std::sin(0.001 * static_cast<double>(c + f));

  // Interlaced: the same data as one array of cells of `exchanged` doubles.
  std::vector<double> interlaced(variant.interlaced ? plan.cells() * exchanged : 0);
  const auto exchange_interlaced = [&]<std::size_t N>() {
    std::span<std::array<double, N>> cells(reinterpret_cast<std::array<double, N>*>(interlaced.data()), plan.cells());
    plan.exchange(cells);
  };
  // The exchange takes the first `exchanged` fields, as spans (any number).
  auto exchange = [&] {
    if (variant.interlaced) {
      switch (exchanged) {
        case 1: exchange_interlaced.operator()<1>(); return;
        case 2: exchange_interlaced.operator()<2>(); return;
        case 4: exchange_interlaced.operator()<4>(); return;
        case 8: exchange_interlaced.operator()<8>(); return;
        default: bad_argument("domex-bench halo", fmt::format("{} fields exchanged: choose 1, 2, 4 or 8", exchanged));
      }
    }
    switch (exchanged) {
      case 1: plan.exchange(fields[0]); break;
      case 2: plan.exchange(fields[0], fields[1]); break;
      case 4: plan.exchange(fields[0], fields[1], fields[2], fields[3]); break;
      case 8:
        plan.exchange(fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6], fields[7]);
        break;
      default: bad_argument("domex-bench halo", fmt::format("{} fields exchanged: choose 1, 2, 4 or 8", exchanged));
    }
  };
  std::vector<double> step_times, exchange_times;
  double compute = 0, halo = 0;
  for (int repeat = 0; repeat <= options.repeats; ++repeat) {  // repeat 0 warms up
    double local_compute = 0, local_halo = 0;
    const double wall = time_collective(comm, [&] {
      for (int step = 0; step < options.steps; ++step) {
        const int since = step % depth;  // steps since the last exchange
        if (since == 0) {
          const double start = MPI_Wtime();
          exchange();
          local_halo += MPI_Wtime() - start;
        }
        // Deep halo: step s after an exchange updates the owned cells plus
        // depth - s ghost layers (redundantly computed, no message needed).
        const double start = MPI_Wtime();
        if (options.cell_seconds > 0) {
          const auto grow = static_cast<std::size_t>(2 * (depth - since - 1));
          const auto n = plan.grid().local_cells();
          spend(options.cell_seconds * static_cast<double>((n[0] + grow) * (n[1] + grow) * (n[2] + grow)));
        } else {
          for (auto& field : fields) {
            box_average(plan, field, scratch, depth - since - 1, work);
            field.swap(scratch);
          }
        }
        local_compute += MPI_Wtime() - start;
      }
    });
    // The exchange alone: what the alpha-beta fit and the method comparison
    // use (the halo time of a step also holds the wait for slower ranks).
    const int back_to_back = options.back_to_back;
    const double exchanges = time_collective(comm, [&] {
      for (int e = 0; e < back_to_back; ++e) exchange();
    });
    if (repeat == 0) continue;
    exchange_times.push_back(exchanges / back_to_back);
    step_times.push_back(wall / options.steps);
    compute += comm.allreduce(local_compute, MPI_MAX) / options.steps / options.repeats;
    halo += comm.allreduce(local_halo, MPI_MAX) / options.steps / options.repeats;
  }
  const std::size_t bytes_per_cell = exchanged * sizeof(double);
  return {experiment, variant_name, depth, exchanged, work, plan.mpi_messages_per_exchange(exchanged),
          plan.bytes_per_exchange(bytes_per_cell), summarize(step_times).median, compute, halo,
          summarize(exchange_times).median};
}

/// Least-squares alpha, beta of t = alpha * messages + beta * bytes over the
/// plan's rows (t: one exchange alone).
std::pair<double, double> fit_alpha_beta(const std::vector<Row>& rows) {
  double mm = 0, mb = 0, bb = 0, mt = 0, bt = 0;
  for (const Row& r : rows) {
    if (r.variant.rfind("plan/", 0) != 0) continue;
    const double m = static_cast<double>(r.messages), b = static_cast<double>(r.bytes), t = r.exchange_s;
    mm += m * m, mb += m * b, bb += b * b, mt += m * t, bt += b * t;
  }
  const double det = mm * bb - mb * mb;
  if (std::abs(det) < 1e-300) return {0, 0};
  double alpha = (mt * bb - bt * mb) / det, beta = (mm * bt - mb * mt) / det;
  // Non-negative: fall back to one-parameter fits when one comes out < 0.
  if (alpha < 0) alpha = 0, beta = bb > 0 ? bt / bb : 0;
  if (beta < 0) beta = 0, alpha = mm > 0 ? mt / mm : 0;
  return {alpha, beta};
}

void run_halo(const HaloBenchOptions& options) {
  Comm comm{MPI_COMM_WORLD};
  if (options.fields < 8) bad_argument("domex-bench halo", "--fields must be at least 8 (experiment A exchanges up to 8)");
  for (int depth : options.depths)
    if (depth < 1 || static_cast<std::size_t>(depth) > options.cells)
      bad_argument("domex-bench halo", fmt::format("--depths {}: need 1 <= depth <= --cells {}", depth, options.cells));
  std::vector<Row> rows;
  if (comm.rank() == 0)
    std::fprintf(stderr, "domex-bench halo: %d ranks, %zu^3 cells per rank, %zu fields, %d steps x %d repeats\n",
                 comm.size(), options.cells, options.fields, options.steps, options.repeats);
  auto progress = [&](const char* what) {
    if (comm.rank() == 0) std::fprintf(stderr, "  %s done (%zu rows)\n", what, rows.size());
  };
  if (options.experiments.find('A') != std::string::npos) {
    for (std::size_t exchanged : options.exchanged) {
      for (const auto& variant : options.variants)
        for (int depth : options.depths) rows.push_back(run_row(comm, options, 'A', variant, depth, exchanged, 0));
      progress(fmt::format("A: {} fields exchanged", exchanged).c_str());
    }
  }
  if (options.experiments.find('B') != std::string::npos) {
    for (int work : options.work) {
      for (const auto& variant : options.variants)
        for (int depth : options.depths) rows.push_back(run_row(comm, options, 'B', variant, depth, 8, work));
      progress(fmt::format("B: work {}", work).c_str());
    }
  }
  const auto [alpha, beta] = fit_alpha_beta(rows);

  // The depth the model picks per group (plan/full) against the measured best.
  struct Choice {
    char experiment;
    std::size_t exchanged;
    int work, chosen, best;
    double chosen_s, best_s;
  };
  std::vector<Choice> choices;
  const auto dims = process_dims(comm);
  const std::size_t n = options.cells;
  const CartesianGrid grid = cubes_grid(comm, dims, n);
  for (const Row& r : rows) {
    if (r.variant != "plan/full" || r.depth != 1) continue;
    const double seconds_per_cell = r.compute_s / static_cast<double>(grid.owned_cells());
    const int max_depth = *std::max_element(options.depths.begin(), options.depths.end());
    const int chosen = choose_depth(grid, Stencil::full,
                                    {.bytes_per_cell = r.exchanged * sizeof(double),
                                     .seconds_per_cell_update = seconds_per_cell,
                                     .seconds_per_message = alpha > 0 ? alpha : 1e-12,
                                     .seconds_per_byte = beta > 0 ? beta : 1e-15,
                                     .max_depth = max_depth});
    Choice c{r.experiment, r.exchanged, r.work, chosen, 1, 0, 1e300};
    for (const Row& s : rows)
      if (s.variant == "plan/full" && s.experiment == r.experiment && s.exchanged == r.exchanged && s.work == r.work) {
        if (s.step_s < c.best_s) c.best_s = s.step_s, c.best = s.depth;
        if (s.depth == chosen) c.chosen_s = s.step_s;
      }
    choices.push_back(c);
  }
  // The physical limit on one node: the exchanged bytes copied three times
  // (pack, one shared-memory copy by MPI, unpack) at this machine's memcpy
  // speed, measured here in cache with a buffer of one exchange's size.
  std::size_t largest = 0;
  for (const Row& r : rows) largest = std::max(largest, r.bytes);
  const double memcpy_bytes_per_s = [&] {
    std::vector<std::byte> from(std::max<std::size_t>(largest, 4096), std::byte{1}), to(from.size());
    double best = 1e300;
    for (int trial = 0; trial < 200; ++trial) {
      const double start = MPI_Wtime();
      std::memcpy(to.data(), from.data(), from.size());
      best = std::min(best, MPI_Wtime() - start);
      from[static_cast<std::size_t>(trial) % from.size()] = to[0];  // keep the copies
    }
    return comm.allreduce(static_cast<double>(from.size()) / best, MPI_MIN);
  }();
  const auto bound = [&](const Row& r) { return 3.0 * static_cast<double>(r.bytes) / memcpy_bytes_per_s; };
  const Json where = provenance_json(comm);
  if (comm.rank() != 0) return;

  std::printf("halo exchange, %d ranks (%d x %d x %d), %zu^3 cells per rank, periodic, %zu fields updated by a\n"
              "27-point kernel, %d steps x %d repeats (median); per step: wall time, and max over ranks of\n"
              "compute and halo time; efficiency = compute / (compute + halo)\n",
              comm.size(), dims[0], dims[1], dims[2], options.cells, options.fields, options.steps, options.repeats);
  std::printf("%-3s %-24s %2s %6s %5s %10s %12s %10s %8s %11s %12s %10s %7s\n", "exp", "method/stencil", "k",
              "fields", "work", "msgs/exch", "bytes/exch", "exch[ms]", "x bound", "step[ms]", "compute[ms]",
              "halo[ms]", "eff");
  for (const Row& r : rows)
    std::printf("%-3c %-24s %2d %6zu %5d %10zu %12zu %10.3f %8.1f %11.3f %12.3f %10.3f %6.1f%%\n", r.experiment,
                r.variant.c_str(), r.depth, r.exchanged, r.work, r.messages, r.bytes, 1e3 * r.exchange_s,
                r.exchange_s / bound(r), 1e3 * r.step_s, 1e3 * r.compute_s, 1e3 * r.halo_s,
                100 * r.compute_s / (r.compute_s + r.halo_s));
  std::printf("(msgs: MPI messages per exchange: the plan sends one per distinct neighbour rank, none to itself;\n"
              " exch: one exchange alone, median of %d x %d back-to-back; x bound: exch / (3 x bytes at memcpy speed\n"
              " %.1f GB/s, measured here in cache: pack, one MPI copy, unpack); step: wall time per step; compute,\n"
              " halo: per step, max over ranks; halo includes waiting for slower ranks)\n",
              options.repeats, options.back_to_back, 1e-9 * memcpy_bytes_per_s);
  std::printf("fit over the plan rows: time per exchange = alpha * messages + beta * bytes, alpha = %.3f us, "
              "beta = %.3f ns/B\n",
              1e6 * alpha, 1e9 * beta);
  std::printf("automatic depth (choose_depth with the fitted alpha, beta and the measured compute per cell):\n");
  for (const Choice& c : choices)
    std::printf("  %c fields %zu work %3d: chosen k = %d (%.3f ms/step), best measured k = %d (%.3f ms/step)\n",
                c.experiment, c.exchanged, c.work, c.chosen, 1e3 * c.chosen_s, c.best, 1e3 * c.best_s);
  if (!options.json.empty()) {
    Json list = Json::array(), automatic = Json::array();
    for (const Row& r : rows)
      list.push_back({{"experiment", std::string(1, r.experiment)}, {"variant", r.variant}, {"depth", r.depth},
                      {"exchanged", r.exchanged}, {"work", r.work}, {"messages", r.messages}, {"bytes", r.bytes},
                      {"step_s", r.step_s}, {"compute_s", r.compute_s}, {"halo_s", r.halo_s},
                      {"exchange_s", r.exchange_s}, {"memcpy_bound_s", bound(r)}});
    for (const Choice& c : choices)
      automatic.push_back({{"experiment", std::string(1, c.experiment)}, {"exchanged", c.exchanged}, {"work", c.work},
                           {"chosen", c.chosen}, {"best", c.best}, {"chosen_s", c.chosen_s}, {"best_s", c.best_s}});
    write_results(options.json, "halo", where,
                  {{"ranks", comm.size()}, {"dims", {dims[0], dims[1], dims[2]}}, {"cells_per_rank", options.cells},
                   {"fields", options.fields}, {"steps", options.steps}, {"alpha_s", alpha},
                   {"beta_s_per_byte", beta}, {"memcpy_bytes_per_s", memcpy_bytes_per_s}, {"rows", list}, {"automatic_depth", automatic}},
                  "domex-bench halo");
  }
}

const Registration registration{[](CLI::App& app) {
  auto options = std::make_shared<HaloBenchOptions>();
  auto* command = app.add_subcommand("halo", "halo exchange with deep halos: plan vs neighbor_alltoallv vs naive");
  command->add_option("--cells", options->cells, "cells per rank and axis")->capture_default_str();
  command->add_option("--fields", options->fields, "fields updated by the kernel (>= 8)")->capture_default_str();
  command->add_option("--depths", options->depths, "ghost depths k (exchange every k steps)")->capture_default_str();
  command->add_option("--exchanged", options->exchanged, "experiment A: fields exchanged (1, 2, 4, 8)")
      ->capture_default_str();
  command->add_option("--work", options->work, "experiment B: extra flops per cell and field")->capture_default_str();
  command->add_option("--cell-seconds", options->cell_seconds,
                      "> 0: no kernel, this many seconds per cell update instead (simulated time under SMPI)")
      ->capture_default_str();
  command->add_option("--variants", options->variants, "method/stencil[/interlaced]: plan|neighbor_alltoallv|naive / full|faces")
      ->capture_default_str();
  command->add_option("--steps", options->steps, "steps per repeat (a multiple of every depth)")->capture_default_str();
  command->add_option("--repeats", options->repeats, "timed repeats per row (median)")->capture_default_str();
  command->add_option("--experiments", options->experiments, "A, B or AB")->capture_default_str();
  command->add_option("--back-to-back", options->back_to_back, "exchanges timed alone per repeat (>= 1)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--json", options->json, "write the rows as JSON to this file");
  command->callback([options] { run_halo(*options); });
}};

}  // namespace
}  // namespace domex::bench::halo_command

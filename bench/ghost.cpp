// SPDX-License-Identifier: BSD-3-Clause
// domex-bench ghost: ghost particles within a cutoff (domex::GhostPlan)
// against (a) a hand-written MPI_Alltoallv ghost exchange with the same send
// lists, (b) the staged 6-direction exchange of LAMMPS and miniMD (x, then y,
// then z, each forwarding the ghosts received before; box-shaped ghost
// regions) and (c) the bound for the bytes moved: one memcpy of them plus a
// raw exchange of the same messages (persistent requests, nothing packed).
//
// The decomposition is a multisection with equal boxes (a regular process
// grid, which the staged exchange needs), periodic on every axis, so every
// method sees the same domains. An MD-style row (--md) sets up LAMMPS's
// bench/in.lj: an fcc lattice at density 0.8442, cutoff 2.5 + skin 0.3, and
// prints the ghost communication per step (forward positions + reverse
// forces every step, a migration and a rebuild every 20 steps).
//
//   mpirun -n 2 domex-bench ghost --particles 100000 --cutoffs 0.1 0.5 1 --md
//   sim/run ib 16384 ghost --particles 200 --cutoffs 0.5 --updates 1 --repeats 1
//     --warm-up 0 --discovery nbx --measure update    (one line: thousands of simulated ranks)

#include "command.hpp"
#include "results.hpp"
#include "timing.hpp"

#include <domex/comm/pages.hpp>
#include <domex/decompose/grid.hpp>
#include <domex/ghost/ghost.hpp>
#include <domex/migrate/migrate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

// Named per file: the files are compiled as one (UNITY_BUILD, CMakeLists.txt).
namespace domex::bench::ghost_command {
namespace {

/// What --measure can time, in the table's order; all of them by default.
const std::vector<std::string> measurable{"rebuild", "update", "reverse", "alltoallv", "staged", "bound"};

struct GhostBenchOptions {
  std::vector<std::size_t> particles{100000};  ///< per rank
  std::vector<double> cutoffs{0.1, 0.5, 1.0};  ///< in units of a domain's smallest width
  std::string distribution = "uniform";
  std::string order = "random";
  int updates = 50;  ///< timed calls per repeat
  int repeats = 3;   ///< best of
  bool md = false;
  /// A box without periodic axes: cutoffs beyond half the box (3 widths and
  /// more), no staged baseline (its swaps wrap).
  bool open = false;
  /// What is timed, of `measurable` (a simulation of thousands of ranks
  /// leaves out what it need not pay for: MPI_Alltoallv's P^2 messages, the
  /// baselines' exchanges).
  std::vector<std::string> measure = measurable;
  int warm_up = 1;  ///< untimed calls before each block (a deterministic simulation needs none)
  std::string discovery = "automatic";  ///< GhostOptions::discovery: the rebuild's exchange of counts
  std::string json;
};

/// Equal boxes on a regular grid of the unit cube scaled by `side`,
/// periodic on every axis or on none.
struct Grid {
  std::array<int, 3> dims{};
  Box domain;
  Multisection decomposition;
  Grid(const Comm& comm, double side, bool periodic = true)
      : domain{{0, 0, 0}, {side, side, side}},
        decomposition(comm, domain, {.periodic = {periodic, periodic, periodic}}) {
    dims = decomposition.divisions();  // (never rebalanced: the equal boxes it starts with)
  }
  [[nodiscard]] bool periodic() const noexcept { return decomposition.options().periodic[0]; }
  /// Rank of the box `step` boxes from `rank` along `axis`, wrapped.
  [[nodiscard]] int neighbour(int rank, int axis, int step) const {
    std::array<int, 3> offset{0, 0, 0};
    offset[axis] = step;
    return grid_offset(rank, offset, dims);
  }
};

/// (b) The staged exchange: six swaps (-x, +x, -y, +y, -z, +z); each sends
/// the particles (owned and ghosts so far) within the cutoff of that face.
class Staged {
 public:
  Staged(const Comm& comm, const Grid& grid, std::vector<Point>& x, std::size_t local, double cutoff) : comm_(comm) {
    const Box box = grid.decomposition.box(comm.rank());
    x.resize(local);
    for (int axis = 0; axis < 3; ++axis)
      for (int step : {-1, 1}) {
        Swap swap;
        swap.to = grid.neighbour(comm.rank(), axis, step);
        swap.from = grid.neighbour(comm.rank(), axis, -step);
        const std::size_t known = x.size();
        for (std::size_t i = 0; i < known; ++i)
          if (step < 0 ? x[i][axis] < box.lo[axis] + cutoff : x[i][axis] >= box.hi[axis] - cutoff)
            swap.indices.push_back(i);
        // Leaving through the domain's face: the image shifts by one period.
        const int position = step < 0 ? 0 : grid.dims[axis] - 1;
        const int index[3] = {comm.rank() / (grid.dims[1] * grid.dims[2]), (comm.rank() / grid.dims[2]) % grid.dims[1],
                              comm.rank() % grid.dims[2]};
        swap.shift[axis] = index[axis] == position ? -step * grid.domain.extent(axis) : 0.0;
        std::size_t sent = swap.indices.size(), received = 0;
        check_mpi(MPI_Sendrecv(&sent, 1, MPI_UINT64_T, swap.to, 0, &received, 1, MPI_UINT64_T, swap.from, 0,
                               comm.get(), MPI_STATUS_IGNORE),
                  "MPI_Sendrecv");
        swap.received = received;
        swaps_.push_back(std::move(swap));
        exchange_one(swaps_.back(), x);
      }
  }
  [[nodiscard]] std::size_t ghosts() const {
    std::size_t total = 0;
    for (const auto& swap : swaps_) total += swap.received;
    return total;
  }
  /// One forward exchange of positions: x holds the owned ones, ghosts are appended.
  void update(std::vector<Point>& x, std::size_t local) {
    x.resize(local);
    for (auto& swap : swaps_) exchange_one(swap, x);
  }

 private:
  struct Swap {
    int to = 0, from = 0;
    std::vector<std::size_t> indices;
    Point shift{0, 0, 0};
    std::size_t received = 0;
  };
  void exchange_one(Swap& swap, std::vector<Point>& x) {
    buffer_.resize(swap.indices.size());
    for (std::size_t k = 0; k < swap.indices.size(); ++k)
      for (int a = 0; a < 3; ++a) buffer_[k][a] = x[swap.indices[k]][a] + swap.shift[a];
    const std::size_t at = x.size();
    x.resize(at + swap.received);
    check_mpi(MPI_Sendrecv(buffer_.data(), static_cast<int>(buffer_.size() * 3), MPI_DOUBLE, swap.to, 1, x.data() + at,
                           static_cast<int>(swap.received * 3), MPI_DOUBLE, swap.from, 1, comm_.get(), MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
  }
  const Comm& comm_;
  std::vector<Swap> swaps_;
  std::vector<Point> buffer_;
};

/// (a) MPI_Alltoallv with the plan's send lists and counts (known from the build).
class Alltoallv {
 public:
  Alltoallv(const Comm& comm, const GhostPlan& plan) : comm_(comm), plan_(plan) {
    const auto p = static_cast<std::size_t>(comm.size());
    send_counts_.assign(p, 0), send_displs_.assign(p, 0), recv_counts_.assign(p, 0), recv_displs_.assign(p, 0);
    for (std::size_t m = 0; m < plan.destinations().size(); ++m) {
      const auto r = static_cast<std::size_t>(plan.destinations()[m]);
      send_counts_[r] = static_cast<int>(3 * (plan.destination_offsets()[m + 1] - plan.destination_offsets()[m]));
      send_displs_[r] = static_cast<int>(3 * plan.destination_offsets()[m]);
    }
    for (std::size_t s = 0; s < plan.sources().size(); ++s) {
      const auto r = static_cast<std::size_t>(plan.sources()[s]);
      recv_counts_[r] = static_cast<int>(3 * (plan.source_offsets()[s + 1] - plan.source_offsets()[s]));
      recv_displs_[r] = static_cast<int>(3 * plan.source_offsets()[s]);
    }
    buffer_.resize(plan.send_indices().size());
  }
  void update(std::vector<Point>& x) {
    const auto indices = plan_.send_indices();
    const auto shifts = plan_.send_shifts();
    for (std::size_t k = 0; k < indices.size(); ++k)
      for (int a = 0; a < 3; ++a) buffer_[k][a] = x[indices[k]][a] + shifts[k][a];
    check_mpi(MPI_Alltoallv(buffer_.data(), send_counts_.data(), send_displs_.data(), MPI_DOUBLE,
                            x.data() + plan_.local_count(), recv_counts_.data(), recv_displs_.data(), MPI_DOUBLE,
                            comm_.get()),
              "MPI_Alltoallv");
  }

 private:
  const Comm& comm_;
  const GhostPlan& plan_;
  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_;
  std::vector<Point> buffer_;
};

/// (c) The bound: a memcpy of the bytes sent, then the same messages with
/// persistent requests from contiguous buffers (no packing, no unpacking),
/// sent from huge pages as GhostPlan's are.
class Bound {
 public:
  Bound(const Comm& comm, const GhostPlan& plan, std::size_t record) : plan_(plan), record_(record) {
    const int me = comm.rank();
    source_.resize(plan.send_indices().size() * record);
    packed_.resize(source_.size());
    received_.resize(plan.ghost_count() * record);
    for (std::size_t m = 0; m < plan.destinations().size(); ++m) {
      if (plan.destinations()[m] == me) continue;
      MPI_Request request;
      const auto begin = plan.destination_offsets()[m], end = plan.destination_offsets()[m + 1];
      check_mpi(MPI_Send_init(packed_.data() + begin * record, static_cast<int>((end - begin) * record), MPI_BYTE,
                              plan.destinations()[m], 7, comm.get(), &request),
                "MPI_Send_init");
      requests_.push_back(request);
    }
    for (std::size_t s = 0; s < plan.sources().size(); ++s) {
      if (plan.sources()[s] == me) continue;
      MPI_Request request;
      const auto begin = plan.source_offsets()[s], end = plan.source_offsets()[s + 1];
      check_mpi(MPI_Recv_init(received_.data() + begin * record, static_cast<int>((end - begin) * record), MPI_BYTE,
                              plan.sources()[s], 7, comm.get(), &request),
                "MPI_Recv_init");
      requests_.push_back(request);
    }
  }
  Bound(const Bound&) = delete;
  Bound& operator=(const Bound&) = delete;
  ~Bound() {
    for (auto& request : requests_) MPI_Request_free(&request);
  }
  void update() {
    if (!source_.empty()) std::memcpy(packed_.data(), source_.data(), source_.size());
    if (requests_.empty()) return;
    check_mpi(MPI_Startall(static_cast<int>(requests_.size()), requests_.data()), "MPI_Startall");
    check_mpi(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

 private:
  const GhostPlan& plan_;
  std::size_t record_;
  std::vector<std::byte> source_, received_;
  detail::PageBuffer packed_;  // as GhostPlan's: huge pages where offered
  std::vector<MPI_Request> requests_;
};

/// Best of `repeats` of the median per call of `calls` calls (the slowest rank's), seconds.
template <class Operation>
double per_call(const Comm& comm, int repeats, int calls, Operation&& operation, int warm_up = 1) {
  double best = 1e300;
  for (int w = 0; w < warm_up; ++w) operation();  // persistent requests, buffers
  for (int r = 0; r < repeats; ++r) {
    std::vector<double> samples;
    for (int c = 0; c < calls; ++c) samples.push_back(time_collective(comm, operation));
    best = std::min(best, summarize(samples).median);
  }
  return best;
}

/// per_call() for several operations, their blocks of `calls` calls taken
/// in turn (round r: a block of each), so that every operation is measured
/// with warm caches and all of them across the same stretch of time (this
/// machine's speed drifts by up to 2x between seconds): the best of
/// `repeats` blocks of each one's median.
std::vector<double> per_call_interleaved(const Comm& comm, int repeats, int calls,
                                         const std::vector<std::function<void()>>& operations, int warm_up) {
  std::vector<double> best(operations.size(), 1e300);
  for (int r = 0; r < repeats; ++r)
    for (std::size_t o = 0; o < operations.size(); ++o) {
      for (int w = 0; w < warm_up; ++w) operations[o]();  // persistent requests, buffers, caches
      std::vector<double> samples;
      for (int c = 0; c < calls; ++c) samples.push_back(time_collective(comm, operations[o]));
      best[o] = std::min(best[o], summarize(samples).median);
    }
  return best;
}

std::vector<Point> particles_in(const Box& box, std::size_t count, const std::string& distribution, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Point> x(count);
  for (auto& p : x)
    for (int a = 0; a < 3; ++a) {
      double t = u(random);
      if (distribution == "clustered") t = t * t;  // crowded towards each box's low corner
      p[a] = box.lo[a] + t * box.extent(a);
    }
  return x;
}

/// Orders the particles as MD and SPH codes keep them for locality: by
/// cell of a 32^3 grid over the box, z slowest.
void sort_by_cells(const Box& box, std::vector<Point>& x) {
  auto cell = [&](const Point& p) {
    long key = 0;
    for (int a = 2; a >= 0; --a)
      key = key * 32 + std::clamp(static_cast<long>((p[a] - box.lo[a]) / box.extent(a) * 32), 0L, 31L);
    return key;
  };
  std::stable_sort(x.begin(), x.end(), [&](const Point& p, const Point& q) { return cell(p) < cell(q); });
}

struct Row {
  std::string name;
  std::size_t particles = 0;
  double cutoff = 0, cutoff_widths = 0;
  GhostStats stats;
  double bytes_sent = 0;
  double rebuild = 0, update = 0, reverse = 0, alltoallv = 0, staged = 0, bound = 0;
  std::size_t staged_ghosts = 0;
};

Row measure(const Comm& user, const GhostBenchOptions& options, const std::string& name, const Grid& grid,
            std::vector<Point> x, double cutoff, double width) {
  Comm comm(user.get());
  Row row;
  row.name = name;
  row.particles = x.size();
  row.cutoff = cutoff;
  row.cutoff_widths = cutoff / width;
  const std::size_t local = x.size();
  GhostPlan plan(comm, grid.decomposition, std::span<const Point>(x),
                 {.cutoff = cutoff, .discovery = algorithm_from_string(options.discovery)});
  row.stats = plan.stats();
  row.bytes_sent = static_cast<double>(plan.send_indices().size() * sizeof(Point));
  const std::vector<Point> owned(x.begin(), x.end());
  const auto timed = [&](std::string_view what) { return std::ranges::count(options.measure, what) > 0; };
  if (timed("rebuild"))  // a tenth of the update's calls, at least 3 (or all of them when fewer)
    row.rebuild = per_call(comm, options.repeats, std::max(std::min(3, options.updates), options.updates / 10),
                           [&] { plan.rebuild(grid.decomposition, std::span<const Point>(owned)); }, options.warm_up);
  x.resize(plan.size());
  std::vector<Point> force(plan.size(), Point{1, 2, 3});
  std::optional<Alltoallv> baseline;
  if (timed("alltoallv")) baseline.emplace(comm, plan);
  std::optional<Bound> bound;
  if (timed("bound")) bound.emplace(comm, plan, sizeof(Point));
  // The staged exchange reaches one neighbour per direction: cutoffs up to
  // one width, in a periodic box (its swaps wrap).
  std::vector<Point> staged_x(owned);
  std::optional<Staged> staged;
  if (timed("staged") && row.cutoff_widths <= 1.0 && grid.periodic()) {
    staged.emplace(comm, grid, staged_x, local, cutoff);
    row.staged_ghosts = staged->ghosts();
  }
  // Blocks in turn, so that the ratios compare calls made in the same stretch of time.
  std::vector<std::function<void()>> operations;
  std::vector<double*> results;
  const auto add = [&](bool on, double* result, std::function<void()> operation) {
    if (!on) return;
    operations.push_back(std::move(operation));
    results.push_back(result);
  };
  add(timed("update"), &row.update, [&] { plan.update(shifted(x)); });
  add(timed("reverse"), &row.reverse, [&] { plan.reverse_sum(force); });
  add(bound.has_value(), &row.bound, [&] { bound->update(); });
  add(baseline.has_value(), &row.alltoallv, [&] { baseline->update(x); });
  add(staged.has_value(), &row.staged, [&] { staged->update(staged_x, local); });
  const std::vector<double> best =
      per_call_interleaved(comm, options.repeats, options.updates, operations, options.warm_up);
  for (std::size_t o = 0; o < best.size(); ++o) *results[o] = best[o];
  return row;
}

void print_rows(const Comm& comm, const std::vector<Row>& rows) {
  if (comm.rank() != 0) return;
  std::printf("%-10s %9s %7s %9s %7s %9s %9s %9s %9s %9s %9s %9s %8s %7s\n", "case", "N/rank", "rc/w", "ghosts",
              "ranks", "KB sent", "rebuild", "ns/part", "update", "reverse", "a2av", "staged", "bound", "upd/bnd");
  for (const Row& r : rows) {
    // "-": not measured (--measure)
    const auto shown = [](double value, double scale, const char* unit, int digits = 1) {
      return value > 0 ? fmt::format("{:.{}f}{}", value * scale, digits, unit) : std::string("-");
    };
    const double rebuild_ns = r.rebuild * 1e9 / static_cast<double>(std::max<std::size_t>(r.particles, 1));
    std::printf("%-10s %9zu %7.2f %9zu %7zu %9.1f %9s %9s %9s %9s %9s %9s %8s %7s\n", r.name.c_str(), r.particles,
                r.cutoff_widths, r.stats.ghosts, r.stats.send_ranks, r.bytes_sent / 1024,
                shown(r.rebuild, 1e3, "ms", 3).c_str(), shown(rebuild_ns, 1, "", 2).c_str(),
                shown(r.update, 1e6, "us").c_str(), shown(r.reverse, 1e6, "us").c_str(),
                shown(r.alltoallv, 1e6, "us").c_str(), shown(r.staged, 1e6, "us").c_str(),
                shown(r.bound, 1e6, "us").c_str(), shown(r.bound > 0 ? r.update / r.bound : 0.0, 1, "", 2).c_str());
  }
  std::printf("times: the slowest rank's median per call, best of the repeats; rebuild includes the search and\n"
              "the sparse exchange of positions; update and the baselines move positions (24 B per ghost);\n"
              "reverse sums a 24 B force per ghost into its owner; bound = memcpy of the bytes sent + the same\n"
              "messages unpacked; staged: LAMMPS's 6 swaps with box-shaped regions (cutoffs <= 1 width only;\n"
              "periodic box only); /open: a box without periodic axes (--open)\n");
}

void run_ghost(const GhostBenchOptions& options) {
  Comm comm(MPI_COMM_WORLD);
  const auto provenance = provenance_json(comm);
  std::vector<Row> rows;
  for (std::size_t n : options.particles)
    for (double factor : options.cutoffs) {
      // Unit density per rank: the global side grows with P.
      const double side = std::cbrt(static_cast<double>(comm.size()));
      Grid grid(comm, side, !options.open);
      const Box box = grid.decomposition.box(comm.rank());
      double width = 1e300;
      for (int a = 0; a < 3; ++a) width = std::min(width, side / grid.dims[a]);
      // (a periodic box allows at most half its side: GhostPlan's error otherwise)
      const double cutoff = options.open ? factor * width : std::min(factor * width, side / 2);
      if (cutoff < factor * width && comm.rank() == 0)
        std::fprintf(stderr,
                     "domex-bench ghost: --cutoffs %g is more than half the periodic box at %d ranks: measured at "
                     "%.2f widths (--open for more)\n",
                     factor, comm.size(), cutoff / width);
      auto x = particles_in(box, n, options.distribution, 17 + static_cast<std::uint64_t>(comm.rank()));
      if (options.order == "cells") sort_by_cells(box, x);
      rows.push_back(measure(comm, options,
                             options.distribution + (options.order == "cells" ? "/cells" : "") +
                                 (options.open ? "/open" : ""),
                             grid, std::move(x), cutoff, width));
    }
  if (options.md) {
    // LAMMPS bench/in.lj: fcc, density 0.8442 (lattice constant (4 / 0.8442)^(1/3)), ~1e5 atoms per rank.
    const double lattice = std::cbrt(4 / 0.8442);
    const int cells = static_cast<int>(std::lround(std::cbrt(comm.size() * 25000.0)));
    const double side = cells * lattice;
    Grid grid(comm, side);
    const Box box = grid.decomposition.box(comm.rank());
    std::vector<Point> x;
    const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    for (int k = 0; k < cells; ++k)
      for (int j = 0; j < cells; ++j)
        for (int i = 0; i < cells; ++i)
          for (const auto& b : basis) {
            const Point p{(i + b[0]) * lattice, (j + b[1]) * lattice, (k + b[2]) * lattice};
            if (box.contains(p)) x.push_back(p);
          }
    double width = 1e300;
    for (int a = 0; a < 3; ++a) width = std::min(width, side / grid.dims[a]);
    auto row = measure(comm, options, "lj", grid, x, 2.8, width);
    // One migration step of the lattice (nobody leaves: its cost is the plan's agreement).
    Comm own(comm.get());
    const double migration = per_call(own, options.repeats, 10, [&] {
      MigrationPlan plan(own, grid.decomposition, std::span<const Point>(x));
      std::vector<Point> moved(x);
      migrate(plan, moved);
    });
    rows.push_back(row);
    if (comm.rank() == 0)
      std::printf("MD row (LAMMPS in.lj: %d^3 fcc cells, %zu atoms on rank 0, cutoff 2.5 + skin 0.3): ghost\n"
                  "communication per step = update %.1f us + reverse %.1f us + (rebuild %.3f ms + migration %.3f ms) / 20"
                  " = %.3f ms\n",
                  cells, x.size(), row.update * 1e6, row.reverse * 1e6, row.rebuild * 1e3, migration * 1e3,
                  (row.update + row.reverse + (row.rebuild + migration) / 20) * 1e3);
  }
  print_rows(comm, rows);
  if (!options.json.empty() && comm.rank() == 0) {
    const auto measured = [](double seconds) { return seconds > 0 ? Json(seconds) : Json(nullptr); };
    Json list = Json::array();
    for (const Row& r : rows)
      list.push_back({{"case", r.name},
                      {"particles_per_rank", r.particles},
                      {"cutoff", r.cutoff},
                      {"cutoff_widths", r.cutoff_widths},
                      {"ghosts", r.stats.ghosts},
                      {"send_ranks", r.stats.send_ranks},
                      {"boundary", r.stats.boundary},
                      {"vector_blocks", r.stats.vector_blocks},
                      {"interior_skipped", r.stats.interior_skipped},
                      {"bytes_sent", r.bytes_sent},
                      {"rebuild_s", measured(r.rebuild)},
                      {"update_s", measured(r.update)},
                      {"reverse_s", measured(r.reverse)},
                      {"alltoallv_s", measured(r.alltoallv)},
                      {"staged_s", measured(r.staged)},
                      {"staged_ghosts", r.staged_ghosts},
                      {"bound_s", measured(r.bound)}});
    write_results(options.json, "ghost", provenance, {{"rows", list}}, "domex-bench ghost");
  }
}

const Registration registration{[](CLI::App& app) {
  auto options = std::make_shared<GhostBenchOptions>();
  auto* command = app.add_subcommand("ghost", "ghost particles within a cutoff: GhostPlan vs MPI_Alltoallv, staged, bound");
  command->add_option("--particles", options->particles, "particles per rank (one row each)")->capture_default_str();
  command->add_option("--cutoffs", options->cutoffs, "cutoffs in domain widths (one row each)")->capture_default_str();
  command->add_option("--distribution", options->distribution, "uniform or clustered")
      ->check(CLI::IsMember({"uniform", "clustered"}))
      ->capture_default_str();
  command->add_option("--order", options->order,
                      "owned particles in random order, or sorted by cell as MD codes keep them")
      ->check(CLI::IsMember({"random", "cells"}))
      ->capture_default_str();
  command->add_option("--updates", options->updates, "timed calls per repeat")->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  command->add_option("--repeats", options->repeats, "repeats (best of)")->check(CLI::Range(1, 1000))->capture_default_str();
  command->add_flag("--md", options->md, "add the Lennard-Jones row (LAMMPS in.lj, ~1e5 atoms per rank)");
  command->add_flag("--open", options->open,
                    "a box without periodic axes (cutoffs beyond half the box; no staged baseline; the MD row stays "
                    "periodic)");
  command->add_option("--measure", options->measure, "what is timed (a simulation of thousands of ranks: update)")
      ->check(CLI::IsMember(measurable))
      ->capture_default_str();
  command->add_option("--warm-up", options->warm_up, "untimed calls before each block of timed ones")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  command->add_option("--discovery", options->discovery, "the rebuild's sparse exchange of counts (GhostOptions)")
      ->check(CLI::IsMember(algorithm_names()))
      ->capture_default_str();
  command->add_option("--json", options->json, "write the rows as JSON to this file");
  command->callback([options] {
    for (double c : options->cutoffs)
      if (!(c > 0) || !std::isfinite(c)) bad_argument("domex-bench ghost", fmt::format("--cutoffs {}: must be > 0", c));
    if (options->md)
      for (const char* needed : {"rebuild", "update", "reverse"})
        if (std::ranges::count(options->measure, needed) == 0)
          bad_argument("domex-bench ghost", fmt::format("--md needs '{}' in --measure (its per-step sum)", needed));
    for (std::size_t n : options->particles)
      if (n == 0 || n > (std::size_t{1} << 32))
        bad_argument("domex-bench ghost", fmt::format("--particles {}: must be in [1, 2^32]", n));
    run_ghost(*options);
  });
}};

}  // namespace
}  // namespace domex::bench::ghost_command

// SPDX-License-Identifier: BSD-3-Clause
#include "config.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <domex/halo/cartesian.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "files.hpp"   // output_problem
#include "hdf5.hpp"
#include "output.hpp"  // collectively
#include "solver.hpp"  // Solver::bytes_per_cell

namespace domex::mhd {
namespace {

constexpr int max_depth = 8;

[[noreturn]] void reject(std::string_view what) { apps::fail_app("domex-mhd", what); }

/// Bytes of memory this node has available, from /proc/meminfo (MemAvailable),
/// else the physical pages; 0 if unknown.
double available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  double kib = 0;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024.0;
  const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

}  // namespace

Problem parse_problem(const std::string& name) {
  if (name == "magnetosphere") return Problem::magnetosphere;
  if (name == "periodic-wave") return Problem::periodic_wave;
  reject(fmt::format("--problem {}: unknown problem (magnetosphere or periodic-wave)", name));
}

const char* to_string(Problem problem) noexcept {
  return problem == Problem::magnetosphere ? "magnetosphere" : "periodic-wave";
}

void validate(const Config& config, const Comm& comm) {
  static constexpr char axis_name[] = "xyz";
  for (int axis = 0; axis < 3; ++axis) {
    if (config.cells[axis] <= 0)
      reject(fmt::format("--cells {} {} {}: every axis needs a positive number of cells", config.cells[0],
                         config.cells[1], config.cells[2]));
    if (config.dims[axis] < 0)
      reject(fmt::format("--dims {} {} {}: negative ranks along {}", config.dims[0], config.dims[1], config.dims[2],
                         axis_name[axis]));
  }
  if (config.steps < 0) reject(fmt::format("--steps {}: must be 0 or more (0: the initial state only)", config.steps));
  if (config.image_every < 0) reject(fmt::format("--image-every {}: must be >= 0", config.image_every));
  if (config.snapshot_every < 0) reject(fmt::format("--snapshot-every {}: must be >= 0", config.snapshot_every));
  apps::hdf5::check_snapshot_format("domex-mhd", config.snapshot_format, "vtk");
  if (config.checkpoint_every < 0)
    reject(fmt::format("--checkpoint-every {}: must be >= 0", config.checkpoint_every));
  if (config.checkpoint_every > 0 && config.output.empty())
    reject("--checkpoint-every needs an --output folder for the checkpoints");
  const Problem problem = parse_problem(config.problem);
  if (config.depth < 0 || config.depth > max_depth)
    reject(fmt::format("--depth {}: must be 0 (automatic) or 1..{}", config.depth, max_depth));

  const long fixed = (config.dims[0] ? config.dims[0] : 1) * (config.dims[1] ? config.dims[1] : 1) *
                     (config.dims[2] ? config.dims[2] : 1);
  const bool all_fixed = config.dims[0] && config.dims[1] && config.dims[2];
  if ((all_fixed && fixed != comm.size()) || comm.size() % fixed != 0)
    reject(fmt::format("--dims {} {} {}: product {} does not {} the {} ranks", config.dims[0], config.dims[1],
                       config.dims[2], fixed, all_fixed ? "equal" : "divide", comm.size()));
  for (int axis = 0; axis < 3; ++axis)
    if (config.dims[axis] > config.cells[axis])
      reject(fmt::format("--dims {} {} {}: {} ranks along {} but only {} cells", config.dims[0], config.dims[1],
                         config.dims[2], config.dims[axis], axis_name[axis], config.cells[axis]));

  // The process grid the run will use: same dims choice, so the same local sizes.
  const bool periodic = problem == Problem::periodic_wave;
  const std::array<std::size_t, 3> cells{static_cast<std::size_t>(config.cells[0]),
                                         static_cast<std::size_t>(config.cells[1]),
                                         static_cast<std::size_t>(config.cells[2])};
  std::array<int, 3> dims{};
  try {
    dims = CartesianGrid(comm, cells, {.dims = config.dims, .periodic = {periodic, periodic, periodic}}).dims();
  } catch (const Error&) {
    reject(fmt::format("--cells {} {} {}: no grid of {} ranks with --dims {} {} {} has a cell on every rank", cells[0],
                       cells[1], cells[2], comm.size(), config.dims[0], config.dims[1], config.dims[2]));
  }
  for (int axis = 0; axis < 3; ++axis) {
    // Deep halo: a ghost layer of depth k must come from the owner's own cells.
    const long fewest = config.cells[axis] / dims[axis];
    if ((dims[axis] > 1 || periodic) && config.depth > fewest)
      reject(fmt::format("--depth {}: a rank owns only {} cells along {}; need depth <= {}", config.depth, fewest,
                         axis_name[axis], fewest));
  }

  if (!(config.x_min < config.x_max) || !(config.half_width > 0))
    reject(fmt::format("box x in [{}, {}], |y|, |z| <= {}: empty", config.x_min, config.x_max, config.half_width));
  const auto positive = [](double value, const char* name) {
    if (!(value > 0)) reject(fmt::format("--{} {}: must be positive", name, value));
  };
  positive(config.rho_sw, "rho-sw");
  positive(config.p_sw, "p-sw");
  positive(config.rho_inner, "rho-inner");
  positive(config.p_inner, "p-inner");
  positive(config.cfl, "cfl");
  if (!(config.gamma > 1)) reject(fmt::format("--gamma {}: must be > 1", config.gamma));
  for (const auto& [value, name] : {std::pair{config.dt, "dt"},
                                    {config.dipole, "dipole"},
                                    {config.gm, "gm"},
                                    {config.r_inner, "r-inner"},
                                    {config.d_rho, "d-rho"},
                                    {config.nu, "nu"},
                                    {config.d_p, "d-p"},
                                    {config.eta, "eta"}})
    if (!(value >= 0)) reject(fmt::format("--{} {}: must be >= 0", name, value));

  // Memory: the largest block with its ghost layers, times the arrays the
  // solver keeps per cell, summed over the ranks of this node, must fit the
  // node's available memory, checked before anything is allocated.
  {
    const int depth = config.depth ? config.depth : 4;  // 0: choose_depth picks at most 4
    long double block_cells = 1;
    for (int axis = 0; axis < 3; ++axis) {
      const long largest = (config.cells[axis] + dims[axis] - 1) / dims[axis];
      block_cells *= static_cast<long double>(largest + 2 * depth);
    }
    const double mine = static_cast<double>(block_cells * Solver::bytes_per_cell);
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    const Comm on_node = Comm::adopt(node);
    const double needed = on_node.allreduce(mine, MPI_SUM);
    // The verdict of the node with the least room, the same on every rank.
    const double available = available_memory();
    const double room = comm.allreduce(available > 0 ? available - needed : 1.0, MPI_MIN);
    if (room < 0 || !std::isfinite(needed))
      reject(fmt::format("--cells {} {} {}: needs about {:.3g} GiB per node ({} ranks of {:.3g} GiB), more than the "
                         "{:.3g} GiB available: use more ranks or fewer cells",
                         config.cells[0], config.cells[1], config.cells[2], needed / 1073741824.0,
                         on_node.size(), mine / 1073741824.0, available / 1073741824.0));
  }

  // Filesystem verdict from rank 0 only, thrown on every rank.
  if (!config.output.empty())
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      const std::string why = apps::output_problem(config.output);
      if (!why.empty()) reject(fmt::format("--output {}: cannot create the folder: {}", config.output, why));
    });
}

}  // namespace domex::mhd

#include "config.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <domex/halo/cartesian.hpp>
#include <filesystem>
#include <system_error>

#include "output.hpp"  // collectively

namespace domex::mhd {
namespace {

constexpr int max_depth = 8;

[[noreturn]] void reject(std::string_view what) { fail("domex-mhd", what); }

/// Why `folder` cannot be created or written ("" if it can), without creating it.
std::string output_problem(const std::filesystem::path& folder) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path existing = fs::absolute(folder, error);
  if (error) return error.message();
  // Walk up to the deepest part that exists: it must be a writable folder.
  while (!fs::exists(existing, error) && existing.has_relative_path()) existing = existing.parent_path();
  if (!fs::is_directory(existing, error)) return fmt::format("{} is not a folder", existing.string());
  if (::access(existing.c_str(), W_OK | X_OK) != 0) return fmt::format("{} is not writable", existing.string());
  return "";
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
  if (config.steps <= 0) reject(fmt::format("--steps {}: must be positive", config.steps));
  if (config.image_every < 0) reject(fmt::format("--image-every {}: must be >= 0", config.image_every));
  if (config.snapshot_every < 0) reject(fmt::format("--snapshot-every {}: must be >= 0", config.snapshot_every));
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

  // Filesystem verdict from rank 0 only, thrown on every rank.
  if (!config.output.empty())
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      const std::string why = output_problem(config.output);
      if (!why.empty()) reject(fmt::format("--output {}: cannot create the folder: {}", config.output, why));
    });
}

}  // namespace domex::mhd

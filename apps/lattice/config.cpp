// SPDX-License-Identifier: BSD-3-Clause
#include "config.hpp"

#include "files.hpp"  // output_problem
#include "hdf5.hpp"   // check_snapshot_format

#include <domex/comm/collective.hpp>
#include <domex/halo/lattice.hpp>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace domex::lattice {
namespace {

[[noreturn]] void reject(std::string_view what) { apps::fail_app("domex-lattice", what); }


}  // namespace

void validate(const Config& config, const Comm& comm) {
  for (std::size_t a = 0; a < 4; ++a)
    if (config.local[a] < 1 || config.local[a] > 1024)
      reject(fmt::format("--local {} {} {} {}: sites per rank on axis {} must be in [1, 1024]", config.local[0],
                         config.local[1], config.local[2], config.local[3], "xyzt"[a]));
  long long fixed = 1;
  for (std::size_t a = 0; a < 4; ++a) {
    if (config.dims[a] < 0)
      reject(fmt::format("--dims {} {} {} {}: ranks on axis {} must be >= 0 (0: automatic)", config.dims[0],
                         config.dims[1], config.dims[2], config.dims[3], "xyzt"[a]));
    if (config.dims[a] > 0) fixed *= config.dims[a];
  }
  if (comm.size() % fixed != 0)
    reject(fmt::format("--dims {} {} {} {}: do not divide {} ranks", config.dims[0], config.dims[1], config.dims[2],
                       config.dims[3], comm.size()));
  double volume = 1;
  for (long n : config.local) volume *= static_cast<double>(n);
  if (volume > 64.0 * 64 * 64 * 64)
    reject(fmt::format("--local {} {} {} {}: {:.0f} sites per rank, more than 64^4", config.local[0], config.local[1],
                       config.local[2], config.local[3], volume));
  if (!(config.kappa > 0 && config.kappa < 0.25))
    reject(fmt::format("--kappa {}: must be in (0, 0.25) (D is invertible for kappa < 1/8 on any gauge field; beyond 0.25 it can be singular)", config.kappa));
  if (!(config.tolerance > 0 && config.tolerance < 1))
    reject(fmt::format("--tolerance {}: must be in (0, 1)", config.tolerance));
  if (config.max_iterations < 1) reject(fmt::format("--max-iterations {}: must be >= 1", config.max_iterations));
  if (config.exchanges < 0 || config.exchanges > 100'000'000)
    reject(fmt::format("--exchanges {}: must be in [0, 1e8]", config.exchanges));
  if (config.bins < 1 || config.bins > 1000) reject(fmt::format("--bins {}: must be in [1, 1000]", config.bins));
  try {
    (void)lattice_path_from_string(config.path);
  } catch (const Error&) {
    reject(fmt::format("--path {}: unknown path (pack, datatype or contiguous)", config.path));
  }
  apps::hdf5::check_snapshot_format("domex-lattice", config.snapshot_format, "none");
  if (config.snapshot_format == "hdf5" && config.output.empty())
    reject("--snapshot-format hdf5: needs an --output folder");
  // Filesystem verdict from rank 0 only, thrown on every rank.
  if (!config.output.empty())
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      const std::string problem = apps::output_problem(config.output);
      if (!problem.empty()) reject(fmt::format("--output {}: {}", config.output, problem));
    });
}

}  // namespace domex::lattice

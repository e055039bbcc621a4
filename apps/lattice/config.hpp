// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex-lattice configuration: every command-line / config-file value, and the
// check that runs before anything is computed or written.

#include <domex/comm/comm.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace domex::lattice {

struct Config {
  std::array<long, 4> local{8, 8, 8, 8};  ///< sites per rank and axis (x, y, z, t); --large: 16^4
  std::array<int, 4> dims{0, 0, 0, 0};    ///< ranks per axis, 0 = automatic; global = local * dims
  double kappa = 0.12;                    ///< Wilson hopping parameter, 0 < kappa < 0.25
  std::uint64_t seed = 20261123;          ///< gauge field and source
  double tolerance = 1e-10;               ///< CG stops at |r| / |b| <= tolerance
  int max_iterations = 1000;
  std::string path = "datatype";          ///< halo path: pack | datatype | contiguous
  bool overlap = true;                    ///< non-blocking |r|^2 sum overlapped with the x update
  long exchanges = 10000;                 ///< halo exchanges timed for the throughput histogram (0: none)
  int bins = 20;                          ///< histogram bins (MB/s)
  std::string output = "results/lattice"; ///< output folder; empty: write nothing
  std::string snapshot_format = "none";   ///< "none" or "hdf5": the CG solution as solution.h5 + .xmf
};

/// Checks `config` for a run on `comm`; throws domex::Error naming the first
/// bad value (e.g. "--kappa 0.3: ..."). Writes nothing. Every rank reaches the
/// same verdict (the same arguments on every rank, plus one agreement on the
/// output folder, which only rank 0 probes).
void validate(const Config& config, const Comm& comm);

}  // namespace domex::lattice

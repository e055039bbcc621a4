// SPDX-License-Identifier: BSD-3-Clause
// domex-mhd built without parallel HDF5: --snapshot-format hdf5 is refused by
// validate() (config.cpp), so write_hdf5 is never reached.
#include <domex/comm/error.hpp>

#include "output.hpp"

namespace domex::mhd {

bool hdf5_available() noexcept { return false; }

void write_hdf5(const Solver&, const std::filesystem::path& path) {
  fail("write_hdf5", "this domex-mhd was built without parallel HDF5; cannot write " + path.string());
}

}  // namespace domex::mhd

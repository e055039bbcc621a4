// SPDX-License-Identifier: BSD-3-Clause
// Built without parallel HDF5: the applications refuse --snapshot-format
// hdf5 in their validate(), so these are never reached by a valid run.
#include <domex/comm/error.hpp>

#include "hdf5.hpp"

namespace domex::apps::hdf5 {

namespace {
[[noreturn]] void missing(const std::filesystem::path& path) {
  fail("hdf5", "built without parallel HDF5; cannot use " + path.string());
}
}  // namespace

bool available() noexcept { return false; }

void write(const Comm&, const std::filesystem::path& path, std::span<const Dataset>, std::string_view) {
  missing(path);
}
Read<double> read_double(const std::filesystem::path& path, const std::string&) { missing(path); }
Read<std::uint64_t> read_uint64(const std::filesystem::path& path, const std::string&) { missing(path); }

}  // namespace domex::apps::hdf5

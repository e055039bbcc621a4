// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Parallel HDF5 snapshots the applications share: one file per snapshot,
// written by every rank from its own hyperslab of each dataset, under a
// temporary name and renamed when complete (all or nothing), with an XDMF
// sidecar so ParaView opens it. Built with parallel HDF5 of the same MPI
// (hdf5.cpp) or without (hdf5_none.cpp: available() is false, writes throw).

#include <domex/comm/comm.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace domex::apps::hdf5 {

/// Whether this build has parallel HDF5 (an application refuses
/// --snapshot-format hdf5 in its validate() when it does not).
[[nodiscard]] bool available() noexcept;

/// One dataset of the file and this rank's part of it: `shape` is the global
/// extent (1 to 8 axes, slowest first, the same on every rank), `start` and
/// `count` this rank's hyperslab (count may hold a 0: the rank writes
/// nothing), `values` its prod(count) values in row-major order. Stored as
/// float64 or uint64 (little-endian) as the span's type is.
struct Dataset {
  std::string name;
  std::vector<std::size_t> shape, start, count;
  std::variant<std::span<const double>, std::span<const std::uint64_t>> values;
};

/// Collective over `comm`: creates `path`.part with the MPI-IO driver, writes
/// every dataset (each rank its hyperslab, independent transfers: Open MPI
/// 4.1.4's collective path can lose data), closes it and renames it to
/// `path`; then, if `sidecar` is not empty, writes it to `path` with the
/// extension .xmf (all or nothing too). No timestamps in the file, so the same
/// data gives the same bytes on any number of ranks. Throws domex::Error on
/// every rank when a rank's part does not fit its shape or a write fails;
/// a .part may then be left behind, never a half-written `path`.
void write(const Comm& comm, const std::filesystem::path& path, std::span<const Dataset> datasets,
           std::string_view sidecar = {});

/// The check of --snapshot-format every application makes: `format` must be
/// `first` or "hdf5", and "hdf5" needs available(). Throws domex::Error
/// "<app>: --snapshot-format <format>: ..." (apps::fail_app) otherwise.
void check_snapshot_format(std::string_view app, std::string_view format, std::string_view first);

/// Serial: the shape and values of a float64 or uint64 dataset of a complete
/// file (for tests and tools; converts to the type asked for).
template <class T>
struct Read {
  std::vector<std::size_t> shape;
  std::vector<T> values;
};
[[nodiscard]] Read<double> read_double(const std::filesystem::path& path, const std::string& name);
[[nodiscard]] Read<std::uint64_t> read_uint64(const std::filesystem::path& path, const std::string& name);

// -- XDMF 3 sidecars ---------------------------------------------------------

/// `<DataItem ... Format="HDF">file:/name</DataItem>` for a dataset of the
/// given shape: Float/8 for float64, Int/8 for uint64 (XDMF readers know
/// 64-bit signed integers everywhere; values below 2^63 read the same).
[[nodiscard]] std::string xdmf_item(std::string_view h5_file, std::string_view name,
                                    std::span<const std::size_t> shape, bool is_uint64 = false);
/// An `<Attribute>` node-centred around xdmf_item (Scalar, or Vector when
/// the last axis holds the 3 components).
[[nodiscard]] std::string xdmf_attribute(std::string_view h5_file, std::string_view name,
                                         std::span<const std::size_t> shape, bool vector, bool is_uint64 = false);
/// The whole document: one uniform grid named `grid` at time `time` whose
/// Topology, Geometry and Attribute nodes are `body`.
[[nodiscard]] std::string xdmf_document(std::string_view grid, double time, std::string_view body);

}  // namespace domex::apps::hdf5

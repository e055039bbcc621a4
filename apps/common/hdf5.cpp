// SPDX-License-Identifier: BSD-3-Clause
// Parallel HDF5 snapshots (built when a parallel HDF5 of the same MPI is
// found; see apps/CMakeLists.txt).
#include "hdf5.hpp"

#include <domex/comm/collective.hpp>
#include <domex/comm/error.hpp>
#include <fmt/format.h>
#include <hdf5.h>
#include <mpi.h>

#include <functional>
#include <numeric>
#include <system_error>

#include "files.hpp"

namespace domex::apps::hdf5 {
namespace {

/// HDF5 calls return a negative value (or id) on failure.
template <class T>
T checked(T value, const char* call, const std::string& path) {
  if (value < 0) fail("hdf5", fmt::format("{} failed for {}", call, path));
  return value;
}

/// Closes an HDF5 id with `close` when it goes out of scope.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  [[nodiscard]] hid_t get() const noexcept { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

constexpr std::size_t max_axes = 8;

std::size_t product(const std::vector<std::size_t>& axes) {
  return std::accumulate(axes.begin(), axes.end(), std::size_t{1}, std::multiplies<>());
}

std::size_t value_count(const Dataset& set) {
  return std::visit([](auto values) { return values.size(); }, set.values);
}

/// What is wrong with this rank's part of `set` ("" if nothing).
std::string problem(const Dataset& set) {
  const std::size_t axes = set.shape.size();
  if (set.name.empty()) return "a dataset without a name";
  if (axes < 1 || axes > max_axes || set.start.size() != axes || set.count.size() != axes)
    return fmt::format("dataset {}: shape, start and count need the same 1 to {} axes", set.name, max_axes);
  for (std::size_t a = 0; a < axes; ++a)
    if (set.start[a] > set.shape[a] || set.count[a] > set.shape[a] - set.start[a])
      return fmt::format("dataset {}: axis {}: start {} + count {} exceeds the extent {}", set.name, a, set.start[a],
                         set.count[a], set.shape[a]);
  if (value_count(set) != product(set.count))
    return fmt::format("dataset {}: {} values for a hyperslab of {}", set.name, value_count(set), product(set.count));
  return "";
}

void write_dataset(hid_t file, const Dataset& set, const std::string& path) {
  const bool is_uint64 = std::holds_alternative<std::span<const std::uint64_t>>(set.values);
  const int axes = static_cast<int>(set.shape.size());
  hsize_t shape[max_axes], start[max_axes], count[max_axes];
  for (int a = 0; a < axes; ++a) {
    shape[a] = set.shape[static_cast<std::size_t>(a)];
    start[a] = set.start[static_cast<std::size_t>(a)];
    count[a] = set.count[static_cast<std::size_t>(a)];
  }
  const Handle file_space(checked(H5Screate_simple(axes, shape, nullptr), "H5Screate_simple", path), H5Sclose);
  const Handle create(checked(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", path), H5Pclose);
  H5Pset_obj_track_times(create.get(), false);  // the same bytes on any np: no timestamps
  const Handle data(checked(H5Dcreate2(file, set.name.c_str(), is_uint64 ? H5T_STD_U64LE : H5T_IEEE_F64LE,
                                       file_space.get(), H5P_DEFAULT, create.get(), H5P_DEFAULT),
                            "H5Dcreate2", path),
                    H5Dclose);
  const std::size_t n = value_count(set);
  const hsize_t flat = n > 0 ? n : 1;
  const Handle memory_space(checked(H5Screate_simple(1, &flat, nullptr), "H5Screate_simple", path), H5Sclose);
  if (n > 0) {
    checked(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr),
            "H5Sselect_hyperslab", path);
  } else {  // nothing from this rank
    checked(H5Sselect_none(file_space.get()), "H5Sselect_none", path);
    checked(H5Sselect_none(memory_space.get()), "H5Sselect_none", path);
  }
  const Handle transfer(checked(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate", path), H5Pclose);
  H5Pset_dxpl_mpio(transfer.get(), H5FD_MPIO_INDEPENDENT);
  const void* values = std::visit([](auto span) -> const void* { return span.data(); }, set.values);
  const double dummy = 0;  // a non-null buffer for an empty selection
  checked(H5Dwrite(data.get(), is_uint64 ? H5T_NATIVE_UINT64 : H5T_NATIVE_DOUBLE, memory_space.get(),
                   file_space.get(), transfer.get(), n > 0 ? values : &dummy),
          "H5Dwrite", path);
}

template <class T>
Read<T> read(const std::filesystem::path& path, const std::string& name, hid_t memory_type) {
  const std::string where = path.string();
  const Handle file(checked(H5Fopen(where.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "H5Fopen", where), H5Fclose);
  const Handle data(checked(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), "H5Dopen2", where + ":/" + name),
                    H5Dclose);
  const Handle space(checked(H5Dget_space(data.get()), "H5Dget_space", where), H5Sclose);
  const int axes = checked(H5Sget_simple_extent_ndims(space.get()), "H5Sget_simple_extent_ndims", where);
  std::vector<hsize_t> shape(static_cast<std::size_t>(axes));
  checked(H5Sget_simple_extent_dims(space.get(), shape.data(), nullptr), "H5Sget_simple_extent_dims", where);
  Read<T> result;
  result.shape.assign(shape.begin(), shape.end());
  result.values.resize(product(result.shape));
  if (!result.values.empty())
    checked(H5Dread(data.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, result.values.data()), "H5Dread",
            where + ":/" + name);
  return result;
}

}  // namespace

bool available() noexcept { return true; }

void write(const Comm& comm, const std::filesystem::path& path, std::span<const Dataset> datasets,
           std::string_view sidecar) {
  const std::string part = path.string() + ".part";
  agree(comm, "hdf5::write", [&] {
    for (const Dataset& set : datasets)
      if (const std::string why = problem(set); !why.empty()) fail("hdf5::write", why + " (" + path.string() + ")");
  });
  collectively(comm, [&] {
    const Handle access(checked(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate", part), H5Pclose);
    checked(H5Pset_fapl_mpio(access.get(), comm.get(), MPI_INFO_NULL), "H5Pset_fapl_mpio", part);
    const Handle file(checked(H5Fcreate(part.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), "H5Fcreate", part),
                      H5Fclose);
    // Every rank creates every dataset (metadata calls are collective in
    // parallel HDF5), so a failure here is a failure on every rank.
    for (const Dataset& set : datasets) write_dataset(file.get(), set, part);
  });
  // H5Fclose above flushed and closed on every rank: the .h5 appears
  // complete, then its sidecar (rank 0 renames and writes).
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    std::error_code error;
    std::filesystem::rename(part, path, error);
    if (error) fail("hdf5::write", fmt::format("rename {}: {}", part, error.message()));
    if (!sidecar.empty()) {
      std::filesystem::path xmf = path;
      xmf.replace_extension(".xmf");
      write_file(xmf, sidecar);
    }
  });
}

Read<double> read_double(const std::filesystem::path& path, const std::string& name) {
  return read<double>(path, name, H5T_NATIVE_DOUBLE);
}
Read<std::uint64_t> read_uint64(const std::filesystem::path& path, const std::string& name) {
  return read<std::uint64_t>(path, name, H5T_NATIVE_UINT64);
}

}  // namespace domex::apps::hdf5

// SPDX-License-Identifier: BSD-3-Clause
// Tests of the applications' parallel HDF5 writer (apps/common/hdf5.hpp):
// 1-D uint64, 2-D and 3-D float64 datasets from uneven per-rank hyperslabs
// (one rank with none) read back exactly; the XDMF sidecar; a bad part is an
// error on every rank and leaves no file under the final name.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <domex/comm/comm.hpp>
#include <domex/comm/error.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "hdf5.hpp"

namespace {

namespace fs = std::filesystem;
namespace h5 = domex::apps::hdf5;

/// A folder shared by all ranks (rank 0's pid), created empty.
fs::path shared_temp(const std::string& name) {
  int pid = static_cast<int>(::getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const fs::path folder = fs::temp_directory_path() / fmt::format("domex-hdf5-test-{}-{}", name, pid);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) fs::create_directories(folder);
  MPI_Barrier(MPI_COMM_WORLD);
  return folder;
}

TEST(Hdf5, DatasetsFromUnevenHyperslabsReadBackExactly) {
  if (!h5::available()) GTEST_SKIP() << "built without parallel HDF5";
  domex::Comm comm{MPI_COMM_WORLD};
  const auto rank = static_cast<std::size_t>(comm.rank()), size = static_cast<std::size_t>(comm.size());
  // Rows: rank r holds 2 r rows (rank 0 none), in rank order.
  const std::size_t mine = 2 * rank, before = rank * (rank - 1), total = size * (size - 1);
  std::vector<std::uint64_t> id;
  std::vector<double> rows;
  for (std::size_t i = before; i < before + mine; ++i) {
    id.push_back((std::uint64_t{1} << 40) + i);
    for (std::size_t a = 0; a < 3; ++a) rows.push_back(0.1 * static_cast<double>(i) + static_cast<double>(a));
  }
  // A 3-D block (Z, 2, 5) split along its slowest axis: rank r owns layer r.
  std::vector<double> layer;
  for (std::size_t j = 0; j < 2; ++j)
    for (std::size_t i = 0; i < 5; ++i) layer.push_back(static_cast<double>(100 * rank + 10 * j + i) / 7.0);
  const std::vector<h5::Dataset> sets{
      {.name = "id", .shape = {total}, .start = {before}, .count = {mine}, .values = std::span<const std::uint64_t>(id)},
      {.name = "rows", .shape = {total, 3}, .start = {before, 0}, .count = {mine, 3},
       .values = std::span<const double>(rows)},
      {.name = "block", .shape = {size, 2, 5}, .start = {rank, 0, 0}, .count = {1, 2, 5},
       .values = std::span<const double>(layer)}};
  const fs::path folder = shared_temp("write");
  const fs::path path = folder / "snapshot.h5";
  h5::write(comm, path, sets, "<Xdmf/>\n");
  if (comm.rank() == 0) {
    const auto ids = h5::read_uint64(path, "id");
    ASSERT_EQ(ids.shape, std::vector<std::size_t>{total});
    for (std::size_t i = 0; i < total; ++i) EXPECT_EQ(ids.values[i], (std::uint64_t{1} << 40) + i);
    const auto back = h5::read_double(path, "rows");
    ASSERT_EQ(back.shape, (std::vector<std::size_t>{total, 3}));
    for (std::size_t i = 0; i < total; ++i)
      for (std::size_t a = 0; a < 3; ++a)
        EXPECT_EQ(back.values[3 * i + a], 0.1 * static_cast<double>(i) + static_cast<double>(a));
    const auto block = h5::read_double(path, "block");
    ASSERT_EQ(block.shape, (std::vector<std::size_t>{size, 2, 5}));
    for (std::size_t r = 0; r < size; ++r)
      for (std::size_t j = 0; j < 2; ++j)
        for (std::size_t i = 0; i < 5; ++i)
          EXPECT_EQ(block.values[10 * r + 5 * j + i], static_cast<double>(100 * r + 10 * j + i) / 7.0);
    std::ifstream sidecar(folder / "snapshot.xmf");
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(sidecar), {}), "<Xdmf/>\n");
    EXPECT_FALSE(fs::exists(folder / "snapshot.h5.part"));
    fs::remove_all(folder);
  }
}

TEST(Hdf5, OneRanksBadPartFailsEveryRankAndWritesNoFile) {
  if (!h5::available()) GTEST_SKIP() << "built without parallel HDF5";
  domex::Comm comm{MPI_COMM_WORLD};
  const auto rank = static_cast<std::size_t>(comm.rank()), size = static_cast<std::size_t>(comm.size());
  // The last rank claims 2 values but passes 1.
  const std::vector<double> values(rank + 1 == size ? 1 : 2, 1.0);
  const std::vector<h5::Dataset> sets{{.name = "x", .shape = {2 * size}, .start = {2 * rank}, .count = {2},
                                       .values = std::span<const double>(values)}};
  const fs::path folder = shared_temp("bad");
  EXPECT_THROW(h5::write(comm, folder / "bad.h5", sets), domex::Error);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(fs::exists(folder / "bad.h5"));
  EXPECT_FALSE(fs::exists(folder / "bad.h5.part"));  // refused before anything was created
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm.rank() == 0) fs::remove_all(folder);
}

TEST(Hdf5, XdmfNamesTheDatasetsAndShapes) {
  const std::vector<std::size_t> shape{7, 3};
  EXPECT_EQ(h5::xdmf_item("a.h5", "position", shape),
            "<DataItem Dimensions=\"7 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">a.h5:/position</DataItem>");
  const std::vector<std::size_t> ids{7};
  const std::string id = h5::xdmf_attribute("a.h5", "id", ids, false, true);
  EXPECT_NE(id.find("AttributeType=\"Scalar\""), std::string::npos);
  EXPECT_NE(id.find("NumberType=\"Int\" Precision=\"8\""), std::string::npos);
  const std::string document = h5::xdmf_document("g", 0.5, "BODY");
  EXPECT_NE(document.find("<Grid Name=\"g\" GridType=\"Uniform\">"), std::string::npos);
  EXPECT_NE(document.find("<Time Value=\"0.5\"/>\nBODY  </Grid>"), std::string::npos);
}

}  // namespace

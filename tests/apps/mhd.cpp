// SPDX-License-Identifier: BSD-3-Clause
// Tests of domex-mhd: bitwise identity with a 1-rank run for any depth and
// dims, mass conservation, configuration errors, PNG and VTK output.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "config.hpp"
#include "output.hpp"
#include "solver.hpp"

namespace {

namespace fs = std::filesystem;
using namespace domex::mhd;

/// A run small enough for np 8 on 2 cores: 12 x 10 x 8 cells, 1 x 1 x 1.25 each.
Config small(const std::string& problem, int depth = 1, std::array<int, 3> dims = {0, 0, 0}) {
  Config config;
  config.cells = {12, 10, 8};
  config.steps = 8;
  config.depth = depth;
  config.dims = dims;
  config.problem = problem;
  config.output = "";
  config.x_min = -6;
  config.x_max = 6;
  config.half_width = 5;
  config.dipole = 20;
  config.r_inner = 2.5;
  return config;
}

Solver run(const domex::Comm& comm, const Config& config) {
  Solver solver(comm, config);
  for (long s = 0; s < config.steps; ++s) solver.step();
  solver.check_state();
  return solver;
}

/// Owned cells of `solver` that differ in any bit from the same global cell of `reference`.
std::size_t differing_cells(const Solver& solver, const Solver& reference, std::string& first) {
  const auto n = solver.grid().local_cells(), offset = solver.grid().offset();
  std::size_t differing = 0;
  for (long k = 0; k < static_cast<long>(n[2]); ++k)
    for (long j = 0; j < static_cast<long>(n[1]); ++j)
      for (long i = 0; i < static_cast<long>(n[0]); ++i) {
        const std::size_t mine = solver.halo().index(i, j, k);
        const std::size_t theirs = reference.halo().index(
            i + static_cast<long>(offset[0]), j + static_cast<long>(offset[1]), k + static_cast<long>(offset[2]));
        for (std::size_t f = 0; f < field::count; ++f)
          if (std::memcmp(&solver.field(f)[mine], &reference.field(f)[theirs], sizeof(double)) != 0) {
            if (differing++ == 0)
              first = fmt::format("field {} at global cell ({}, {}, {}): {:.17g} vs {:.17g}", f, offset[0] + i,
                                  offset[1] + j, offset[2] + k, solver.field(f)[mine], reference.field(f)[theirs]);
            break;
          }
      }
  return differing;
}

/// A folder name shared by all ranks (rank 0's pid), under the temp folder.
fs::path shared_temp(const std::string& name) {
  int pid = static_cast<int>(::getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return fs::temp_directory_path() / fmt::format("domex-mhd-test-{}-{}", name, pid);
}

class Identity : public testing::TestWithParam<const char*> {};

TEST_P(Identity, BitwiseEqualToOneRankForEveryDepthAndDims) {
  domex::Comm world{MPI_COMM_WORLD};
  const int ranks = world.size();
  const Config base = small(GetParam());
  // The reference: the same global grid on this rank alone.
  domex::Comm self{MPI_COMM_SELF};
  const Solver reference = run(self, base);
  EXPECT_NE(reference.checksum(), Solver(self, base).checksum()) << "the run should change the state";

  int variants = 0;
  for (const std::array<int, 3> dims :
       {std::array{0, 0, 0}, std::array{ranks, 1, 1}, std::array{1, ranks, 1}, std::array{1, 1, ranks}})
    for (const int depth : {1, 2, 3, 0}) {
      const Config config = small(GetParam(), depth, dims);
      try {
        validate(config, world);
      } catch (const domex::Error&) {
        continue;  // the same verdict on every rank: too few cells per rank for this depth
      }
      const Solver solver = run(world, config);
      std::string first;
      EXPECT_EQ(differing_cells(solver, reference, first), 0u) << GetParam() << " dims " << dims[0] << "x" << dims[1]
                                                               << "x" << dims[2] << " depth " << depth << ": " << first;
      EXPECT_EQ(solver.checksum(), reference.checksum());
      EXPECT_EQ(solver.exchanges(), (config.steps + solver.depth() - 1) / solver.depth());
      ++variants;
    }
  EXPECT_GE(variants, 4);
}

INSTANTIATE_TEST_SUITE_P(Mhd, Identity, testing::Values("magnetosphere", "periodic-wave"));

TEST(Mhd, PeriodicBoxConservesMass) {
  domex::Comm world{MPI_COMM_WORLD};
  Config config = small("periodic-wave", 2);
  config.steps = 12;
  Solver solver(world, config);
  const double initial = solver.mass();
  const auto checksum = solver.checksum();
  for (long s = 0; s < config.steps; ++s) solver.step();
  solver.check_state();
  EXPECT_NE(solver.checksum(), checksum);
  EXPECT_GT(initial, 0.0);
  EXPECT_LT(std::abs(solver.mass() - initial) / initial, 1e-12) << solver.mass() << " vs " << initial;
}

TEST(Mhd, ConfigErrorsNameTheValueAndWriteNothing) {
  domex::Comm world{MPI_COMM_WORLD};
  const int ranks = world.size();
  const fs::path folder = shared_temp("config");
  const auto expect_error = [&](Config config, const std::string& expected) {
    if (config.output.empty()) config.output = (folder / "out").string();
    try {
      validate(config, world);
      ADD_FAILURE() << "no error; expected one naming " << expected;
    } catch (const domex::Error& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
    EXPECT_FALSE(fs::exists(config.output)) << config.output;
  };
  Config deep = small("periodic-wave", 4, {ranks, 1, 1});
  deep.cells = {3L * ranks, 8, 8};
  expect_error(deep, "--depth 4: a rank owns only 3 cells along x; need depth <= 3");
  expect_error(small("magnetosphere", 1, {ranks + 1, 1, 1}), fmt::format("--dims {} 1 1", ranks + 1));
  expect_error(small("tokamak"), "--problem tokamak");
  Config empty = small("magnetosphere");
  empty.cells = {0, 10, 8};
  expect_error(empty, "--cells 0 10 8");
  Config no_steps = small("magnetosphere");
  no_steps.steps = -3;
  expect_error(no_steps, "--steps -3");
  Config too_deep = small("magnetosphere", 9);
  expect_error(too_deep, "--depth 9");

  // An output folder below a regular file cannot be created.
  if (world.rank() == 0) {
    fs::create_directories(folder);
    std::ofstream(folder / "file") << "x";
  }
  world.barrier();
  Config blocked = small("magnetosphere");
  blocked.output = (folder / "file" / "out").string();
  expect_error(blocked, "--output");
  // A good configuration passes and still writes nothing.
  Config good = small("magnetosphere");
  good.output = (folder / "out").string();
  EXPECT_NO_THROW(validate(good, world));
  EXPECT_FALSE(fs::exists(good.output));
  world.barrier();
  if (world.rank() == 0) fs::remove_all(folder);
}

std::uint32_t big_endian32(const std::string& bytes, std::size_t at) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < 4; ++i) value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

float big_endian_float(const std::string& bytes, std::size_t at) {
  const std::uint32_t bits = big_endian32(bytes, at);
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(Mhd, WritesPngAndVtk) {
  domex::Comm world{MPI_COMM_WORLD};
  const fs::path folder = shared_temp("output");
  if (world.rank() == 0) fs::create_directories(folder);
  world.barrier();
  Config config = small("magnetosphere", 2);
  config.steps = 3;
  const Solver solver = run(world, config);

  // PNG: signature, IHDR size, compressed (libpng), inner-boundary cells masked grey.
  const domex::apps::Picture image = slice_image(solver);
  if (world.rank() == 0) {
    ASSERT_GT(image.width, 2 * 12 * 32u);  // two panels of 12 x 10 cells at 32 pixels per cell, plus axes
    ASSERT_GT(image.height, 10 * 32u);
    ASSERT_EQ(image.rgb.size(), 3 * image.width * image.height);
    std::size_t grey = 0;
    for (std::size_t p = 0; p < image.rgb.size(); p += 3)
      grey += image.rgb[p] == 190 && image.rgb[p + 1] == 190 && image.rgb[p + 2] == 190;
    EXPECT_GT(grey, 2 * 32u * 32u);  // at least a cell inside r_inner per panel
    domex::apps::write_png(folder / "slice.png", image);
    const std::string bytes = read_file(folder / "slice.png");
    ASSERT_GE(bytes.size(), 33u);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_EQ(bytes.substr(12, 4), "IHDR");
    EXPECT_EQ(big_endian32(bytes, 16), image.width);
    EXPECT_EQ(big_endian32(bytes, 20), image.height);
    EXPECT_LT(bytes.size(), image.rgb.size() / 10);  // flat colours compress well
    EXPECT_FALSE(fs::exists(folder / "slice.png.part"));
  } else {
    EXPECT_EQ(image.width, 0u);
  }

  // VTK: header, block layout, and every cell's rho and B as written by its owner.
  write_vtk(solver, folder / "snapshot.vtk");
  const auto n = solver.grid().local_cells(), offset = solver.grid().offset();
  std::vector<double> mine;  // global index, rho, Bx, By, Bz per owned cell
  for (long k = 0; k < static_cast<long>(n[2]); ++k)
    for (long j = 0; j < static_cast<long>(n[1]); ++j)
      for (long i = 0; i < static_cast<long>(n[0]); ++i) {
        const std::size_t c = solver.halo().index(i, j, k);
        mine.push_back(static_cast<double>(
            ((offset[2] + static_cast<std::size_t>(k)) * 10 + offset[1] + static_cast<std::size_t>(j)) * 12 +
            offset[0] + static_cast<std::size_t>(i)));
        mine.push_back(solver.field(field::rho)[c]);
        for (int a = 0; a < 3; ++a)
          mine.push_back(solver.dipole(a)[c] + solver.field(field::bx + static_cast<std::size_t>(a))[c]);
      }
  const auto all = world.allgatherv(std::span<const double>(mine));
  ASSERT_EQ(all.size(), 5u * 960);
  if (world.rank() == 0) {
    const std::string bytes = read_file(folder / "snapshot.vtk");
    EXPECT_EQ(bytes.rfind("# vtk DataFile Version 3.0\n", 0), 0u);
    EXPECT_NE(bytes.find("\nBINARY\nDATASET STRUCTURED_POINTS\nDIMENSIONS 12 10 8\n"), std::string::npos);
    EXPECT_NE(bytes.find("\nPOINT_DATA 960\n"), std::string::npos);
    const std::string rho_header = "SCALARS rho float 1\nLOOKUP_TABLE default\n";
    const std::size_t rho_at = bytes.find(rho_header) + rho_header.size();
    const std::size_t p_at = bytes.find("\nSCALARS p float 1\nLOOKUP_TABLE default\n", rho_at);
    const std::size_t b_at = bytes.find("\nVECTORS B float\n", rho_at) + 17;
    EXPECT_EQ(p_at, rho_at + 4 * 960);
    EXPECT_EQ(bytes.size(), b_at + 12 * 960 + 1);
    std::size_t wrong = 0;
    for (std::size_t cell = 0; cell < 960 && bytes.size() == b_at + 12 * 960 + 1; ++cell) {
      const auto* row = &all[5 * cell];
      const auto g = static_cast<std::size_t>(row[0]);
      wrong += big_endian_float(bytes, rho_at + 4 * g) != static_cast<float>(row[1]);
      for (std::size_t a = 0; a < 3; ++a)
        wrong += big_endian_float(bytes, b_at + 12 * g + 4 * a) != static_cast<float>(row[2 + a]);
    }
    EXPECT_EQ(wrong, 0u);
    EXPECT_FALSE(fs::exists(folder / "snapshot.vtk.part"));
  }
  world.barrier();
  if (world.rank() == 0) fs::remove_all(folder);
}

}  // namespace

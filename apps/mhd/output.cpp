// SPDX-License-Identifier: BSD-3-Clause
#include "output.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>

namespace domex::mhd {
namespace {

/// The big-endian bit pattern of `value` as float32 (VTK legacy binary).
std::uint32_t big_endian_float(double value) {
  const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(value));
  if constexpr (std::endian::native == std::endian::big) return bits;
  return (bits >> 24) | ((bits >> 8) & 0xff00u) | ((bits << 8) & 0xff0000u) | (bits << 24);
}

}  // namespace

std::array<ColourRange, 2> slice_ranges(const Config& config) {
  if (parse_problem(config.problem) == Problem::periodic_wave)
    return {ColourRange{0.7 * config.rho_sw, 1.3 * config.rho_sw, false},
            ColourRange{0.5 * config.p_sw, 1.5 * config.p_sw, false}};
  return {ColourRange{config.rho_sw / 4, 2 * std::max(4 * config.rho_sw, config.rho_inner), true},
          ColourRange{config.p_sw / 4, 2 * (config.p_sw + config.rho_sw * config.v_sw * config.v_sw), true}};
}

apps::Picture slice_image(const Solver& solver) {
  const CartesianGrid& grid = solver.grid();
  const auto global = grid.global_cells(), n = grid.local_cells(), offset = grid.offset();
  const auto nz = static_cast<long>(global[2]);
  const long layer = std::clamp(std::lround(-solver.centre(2, 0) / solver.spacing()[2]), 0L, nz - 1);
  const bool mine = static_cast<long>(offset[2]) <= layer && layer < static_cast<long>(offset[2] + n[2]);

  // Each rank on the layer sends (x offset, y offset, nx, ny) and its cells'
  // rho and p; the others send nothing.
  std::array<long long, 4> patch{};
  std::vector<double> values;
  if (mine) {
    patch = {static_cast<long long>(offset[0]), static_cast<long long>(offset[1]), static_cast<long long>(n[0]),
             static_cast<long long>(n[1])};
    const long k = layer - static_cast<long>(offset[2]);
    for (long j = 0; j < static_cast<long>(n[1]); ++j)
      for (long i = 0; i < static_cast<long>(n[0]); ++i)
        for (const std::size_t f : {field::rho, field::p})
          values.push_back(solver.field(f)[solver.halo().index(i, j, k)]);
  }
  const MPI_Comm comm = grid.comm().get();
  const int ranks = grid.comm().size(), root = grid.comm().rank() == 0;
  std::vector<long long> patches(root ? 4 * static_cast<std::size_t>(ranks) : 0);
  check_mpi(MPI_Gather(patch.data(), 4, MPI_LONG_LONG, patches.data(), 4, MPI_LONG_LONG, 0, comm), "MPI_Gather");
  std::vector<int> counts(static_cast<std::size_t>(ranks)), displs(static_cast<std::size_t>(ranks));
  std::size_t total = 0;
  for (std::size_t r = 0; root && r < counts.size(); ++r) {
    counts[r] = static_cast<int>(2 * patches[4 * r + 2] * patches[4 * r + 3]);
    displs[r] = static_cast<int>(total);
    total += static_cast<std::size_t>(counts[r]);
  }
  std::vector<double> all(total);
  check_mpi(MPI_Gatherv(values.data(), static_cast<int>(values.size()), MPI_DOUBLE, all.data(), counts.data(),
                        displs.data(), MPI_DOUBLE, 0, comm),
            "MPI_Gatherv");
  if (!root) return {};

  const std::size_t nx = global[0], ny = global[1];
  std::array<std::vector<double>, 2> panel{std::vector<double>(nx * ny), std::vector<double>(nx * ny)};
  for (std::size_t r = 0; r < counts.size(); ++r) {
    const auto* q = all.data() + displs[r];
    for (long long j = 0; j < patches[4 * r + 3]; ++j)
      for (long long i = 0; i < patches[4 * r + 2]; ++i, q += 2)
        for (std::size_t f = 0; f < 2; ++f)
          panel[f][static_cast<std::size_t>(patches[4 * r + 1] + j) * nx +
                   static_cast<std::size_t>(patches[4 * r] + i)] = q[f];
  }
  // Cells inside the inner boundary are reset every step: masked (grey).
  const double z = solver.centre(2, layer);
  if (solver.problem() == Problem::magnetosphere)
    for (std::size_t j = 0; j < ny; ++j)
      for (std::size_t i = 0; i < nx; ++i) {
        const double x = solver.centre(0, static_cast<long>(i)), y = solver.centre(1, static_cast<long>(j));
        if (std::sqrt(x * x + y * y + z * z) < solver.config().r_inner)
          panel[0][j * nx + i] = panel[1][j * nx + i] = std::numeric_limits<double>::quiet_NaN();
      }
  const auto h = solver.spacing();
  const auto ranges = slice_ranges(solver.config());
  const std::array<const char*, 2> names{"rho", "p"};
  std::array<apps::Picture, 2> pictures;
  for (std::size_t f = 0; f < 2; ++f)
    pictures[f] = apps::render_field(
        nx, ny, panel[f],
        {.lo = ranges[f].lo,
         .hi = ranges[f].hi,
         .log_scale = ranges[f].log_scale,
         .title = fmt::format("{}  t = {:.4g}  step {}", names[f], solver.time(), solver.steps()),
         .x_label = "x (planet radii)",
         .y_label = fmt::format("y at z = {:.3g}", z),
         .colorbar_label = ranges[f].log_scale ? fmt::format("{} (log scale)", names[f]) : names[f],
         .x_range = {solver.centre(0, 0) - h[0] / 2, solver.centre(0, static_cast<long>(nx) - 1) + h[0] / 2},
         .y_range = {solver.centre(1, 0) - h[1] / 2, solver.centre(1, static_cast<long>(ny) - 1) + h[1] / 2}});
  return apps::side_by_side(pictures);
}

void write_vtk(const Solver& solver, const std::filesystem::path& path) {
  const CartesianGrid& grid = solver.grid();
  const auto global = grid.global_cells(), n = grid.local_cells();
  const auto h = solver.spacing();
  const std::size_t points = global[0] * global[1] * global[2], local = n[0] * n[1] * n[2];
  if (3 * local > static_cast<std::size_t>(INT_MAX)) fail("write_vtk", fmt::format("{} cells on one rank", local));

  // Text between the binary blocks; every rank builds the same, so every
  // rank knows every block's offset.
  const std::array<std::string, 5> text{
      fmt::format("# vtk DataFile Version 3.0\ndomex-mhd {} step {} time {:.6g}\nBINARY\nDATASET STRUCTURED_POINTS\n"
                  "DIMENSIONS {} {} {}\nORIGIN {} {} {}\nSPACING {} {} {}\nPOINT_DATA {}\n"
                  "SCALARS rho float 1\nLOOKUP_TABLE default\n",
                  to_string(solver.problem()), solver.steps(), solver.time(), global[0], global[1], global[2],
                  solver.centre(0, 0), solver.centre(1, 0), solver.centre(2, 0), h[0], h[1], h[2], points),
      "\nSCALARS p float 1\nLOOKUP_TABLE default\n", "\nVECTORS v float\n", "\nVECTORS B float\n", "\n"};
  std::array<MPI_Offset, 5> at{};  // where text[i] starts
  for (std::size_t i = 1; i < 5; ++i)
    at[i] = at[i - 1] + static_cast<MPI_Offset>(text[i - 1].size() + 4 * (i <= 2 ? 1 : 3) * points);

  // This rank's blocks, x fastest, vector components interleaved.
  std::array<std::vector<std::uint32_t>, 4> block;
  for (long k = 0; k < static_cast<long>(n[2]); ++k)
    for (long j = 0; j < static_cast<long>(n[1]); ++j)
      for (long i = 0; i < static_cast<long>(n[0]); ++i) {
        const std::size_t c = solver.halo().index(i, j, k);
        block[0].push_back(big_endian_float(solver.field(field::rho)[c]));
        block[1].push_back(big_endian_float(solver.field(field::p)[c]));
        for (int a = 0; a < 3; ++a) {
          block[2].push_back(big_endian_float(solver.field(field::vx + static_cast<std::size_t>(a))[c]));
          block[3].push_back(
              big_endian_float(solver.dipole(a)[c] + solver.field(field::bx + static_cast<std::size_t>(a))[c]));
        }
      }

  const std::string part = path.string() + ".part";
  const MPI_Comm comm = grid.comm().get();
  MPI_File file = MPI_FILE_NULL;
  check_mpi(MPI_File_open(comm, part.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &file),
            "MPI_File_open " + part);
  check_mpi(MPI_File_set_size(file, at[4] + 1), "MPI_File_set_size");  // drop what an older file left
  if (grid.comm().rank() == 0)
    for (std::size_t i = 0; i < 5; ++i)
      check_mpi(
          MPI_File_write_at(file, at[i], text[i].data(), static_cast<int>(text[i].size()), MPI_CHAR, MPI_STATUS_IGNORE),
          "MPI_File_write_at");
  // Each block is written as runs that are contiguous in the file (x rows,
  // merged where rows or planes are adjacent) with independent
  // MPI_File_write_at. Not MPI_File_write_all through a subarray view: Open MPI
  // 4.1.4's default collective path (fcoll vulcan) sieves writes with holes
  // (read, modify, write back) without locking, and about one run in ten of
  // the 4-rank test lost another aggregator's data (open-mpi/ompi#12718).
  for (std::size_t b = 0; b < 4; ++b) {
    const std::size_t components = b < 2 ? 1 : 3;  // vectors: (3, NX, NY, NZ), x fastest
    const MPI_Offset start = at[b] + static_cast<MPI_Offset>(text[b].size());
    std::size_t run_file = 0, run_memory = 0, run_length = 0;  // in floats
    const auto flush = [&] {
      if (run_length == 0) return;
      check_mpi(MPI_File_write_at(file, start + static_cast<MPI_Offset>(4 * run_file), block[b].data() + run_memory,
                                  static_cast<int>(run_length), MPI_FLOAT, MPI_STATUS_IGNORE),
                "MPI_File_write_at " + part);
      run_length = 0;
    };
    for (std::size_t k = 0; k < n[2]; ++k)
      for (std::size_t j = 0; j < n[1]; ++j) {
        const std::size_t file_at = solver.global_index(0, j, k) * components;
        const std::size_t memory_at = (k * n[1] + j) * n[0] * components, length = n[0] * components;
        if (run_length > 0 && run_file + run_length == file_at) {
          run_length += length;
          continue;
        }
        flush();
        run_file = file_at;
        run_memory = memory_at;
        run_length = length;
      }
    flush();
  }
  check_mpi(MPI_File_close(&file), "MPI_File_close");
  std::error_code error;
  if (grid.comm().rank() == 0) std::filesystem::rename(part, path, error);
  int failed = error ? 1 : 0;
  check_mpi(MPI_Bcast(&failed, 1, MPI_INT, 0, comm), "MPI_Bcast");
  if (failed) fail("write_vtk", fmt::format("rename {}: {}", part, error ? error.message() : "failed on rank 0"));
  grid.comm().barrier();  // the file is complete when any rank returns
}


}  // namespace domex::mhd

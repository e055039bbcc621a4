// SPDX-License-Identifier: BSD-3-Clause
#include "checkpoint.hpp"

#include <domex/comm/collective.hpp>
#include <domex/comm/error.hpp>
#include <fmt/format.h>
#include <mpi.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace domex::mhd {
namespace {

constexpr char magic[8] = {'D', 'X', 'M', 'H', 'D', 'C', 'K', '1'};
constexpr MPI_Offset header_bytes = 512;

struct Header {
  char magic[8];
  std::uint64_t cells[3];
  std::int64_t steps;
  double dt;
  char problem[32];
  double parameters[17];
};
static_assert(sizeof(Header) <= header_bytes);

/// The parameters that change the solution (box and physics): restart
/// requires them bitwise equal. dt comes from the checkpoint.
std::array<double, 17> parameters_of(const Config& c) {
  return {c.x_min, c.x_max, c.half_width, c.rho_sw, c.v_sw, c.p_sw,  c.bz_imf, c.dipole, c.gm,
          c.r_inner, c.rho_inner, c.p_inner, c.gamma, c.d_rho, c.nu, c.d_p, c.eta};
}
constexpr std::array<const char*, 17> parameter_names = {
    "--x-min", "--x-max", "--half-width", "--rho-sw", "--v-sw",  "--p-sw",  "--bz-imf", "--dipole", "--gm",
    "--r-inner", "--rho-inner", "--p-inner", "--gamma", "--d-rho", "--nu", "--d-p", "--eta"};

Header header_of(const Solver& solver) {
  Header header{};
  std::memcpy(header.magic, magic, sizeof magic);
  const auto cells = solver.grid().global_cells();
  for (int a = 0; a < 3; ++a) header.cells[a] = cells[a];
  header.steps = solver.steps();
  header.dt = solver.dt();
  std::strncpy(header.problem, to_string(solver.problem()), sizeof header.problem - 1);
  const auto parameters = parameters_of(solver.config());
  std::memcpy(header.parameters, parameters.data(), sizeof header.parameters);
  return header;
}

/// Calls `run(file_offset, memory_index, length)` for each x row of this
/// rank's owned cells of field f (offsets in values; memory on the halo layout).
template <class Run>
void for_each_row(const Solver& solver, std::size_t f, Run&& run) {
  const auto n = solver.grid().local_cells(), global = solver.grid().global_cells();
  const std::size_t total = global[0] * global[1] * global[2];
  for (std::size_t k = 0; k < n[2]; ++k)
    for (std::size_t j = 0; j < n[1]; ++j)
      run(f * total + solver.global_index(0, j, k),
          solver.halo().index(0, static_cast<long>(j), static_cast<long>(k)), n[0]);
}

MPI_Offset byte_offset(std::size_t values) { return header_bytes + static_cast<MPI_Offset>(values * sizeof(double)); }

}  // namespace

void write_checkpoint(const Solver& solver, const std::filesystem::path& path) {
  const Comm& comm = solver.grid().comm();
  const std::string part = path.string() + ".part";
  const auto global = solver.grid().global_cells();
  const std::size_t total = global[0] * global[1] * global[2];
  collectively(comm, [&] {
    MPI_File file = MPI_FILE_NULL;
    check_mpi(MPI_File_open(comm.get(), part.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &file),
              "MPI_File_open " + part);
    check_mpi(MPI_File_set_size(file, byte_offset(field::count * total)), "MPI_File_set_size " + part);
    if (comm.rank() == 0) {
      std::array<char, header_bytes> bytes{};
      const Header header = header_of(solver);
      std::memcpy(bytes.data(), &header, sizeof header);
      check_mpi(MPI_File_write_at(file, 0, bytes.data(), header_bytes, MPI_BYTE, MPI_STATUS_IGNORE),
                "MPI_File_write_at " + part);
    }
    // Independent writes of x rows (see write_vtk: no collective subarray writes).
    for (std::size_t f = 0; f < field::count; ++f)
      for_each_row(solver, f, [&](std::size_t file_at, std::size_t memory_at, std::size_t length) {
        check_mpi(MPI_File_write_at(file, byte_offset(file_at), solver.field(f).data() + memory_at,
                                    static_cast<int>(length), MPI_DOUBLE, MPI_STATUS_IGNORE),
                  "MPI_File_write_at " + part);
      });
    check_mpi(MPI_File_close(&file), "MPI_File_close " + part);
  });
  // Complete on every rank: rank 0 renames, every rank learns whether it worked.
  std::error_code error;
  if (comm.rank() == 0) std::filesystem::rename(part, path, error);
  int failed = error ? 1 : 0;
  check_mpi(MPI_Bcast(&failed, 1, MPI_INT, 0, comm.get()), "MPI_Bcast");
  if (failed)
    fail("write_checkpoint", fmt::format("rename {}: {}", part, error ? error.message() : "failed on rank 0"));
}

void read_checkpoint(Solver& solver, const std::filesystem::path& path) {
  const Comm& comm = solver.grid().comm();
  const std::string name = path.string();
  const auto global = solver.grid().global_cells();
  const std::size_t total = global[0] * global[1] * global[2];
  MPI_File file = MPI_FILE_NULL;
  // Open and check the header on every rank (all read the same bytes, so
  // all reach the same verdict; agree() makes it one error everywhere).
  std::string problem;
  Header header{};
  const int opened = MPI_File_open(comm.get(), name.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL, &file);
  if (opened != MPI_SUCCESS) {
    problem = fmt::format("cannot open {}", name);
  } else {
    MPI_Offset size = 0;
    std::array<char, header_bytes> bytes{};
    if (MPI_File_get_size(file, &size) != MPI_SUCCESS || size < header_bytes ||
        MPI_File_read_at(file, 0, bytes.data(), header_bytes, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      problem = fmt::format("{} is not a domex-mhd checkpoint (too short or unreadable)", name);
    } else {
      std::memcpy(&header, bytes.data(), sizeof header);
      const auto parameters = parameters_of(solver.config());
      if (std::memcmp(header.magic, magic, sizeof magic) != 0) {
        problem = fmt::format("{} is not a domex-mhd checkpoint (no DXMHDCK1 header)", name);
      } else if (header.cells[0] != global[0] || header.cells[1] != global[1] || header.cells[2] != global[2]) {
        problem = fmt::format("{} holds {}x{}x{} cells, this run has --cells {} {} {}", name, header.cells[0],
                              header.cells[1], header.cells[2], global[0], global[1], global[2]);
      } else if (std::string(header.problem, strnlen(header.problem, sizeof header.problem)) !=
                 to_string(solver.problem())) {
        problem = fmt::format("{} is of problem {}, this run is {}",
                              name, std::string(header.problem, strnlen(header.problem, sizeof header.problem)),
                              to_string(solver.problem()));
      } else if (size != byte_offset(field::count * total)) {
        problem = fmt::format("{} has {} bytes, a complete checkpoint of this grid has {}", name, size,
                              byte_offset(field::count * total));
      } else if (header.steps < 0 || !(header.dt > 0)) {
        problem = fmt::format("{}: invalid steps {} or dt {}", name, header.steps, header.dt);
      } else {
        for (std::size_t p = 0; p < parameters.size(); ++p)
          if (std::memcmp(&header.parameters[p], &parameters[p], sizeof(double)) != 0) {
            problem = fmt::format("{} was written with {} {}, this run has {}", name, parameter_names[p],
                                  header.parameters[p], parameters[p]);
            break;
          }
      }
    }
  }
  if (!problem.empty() && file != MPI_FILE_NULL) MPI_File_close(&file);
  agree(comm, "restart", problem);

  std::array<std::vector<double>, field::count> owned;
  collectively(comm, [&] {
    for (std::size_t f = 0; f < field::count; ++f) {
      owned[f] = solver.field(f);  // the halo layout; owned cells overwritten below
      for_each_row(solver, f, [&](std::size_t file_at, std::size_t memory_at, std::size_t length) {
        check_mpi(MPI_File_read_at(file, byte_offset(file_at), owned[f].data() + memory_at, static_cast<int>(length),
                                   MPI_DOUBLE, MPI_STATUS_IGNORE),
                  "MPI_File_read_at " + name);
      });
    }
    check_mpi(MPI_File_close(&file), "MPI_File_close " + name);
  });
  solver.restore(header.steps, header.dt, owned);
}

}  // namespace domex::mhd

// SPDX-License-Identifier: BSD-3-Clause
#include "files.hpp"

#include <domex/comm/collective.hpp>
#include <domex/comm/comm.hpp>
#include <domex/comm/error.hpp>

#include <fmt/format.h>

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string_view>
#include <system_error>
#include <thread>

namespace domex::apps {

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  const std::filesystem::path part = path.string() + ".part";
  {
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) fail("write_file", fmt::format("cannot write {}", part.string()));
  }
  std::error_code error;
  std::filesystem::rename(part, path, error);
  if (error) fail("write_file", fmt::format("rename {} to {}: {}", part.string(), path.string(), error.message()));
}

std::string output_problem(const std::filesystem::path& folder) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path target = fs::absolute(folder, error);
  if (error) return error.message();
  fs::path existing = target;
  while (!fs::exists(existing, error) && existing.has_relative_path()) existing = existing.parent_path();
  if (!fs::is_directory(existing, error)) return fmt::format("{} is not a folder", existing.string());
  const auto remove_created = [&] {
    for (fs::path p = target; p != existing && p.has_relative_path(); p = p.parent_path()) fs::remove(p, error);
  };
  fs::create_directories(target, error);
  if (error) {
    const std::string why = error.message();
    remove_created();
    return why;
  }
  const fs::path probe = target / ".domex-write-probe";
  {
    std::ofstream out(probe, std::ios::binary | std::ios::trunc);
    out << "probe\n";
    out.close();
    if (!out) {
      fs::remove(probe, error);
      remove_created();
      return fmt::format("cannot write a file in {}", target.string());
    }
  }
  fs::remove(probe, error);
  remove_created();
  return "";
}
bool warn_if_oversubscribed(const Comm& comm, std::string_view app, int threads) {
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  int on_node = 1;
  check_mpi(MPI_Comm_size(node, &on_node), "MPI_Comm_size");
  check_mpi(MPI_Comm_free(&node), "MPI_Comm_free");
  const long cores = std::max(1u, std::thread::hardware_concurrency());
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const bool passive = policy != nullptr && (std::string_view(policy) == "passive" || std::string_view(policy) == "PASSIVE");
  const int warn = threads > 1 && static_cast<long>(on_node) * threads > cores && !passive ? 1 : 0;
  const int any = comm.allreduce(warn, MPI_MAX);
  if (any && comm.rank() == 0)
    fmt::print(stderr,
               "{}: warning: {} ranks x {} threads on a node with {} cores, and OpenMP threads spin while they wait: "
               "expect a run many times slower; use fewer ranks or --threads 1, or set OMP_WAIT_POLICY=passive\n",
               app, on_node, threads, cores);
  return any != 0;
}

void fail_app(std::string_view app, std::string_view what) { throw Error(fmt::format("{}: {}", app, what)); }

int main_of(const char* name, int argc, char** argv, int (*run)(int, char**)) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    status = run(argc, argv);
  } catch (const Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: rank %d: %s\n", name, world_rank(), error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}

void create_output_folder(const Comm& comm, const std::filesystem::path& folder) {
  collectively(comm, [&] {
    if (comm.rank() == 0) std::filesystem::create_directories(folder);
  });
}

}  // namespace domex::apps

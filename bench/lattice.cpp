// SPDX-License-Identifier: BSD-3-Clause
// domex-bench lattice: the QCD halo pattern. The 8-direction face exchange of
// a Wilson spinor field (192 bytes per site) on the three LatticeHalo paths
// (pack, datatype, contiguous), and a blocking vs an overlapped complex
// allreduce next to it. Effective bandwidth is compared with this machine's
// memcpy bandwidth, measured here with all ranks copying at once.
//
//   mpirun -n 4 domex-bench lattice --local 16 16 16 16 --json lattice.json

#include "command.hpp"
#include "results.hpp"
#include "timing.hpp"

#include <domex/comm/reduce.hpp>
#include <domex/halo/lattice.hpp>

#include <fmt/format.h>

#include <array>
#include <complex>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

// Named per file: the files are compiled as one (UNITY_BUILD, CMakeLists.txt).
namespace domex::bench::lattice_command {
namespace {

constexpr std::size_t spinor_bytes = 192;  // 4 spins x 3 colours x complex<double>
struct Spinor {
  std::byte bytes[spinor_bytes];
};

struct LatticeBenchOptions {
  std::vector<std::size_t> local{16, 16, 16, 16};
  std::vector<int> dims{0, 0, 0, 0};
  std::vector<std::string> paths{"pack", "datatype", "contiguous"};
  int batch = 10;         ///< exchanges per timed sample
  int repeats = 20;       ///< samples (median)
  int memcpy_mib = 64;    ///< memcpy bandwidth measured on this many MiB per rank (0: not measured)
  bool allreduce = true;  ///< the blocking vs overlapped allreduce rows
  std::string json;
};

struct Row {
  std::string path;
  std::size_t messages = 0, bytes = 0;
  double exchange_s = 0;  // median over samples, slowest rank
};

/// memcpy bandwidth of one rank while every rank copies (bytes copied per second).
double memcpy_bandwidth(const Comm& comm, std::size_t bytes, int repeats) {
  std::vector<std::byte> from(bytes, std::byte{1}), to(bytes);
  double best = 1e300;
  for (int r = 0; r < repeats; ++r)
    best = std::min(best, time_collective(comm, [&] { std::memcpy(to.data(), from.data(), bytes); }));
  return static_cast<double>(bytes) / best;
}

void run_lattice(const LatticeBenchOptions& options) {
  Comm comm{MPI_COMM_WORLD};
  if (options.local.size() != 4 || options.dims.size() != 4)
    bad_argument("domex-bench lattice", "--local and --dims take 4 values");
  std::array<int, 4> dims{options.dims[0], options.dims[1], options.dims[2], options.dims[3]};
  check_mpi(MPI_Dims_create(comm.size(), 4, dims.data()), "MPI_Dims_create");
  std::array<std::size_t, 4> global{};
  for (std::size_t a = 0; a < 4; ++a) global[a] = options.local[a] * static_cast<std::size_t>(dims[a]);
  LatticeGrid grid(comm, global, {.dims = dims});

  const double memcpy_bps =
      options.memcpy_mib > 0 ? memcpy_bandwidth(comm, static_cast<std::size_t>(options.memcpy_mib) << 20, 5) : 0.0;
  std::vector<Row> rows;
  for (const auto& name : options.paths) {
    LatticeHalo halo(grid, {.site_bytes = spinor_bytes, .path = lattice_path_from_string(name)});
    std::vector<Spinor> field(halo.sites());
    for (std::size_t i = 0; i < field.size(); ++i) field[i].bytes[0] = static_cast<std::byte>(i);
    halo.exchange(field);  // warm-up: persistent requests, first touch
    std::vector<double> samples;
    for (int r = 0; r < options.repeats; ++r)
      samples.push_back(time_collective(comm, [&] {
                          for (int i = 0; i < options.batch; ++i) halo.exchange(field);
                        }) /
                        options.batch);
    rows.push_back({name, halo.messages_per_exchange(), halo.bytes_per_exchange(), summarize(samples).median});
  }

  // Blocking vs overlapped dot product next to a halo exchange (datatype path).
  double blocking_s = 0, overlapped_s = 0;
  if (options.allreduce) {
    LatticeHalo halo(grid, {.site_bytes = spinor_bytes, .path = LatticePath::datatype});
    std::vector<Spinor> field(halo.sites());
    std::array<std::complex<double>, 2> dots{};
    std::vector<double> blocking, overlapped;
    for (int r = 0; r < options.repeats; ++r) {
      blocking.push_back(time_collective(comm, [&] {
                           for (int i = 0; i < options.batch; ++i) {
                             dots = {{{1.0, 2.0}, {3.0, 4.0}}};
                             allreduce(comm, dots);
                             halo.exchange(field);
                           }
                         }) /
                         options.batch);
      overlapped.push_back(time_collective(comm, [&] {
                             for (int i = 0; i < options.batch; ++i) {
                               dots = {{{1.0, 2.0}, {3.0, 4.0}}};
                               auto pending = iallreduce(comm, dots);
                               halo.exchange(field);
                               pending.wait();
                             }
                           }) /
                           options.batch);
    }
    blocking_s = summarize(blocking).median;
    overlapped_s = summarize(overlapped).median;
  }
  const Json where = provenance_json(comm);
  if (comm.rank() != 0) return;

  std::printf("lattice halo: %d ranks (dims %d x %d x %d x %d), %zu x %zu x %zu x %zu sites per rank, spinor %zu B/site,\n"
              "8 face neighbours, periodic; %d samples of %d back-to-back exchanges (median, slowest rank)\n",
              comm.size(), dims[0], dims[1], dims[2], dims[3], options.local[0], options.local[1], options.local[2],
              options.local[3], spinor_bytes, options.repeats, options.batch);
  if (memcpy_bps > 0)
    std::printf("memcpy bandwidth per rank (all ranks copying %d MiB at once): %.0f MB/s\n", options.memcpy_mib,
                memcpy_bps / 1e6);
  else
    std::printf("memcpy bandwidth: not measured (--memcpy-mib 0)\n");
  std::printf("%-11s %9s %12s %12s %12s %10s %10s\n", "path", "msgs/exch", "bytes/exch", "exch[ms]", "MB/s",
              "of memcpy", "vs pack");
  double pack_s = 0;
  for (const Row& r : rows)
    if (r.path == "pack") pack_s = r.exchange_s;
  for (const Row& r : rows) {
    const double bandwidth = static_cast<double>(r.bytes) / r.exchange_s;
    const std::string of_memcpy = memcpy_bps > 0 ? fmt::format("{:.1f}%", 100 * bandwidth / memcpy_bps) : "-";
    std::printf("%-11s %9zu %12zu %12.4f %12.0f %10s %9.2fx\n", r.path.c_str(), r.messages, r.bytes,
                1e3 * r.exchange_s, bandwidth / 1e6, of_memcpy.c_str(), pack_s > 0 ? pack_s / r.exchange_s : 0.0);
  }
  if (options.allreduce)
    std::printf("allreduce of 2 complex + one exchange (datatype): blocking %.3f ms, overlapped (MPI_Iallreduce) "
                "%.3f ms per iteration (%.2fx)\n",
                1e3 * blocking_s, 1e3 * overlapped_s, blocking_s / overlapped_s);
  if (!options.json.empty()) {
    Json list = Json::array();
    for (const Row& r : rows)
      list.push_back({{"path", r.path}, {"messages", r.messages}, {"bytes", r.bytes}, {"exchange_s", r.exchange_s}});
    write_results(options.json, "lattice", where,
                  {{"ranks", comm.size()},
                   {"dims", {dims[0], dims[1], dims[2], dims[3]}},
                   {"local", {options.local[0], options.local[1], options.local[2], options.local[3]}},
                   {"site_bytes", spinor_bytes},
                   {"memcpy_bytes_per_s", memcpy_bps > 0 ? Json(memcpy_bps) : Json(nullptr)},
                   {"allreduce_blocking_s", options.allreduce ? Json(blocking_s) : Json(nullptr)},
                   {"allreduce_overlapped_s", options.allreduce ? Json(overlapped_s) : Json(nullptr)},
                   {"rows", list}},
                  "domex-bench lattice");
  }
}

const Registration registration{[](CLI::App& app) {
  auto options = std::make_shared<LatticeBenchOptions>();
  auto* command = app.add_subcommand("lattice", "QCD 4-D face exchange: pack vs datatype vs contiguous, allreduce overlap");
  command->add_option("--local", options->local, "sites per rank X Y Z T")->expected(4)->capture_default_str();
  command->add_option("--dims", options->dims, "ranks per axis (0: automatic)")->expected(4)->capture_default_str();
  command->add_option("--paths", options->paths, "pack | datatype | contiguous")->capture_default_str();
  command->add_option("--batch", options->batch, "exchanges per timed sample")->capture_default_str();
  command->add_option("--repeats", options->repeats, "samples (median)")->capture_default_str();
  command
      ->add_option("--memcpy-mib", options->memcpy_mib,
                   "MiB per rank the memcpy bandwidth is measured on (0: not measured, e.g. under SimGrid)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  command->add_flag("!--no-allreduce", options->allreduce,
                    "skip the allreduce rows (under SimGrid SMPI's MPI_Iallreduce sends P^2 messages)");
  command->add_option("--json", options->json, "write the rows as JSON to this file");
  command->callback([options] { run_lattice(*options); });
}};

}  // namespace
}  // namespace domex::bench::lattice_command

// SPDX-License-Identifier: BSD-3-Clause
#include "run.hpp"

#include <domex/comm/collective.hpp>
#include <domex/comm/reduce.hpp>
#include <domex/halo/lattice.hpp>

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <system_error>

#include "snapshot.hpp"
#include "wilson.hpp"

#include <domex/comm/provenance.hpp>
#include <nlohmann/json.hpp>

namespace domex::lattice {
namespace {

void print_histogram(const char* title, const Histogram& h) {
  const double width = (h.high - h.low) / static_cast<double>(h.counts.size());
  const std::size_t most = std::max<std::size_t>(1, *std::max_element(h.counts.begin(), h.counts.end()));
  fmt::print("  {}\n", title);
  for (std::size_t i = 0; i < h.counts.size(); ++i)
    fmt::print("    {:>10.1f} - {:>10.1f} MB/s {:>8}  {}\n", h.low + width * static_cast<double>(i),
               h.low + width * static_cast<double>(i + 1), h.counts[i], std::string(40 * h.counts[i] / most, '#'));
}

nlohmann::ordered_json histogram_json(const Histogram& h) {
  return {{"low_mb_s", h.low}, {"high_mb_s", h.high}, {"counts", h.counts}};
}

}  // namespace

Histogram histogram(const std::vector<double>& samples, int bins) {
  Histogram h;
  h.counts.assign(static_cast<std::size_t>(std::max(bins, 1)), 0);
  if (samples.empty()) return h;
  const auto [low, high] = std::minmax_element(samples.begin(), samples.end());
  h.low = *low;
  h.high = *high > *low ? *high : *low + 1;
  const double width = (h.high - h.low) / static_cast<double>(h.counts.size());
  for (double s : samples) {
    auto bin = static_cast<std::size_t>((s - h.low) / width);
    h.counts[std::min(bin, h.counts.size() - 1)] += 1;
  }
  return h;
}


void simulate(const Comm& comm, const Config& config) {
  namespace fs = std::filesystem;
  const bool root = comm.rank() == 0;
  // global = local * dims: the dims first (MPI_Dims_create fills the zeros).
  std::array<int, 4> dims = config.dims;
  check_mpi(MPI_Dims_create(comm.size(), 4, dims.data()), "MPI_Dims_create");
  std::array<std::size_t, 4> global{};
  for (std::size_t a = 0; a < 4; ++a) global[a] = static_cast<std::size_t>(config.local[a]) * static_cast<std::size_t>(dims[a]);
  const LatticePath path = lattice_path_from_string(config.path);
  LatticeGrid grid(comm, global, {.dims = dims});
  Wilson op(grid, config.kappa, config.seed, path);
  LatticeHalo& halo = op.halo();
  if (root)
    fmt::print(stderr,
               "domex-lattice: {}x{}x{}x{} sites on {} ranks (dims {}x{}x{}x{}, {}x{}x{}x{} per rank), Wilson kappa {}, "
               "path {}, {} allreduce\n",
               global[0], global[1], global[2], global[3], comm.size(), dims[0], dims[1], dims[2], dims[3],
               config.local[0], config.local[1], config.local[2], config.local[3], config.kappa, config.path,
               config.overlap ? "overlapped" : "blocking");

  // -- the solve ---------------------------------------------------------------
  const auto b = op.random_field(config.seed);
  std::vector<Spinor> x;
  comm.barrier();
  const double start = MPI_Wtime();
  const CgResult result = cg(op, b, x, {.tolerance = config.tolerance, .max_iterations = config.max_iterations,
                                        .overlap = config.overlap});
  const double solve_wall = comm.allreduce(MPI_Wtime() - start, MPI_MAX);
  const Timers timers = op.timers();
  const double compute = comm.allreduce(timers.compute, MPI_MAX), halo_s = comm.allreduce(timers.halo, MPI_MAX),
               reduce_s = comm.allreduce(timers.allreduce, MPI_MAX);
  const double gflops_rank = timers.flops / std::max(solve_wall, 1e-300) / 1e9;
  const double gflops_min = comm.allreduce(gflops_rank, MPI_MIN);
  if (root)
    for (std::size_t k = 1; k < result.residuals.size(); ++k)
      if (k % 10 == 0 || k + 1 == result.residuals.size())
        fmt::print(stderr, "  CG iteration {:>5}  |r|/|b| {:.3e}\n", k, result.residuals[k]);

  // -- the throughput histogram: N exchanges alone, then with the operator -----
  const auto exchanges = static_cast<std::size_t>(config.exchanges);
  std::vector<double> alone, with_compute;
  alone.reserve(exchanges);
  with_compute.reserve(exchanges);
  auto psi = b;
  std::vector<Spinor> out(psi.size());
  const double bytes = static_cast<double>(halo.bytes_per_exchange());
  const std::size_t every = std::max<std::size_t>(1, exchanges / 4);
  const double histogram_start = MPI_Wtime();
  for (int with = 0; with < 2; ++with) {
    comm.barrier();
    for (std::size_t i = 0; i < exchanges; ++i) {
      const double t0 = MPI_Wtime();
      if (with) op.apply(psi, out);  // begin, interior sites, finish, boundary sites
      else halo.exchange(psi);
      const double dt = MPI_Wtime() - t0;
      (with ? with_compute : alone).push_back(bytes / std::max(dt, 1e-9) / 1e6);
      if (root && (i + 1) % every == 0)
        fmt::print(stderr, "  exchanges {} {:>7}/{}  wall {:7.2f} s\n", with ? "+ compute" : "alone    ", i + 1,
                   exchanges, MPI_Wtime() - histogram_start);
    }
  }
  const auto all_alone = comm.allgatherv(std::span<const double>(alone));
  const auto all_with = comm.allgatherv(std::span<const double>(with_compute));
  const Histogram h_alone = histogram(all_alone, config.bins), h_with = histogram(all_with, config.bins);
  const auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const double median_alone = median(all_alone), median_with = median(all_with);
  if (!result.converged) apps::fail_app("domex-lattice", fmt::format("CG did not converge in {} iterations (|r|/|b| = {:.3e})",
                                                           result.iterations, result.residuals.back()));
  if (root) {
  fmt::print("domex-lattice  Wilson-Dirac (kappa {})  {}x{}x{}x{} sites  {} ranks  dims {}x{}x{}x{}  path {}\n",
             config.kappa, global[0], global[1], global[2], global[3], comm.size(), dims[0], dims[1], dims[2], dims[3],
             config.path);
  fmt::print("  CG iterations    {:>12}   |r|/|b| {:.3e}, true residual {:.3e}\n", result.iterations,
             result.residuals.back(), result.true_residual);
  fmt::print("  solve wall       {:>12.3f} s\n", solve_wall);
  fmt::print("  compute (max)    {:>12.3f} s\n  halo (max)       {:>12.3f} s\n  allreduce (max)  {:>12.3f} s  ({})\n",
             compute, halo_s, reduce_s, config.overlap ? "overlapped |r|^2" : "blocking");
  fmt::print("  Gflop/s per rank {:>12.3f}   (rank 0; slowest rank {:.3f}; {} flops per site of D)\n", gflops_rank,
             gflops_min, flops_per_site);
  fmt::print("  halo exchange    {:>12} messages, {} bytes per exchange and rank\n", halo.messages_per_exchange(),
             halo.bytes_per_exchange());
  if (exchanges > 0) {
    fmt::print("  throughput of {} exchanges per rank, all ranks (median {:.1f} MB/s alone, {:.1f} MB/s with D):\n",
               exchanges, median_alone, median_with);
    print_histogram("communication alone", h_alone);
    print_histogram("communication + computation (D applied, interior overlapped)", h_with);
  }
  }
  if (config.output.empty()) return;
  const fs::path folder = config.output;
  if (config.snapshot_format == "hdf5") {
    domex::apps::create_output_folder(comm, folder);
    write_solution_hdf5(comm, grid, x, folder / "solution.h5");
    if (root) fmt::print("  solution         {} (+ .xmf)\n", (folder / "solution.h5").string());
  }
  const Provenance where = provenance(comm);  // collective, before rank 0 writes
  using Json = nlohmann::ordered_json;
  const Json document{
      {"benchmark", "lattice"},
      {"provenance", where},
      {"operator", "wilson"},
      {"kappa", config.kappa},
      {"seed", config.seed},
      {"ranks", comm.size()},
      {"dims", {dims[0], dims[1], dims[2], dims[3]}},
      {"local", {config.local[0], config.local[1], config.local[2], config.local[3]}},
      {"global", {global[0], global[1], global[2], global[3]}},
      {"path", config.path},
      {"overlap", config.overlap},
      {"iterations", result.iterations},
      {"converged", result.converged},
      {"true_residual", result.true_residual},
      {"residuals", result.residuals},
      {"solve_seconds", solve_wall},
      {"compute_max", compute},
      {"halo_max", halo_s},
      {"allreduce_max", reduce_s},
      {"gflops_per_rank", gflops_rank},
      {"gflops_per_rank_min", gflops_min},
      {"flops_per_site", flops_per_site},
      {"messages_per_exchange", halo.messages_per_exchange()},
      {"bytes_per_exchange", halo.bytes_per_exchange()},
      {"exchanges", exchanges},
      {"median_mb_s_alone", median_alone},
      {"median_mb_s_with_compute", median_with},
      {"histogram_alone", histogram_json(h_alone)},
      {"histogram_with_compute", histogram_json(h_with)}};
  const std::string json = document.dump(1) + "\n";
  // Rank 0 writes; a failure is an error on every rank.
  collectively(comm, [&] {
    if (!root) return;
    fs::create_directories(folder);
    write_file(folder / "lattice.json", json);
    fmt::print("  results          {}\n", (folder / "lattice.json").string());
  });
}

}  // namespace domex::lattice

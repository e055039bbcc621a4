// SPDX-License-Identifier: BSD-3-Clause
// domex-bench soak: many back-to-back calls of each sparse-exchange algorithm
// and automatic, on MPI_COMM_WORLD and on the two halves of one
// MPI_Comm_split running at the same time, every receive verified. Finds what
// short tests cannot: MPI defects that appear after millions of calls (the
// NBX hang after ~2^24 calls, dealii/dealii#14405) or only on
// sub-communicators (Open MPI's osc/rdma windows, ompi#9492); see
// docs/mpi_defects.md. Not part of CI: 10^7 calls take hours.
//
//   mpirun -n 2 domex-bench soak --calls 10000000
//   mpirun -n 8 domex-bench soak --groups halves --calls 10000000
//   mpirun -n 2 domex-bench soak --algorithms nbx --groups world --calls 16877216   # 2^24 + 10^5

#include "command.hpp"

#include <domex/comm/mpi_defects.hpp>
#include <domex/exchange/automatic.hpp>
#include <domex/exchange/exchange.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

// Named per file: the files are compiled as one (UNITY_BUILD, CMakeLists.txt).
namespace domex::bench::soak_command {
namespace {

struct SoakOptions {
  std::uint64_t calls = 1000;  ///< back-to-back calls per algorithm and group
  std::vector<std::string> algorithms{"alltoall",  "sendrecv_reduce", "nbx",  "reduce_scatter",
                                      "rma_fence", "rma_passive",     "grid", "automatic"};
  std::vector<std::string> groups{"world", "halves"};
  std::uint64_t seed = 1;
  std::size_t max_items = 16;  ///< 8-byte items per message, 0..max
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Patterns cycled through by the calls: each rank sends to about a third of
/// the ranks (itself possibly), 0..max_items items identifying (variant,
/// source, destination, index).
constexpr int variants = 16;

std::size_t items_sent(const SoakOptions& options, int variant, int source, int destination) {
  const std::uint64_t h = mix(options.seed ^ mix(static_cast<std::uint64_t>(variant) ^
                                                 mix(static_cast<std::uint64_t>(source) << 32 ^
                                                     static_cast<std::uint64_t>(destination))));
  if (h % 3 != 0) return SIZE_MAX;
  return static_cast<std::size_t>((h >> 8) % (options.max_items + 1));
}
std::uint64_t item(int variant, int source, int destination, std::size_t k) {
  return mix((static_cast<std::uint64_t>(variant) << 56) ^ (static_cast<std::uint64_t>(source) << 36) ^
             (static_cast<std::uint64_t>(destination) << 16) ^ k);
}

/// Each variant's outbox and the inbox it must produce on this rank.
struct Variant {
  Outbox<std::uint64_t> outbox;
  std::vector<int> sources;
  std::vector<std::size_t> offsets{0};
  std::vector<std::uint64_t> data;
};

std::vector<Variant> make_variants(const SoakOptions& options, int rank, int size) {
  std::vector<Variant> result(variants);
  std::vector<std::uint64_t> items;
  for (int v = 0; v < variants; ++v) {
    for (int destination = 0; destination < size; ++destination) {
      const std::size_t count = items_sent(options, v, rank, destination);
      if (count == SIZE_MAX) continue;
      items.resize(count);
      for (std::size_t k = 0; k < count; ++k) items[k] = item(v, rank, destination, k);
      result[v].outbox.add(destination, items);
    }
    for (int source = 0; source < size; ++source) {
      const std::size_t count = items_sent(options, v, source, rank);
      if (count == SIZE_MAX) continue;
      result[v].sources.push_back(source);
      for (std::size_t k = 0; k < count; ++k) result[v].data.push_back(item(v, source, rank, k));
      result[v].offsets.push_back(result[v].data.size());
    }
  }
  return result;
}

bool matches(const Inbox<std::uint64_t>& inbox, const Variant& expected) {
  return std::equal(inbox.sources().begin(), inbox.sources().end(), expected.sources.begin(), expected.sources.end()) &&
         std::equal(inbox.offsets().begin(), inbox.offsets().end(), expected.offsets.begin(), expected.offsets.end()) &&
         std::equal(inbox.data().begin(), inbox.data().end(), expected.data.begin(), expected.data.end());
}

struct Result {
  std::string group;
  std::string algorithm;
  std::string ran;  // what the last call ran (automatic's choice, or a fallback)
  unsigned long long calls = 0, failures = 0;
  double seconds_per_call = 0;  // the slowest rank of the group
  std::string note;             // an error message, or automatic's exclusions
};

/// N calls of `algorithm` on `comm`, every inbox compared with the expected one.
Result soak(Comm& comm, const std::string& group, Algorithm algorithm, const SoakOptions& options,
            const std::vector<Variant>& expected) {
  Result result{group, std::string(to_string(algorithm)), "", 0, 0, 0, ""};
  Inbox<std::uint64_t> inbox;
  unsigned long long failures = 0;
  comm.barrier();
  const double start = MPI_Wtime();
  for (std::uint64_t call = 0; call < options.calls; ++call) {
    const Variant& variant = expected[call % variants];
    try {
      exchange(comm, variant.outbox, inbox, {.algorithm = algorithm});
      if (!matches(inbox, variant)) ++failures;
    } catch (const Error& error) {  // agreed on every rank of comm
      ++failures;
      if (result.note.empty()) result.note = error.what();
    }
  }
  const double elapsed = comm.allreduce(MPI_Wtime() - start, MPI_MAX);
  result.calls = options.calls;
  result.failures = comm.allreduce(failures, MPI_SUM);
  result.seconds_per_call = options.calls ? elapsed / static_cast<double>(options.calls) : 0;
  result.ran = std::string(to_string(inbox.stats().algorithm));
  if (algorithm == Algorithm::automatic) {
    // "rma_fence, rma_passive not run: <reason>" (one reason, said once).
    const auto excluded = automatic_report(comm).excluded;
    std::string names;
    for (const auto& e : excluded) names += fmt::format("{}{}", names.empty() ? "" : ", ", to_string(e.algorithm));
    if (!excluded.empty())
      result.note += fmt::format("{}{} not run: {}", result.note.empty() ? "" : "; ", names, excluded.back().reason);
  }
  return result;
}

void run_soak(const SoakOptions& options) {
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  std::vector<Algorithm> algorithms;
  for (const auto& name : options.algorithms) algorithms.push_back(algorithm_from_string(name));
  std::vector<Result> results;  // rank 0 of each group
  for (const auto& group : options.groups) {
    if (group != "world" && group != "halves") bad_argument("soak", fmt::format("unknown group '{}'", group));
    MPI_Comm split = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, group == "world" ? 0 : world_rank % 2, world_rank, &split);
    const std::string label = group == "world" ? "world" : fmt::format("half {}", world_rank % 2);
    {
      Comm comm{split};
      const auto expected = make_variants(options, comm.rank(), comm.size());
      for (Algorithm algorithm : algorithms) {
        // A fresh Comm per algorithm: its windows and automatic's learning start anew.
        Comm fresh{comm.get()};
        Result result = soak(fresh, label, algorithm, options, expected);
        if (world_rank == 0)
          std::fprintf(stderr, "  %-7s %-16s %llu calls, %llu failed\n", label.c_str(), result.algorithm.c_str(),
                       result.calls, result.failures);
        if (fresh.rank() == 0) results.push_back(result);
      }
    }
    MPI_Comm_free(&split);
  }
  // Rank 0 prints every group's rows: the other groups' leaders send theirs.
  std::vector<std::string> lines;
  for (const auto& r : results)
    lines.push_back(fmt::format("| {} | {} | {} | {} | {} | {:.2f} | {} |", r.group, r.algorithm, r.ran, r.calls,
                                r.failures, 1e6 * r.seconds_per_call, r.note));
  std::string mine;
  for (const auto& line : lines) mine += line + "\n";
  Comm world{MPI_COMM_WORLD};
  const auto all = world.allgatherv(std::span<const char>(mine.data(), mine.size()));
  unsigned long long failures = 0;
  for (const auto& r : results) failures += r.failures;
  failures = world.allreduce(failures, MPI_SUM);
  if (world_rank == 0) {
    std::printf("soak: %d ranks, %s; calls back to back per algorithm and group, every inbox verified\n", world_size,
                mpi_library().description.c_str());
    std::printf("| group | algorithm | ran | calls | failures | us per call | note |\n|---|---|---|---|---|---|---|\n");
    std::fwrite(all.data(), 1, all.size(), stdout);
    std::printf("failures in total: %llu\n", failures);
  }
}

const Registration registration{[](CLI::App& app) {
  auto options = std::make_shared<SoakOptions>();
  auto* command =
      app.add_subcommand("soak", "back-to-back calls of every algorithm on WORLD and split halves, all verified");
  command->add_option("--calls", options->calls, "calls per algorithm and group (10000000 for the full soak)")
      ->capture_default_str();
  command->add_option("--algorithms", options->algorithms, "algorithms to soak")
      ->check(CLI::IsMember(algorithm_names()))
      ->capture_default_str();
  command->add_option("--groups", options->groups, "world (MPI_COMM_WORLD), halves (two concurrent split halves)")
      ->check(CLI::IsMember({"world", "halves"}))
      ->capture_default_str();
  command->add_option("--max-items", options->max_items, "8-byte items per message, at most")->capture_default_str();
  command->add_option("--seed", options->seed, "seed of the patterns")->capture_default_str();
  command->callback([options] { run_soak(*options); });
}};

}  // namespace
}  // namespace domex::bench::soak_command

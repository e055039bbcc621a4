// SPDX-License-Identifier: BSD-3-Clause
// domex-bench sparse: the six sparse-exchange algorithms and automatic on
// particle-migration-like patterns (6 or 26 grid neighbours, plus far ranks),
// message sizes from 8 B to 1 MiB, or one step of real particle migration in
// a multisection decomposition of N particles (`migration:<N>`, where the
// sizes are bytes per particle; sparse_migration.hpp). Prints the comparison
// table, automatic's regret per row (its first N calls from scratch, learning
// included, against the best fixed algorithm's, for N = 1000 and 10^4), its
// own cost (its median against its choice's by name, timed in adjacent pairs),
// how its measurements compare with the same algorithms by name timed its
// way, and writes JSON.
//
//   mpirun -n 8 domex-bench sparse --json sparse.json
//   mpirun -n 8 domex-bench sparse --patterns migration:100^3 --sizes 64

#include "command.hpp"
#include "patterns.hpp"
#include "sparse_migration.hpp"
#include "results.hpp"
#include "timing.hpp"

#include <domex/exchange/automatic.hpp>
#include <domex/exchange/cost_model.hpp>
#include <domex/exchange/exchange.hpp>
#include <domex/exchange/plan.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <fstream>
#include <map>
#include <string>
#include <vector>

// Named per file: the files are compiled as one (UNITY_BUILD, CMakeLists.txt).
namespace domex::bench::sparse_command {
namespace {

/// Epochs, and calls per epoch, of each fixed algorithm timed by name the way
/// automatic times its measurements (see run_sparse).
constexpr int by_name_epochs = 11, epoch_calls = 8;

struct SparseOptions {
  std::vector<std::size_t> sizes{8, 64, 512, 4096, 32768, 262144, 1048576};
  std::vector<std::string> patterns{"neighbours6", "neighbours26", "neighbours26+far"};
  std::vector<std::string> algorithms{"alltoall",  "sendrecv_reduce", "nbx",      "reduce_scatter",
                                      "rma_fence", "rma_passive",     "grid",     "automatic"};
  double seconds_per_row = 0.4;
  std::size_t learning_calls = 1000;  ///< calls timed from scratch for automatic's cost of learning
  std::size_t regret_calls = 10000;   ///< ... and a longer run, for its regret over N calls
  double regret_seconds = 1.5;        ///< at most this long per run of regret_calls (fewer calls where slow)
  std::size_t learn_calls = 20000;    ///< calls automatic learns from before its row is sampled (at most ~2 s)
  bool plan = true;                   ///< also a SparsePlan row (pattern discovered once, reused)
  int rounds = 5;                     ///< timed rounds at least (also the samples of the first-call probe)
  int warm_up = 3;                    ///< untimed calls per algorithm before the rounds
  double far_fraction = 0.25;
  double migration_step = 1.0;         ///< migration:<N>: step per coordinate, in mean spacings N^(-1/3)
  std::size_t migration_samples = 8192;  ///< migration:<N>: positions per rank the decomposition is cut from
  std::uint64_t seed = 1;
  std::string json;
};

struct Row {
  std::string label;  // the algorithm, "auto->X", or "plan (reused)"
  std::string pattern;
  std::size_t message_bytes;
  Algorithm algorithm;
  Algorithm ran;  // what automatic chose
  std::string how;  // automatic: model, learned or loaded
  double learning_cost = 0;  // automatic: first N calls (learning included) / N calls of the row's best
  std::size_t learning_calls = 0;
  Summary seconds;
  std::size_t calls;
  unsigned long long max_messages_sent, max_messages_received, max_bytes_sent, max_bytes_received;
  std::string measured{};          // automatic: what it measured per algorithm (us per call), fastest first
  std::uint64_t class_calls = 0;  // automatic: calls of the row's class
  double regret = 0;  // automatic: the same over its first regret_calls calls
  double regret_prepaid = 0;  // ... on a Comm whose one-time setups were paid before the timing
  std::size_t regret_calls = 0;
  double estimated_regret = 0;  // automatic: its own estimate (AutomaticClass::regret_seconds), after learning
  double setup_seconds = 0;     // automatic: its Comm's one-time setup (AutomaticReport::setup_seconds)
  double own_cost = 0;          // automatic: its median / its choice's by name, in adjacent pairs (0: no pairs)
  std::size_t own_pairs = 0;    // ... how many pairs
  std::string agreement{};      // automatic: its measurements against the same algorithms by name, timed its way
  std::size_t agreeing = 0, compared = 0;  // ... how many of them lie within the by-name range
  // A fixed algorithm: its time per call timed as automatic times it (epochs
  // of back-to-back calls, median of each), the median and range over epochs.
  Summary epochs{};
};

/// Particles (or messages) this rank sends to each destination: 1 per
/// destination for the grid patterns, the migrating particles' count for
/// `migration:<N>`.
std::map<int, std::size_t> destinations_of(const Comm& comm, const std::string& pattern, const SparseOptions& options) {
  std::vector<int> grid;
  if (pattern == "neighbours6") grid = grid_destinations(comm, 6, 0.0, options.seed);
  else if (pattern == "neighbours26") grid = grid_destinations(comm, 26, 0.0, options.seed);
  else if (pattern == "neighbours26+far") grid = grid_destinations(comm, 26, options.far_fraction, options.seed);
  else if (pattern.rfind("migration:", 0) == 0) {
    const std::uint64_t particles = migration_particles(pattern);
    if (particles < static_cast<std::uint64_t>(comm.size()))
      bad_argument("domex-bench sparse", "'" + pattern + "': fewer particles than ranks");
    const auto migration =
        migration_pattern(comm, particles, options.migration_step, options.migration_samples, options.seed);
    // What the seed tabulates: max sends / receives and bytes per rank (in
    // the table's columns); here what the particles did.
    unsigned long long local[3] = {migration.shell_particles, 0, migration.owned_particles};
    for (const auto& [destination, count] : migration.particles_to) local[1] += count;
    unsigned long long max[3] = {}, sum[3] = {};
    check_mpi(MPI_Allreduce(local, max, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm.get()), "MPI_Allreduce");
    check_mpi(MPI_Allreduce(local, sum, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm.get()), "MPI_Allreduce");
    if (comm.rank() == 0)
      std::printf("%s: N = %llu particles (%s), step +-%.3g mean spacings per "
                  "coordinate; per rank: owned %.0f (max %llu), within one step of the surface %.0f (max %llu), "
                  "leaving %.1f (max %llu, %.3f %% of N)\n",
                  pattern.c_str(), static_cast<unsigned long long>(particles),
                  options.migration_samples == 0
                      ? "equal-volume boxes"
                      : fmt::format("multisection, {} positions per rank cut",
                                    std::min<std::size_t>(options.migration_samples, particles / comm.size()))
                            .c_str(),
                  options.migration_step,
                  double(sum[2]) / comm.size(), max[2], double(sum[0]) / comm.size(), max[0],
                  double(sum[1]) / comm.size(), max[1], 100.0 * double(sum[1]) / double(particles));
    return migration.particles_to;
  } else
    bad_argument("domex-bench sparse",
                 "unknown pattern '" + pattern + "' (neighbours6, neighbours26, neighbours26+far, migration:<N>)");
  std::map<int, std::size_t> once;
  for (int destination : grid) once[destination] = 1;
  return once;
}

std::string table(const std::vector<Row>& rows) {
  std::string out = fmt::format("{:<17} {:>8} {:<21} {:>11} {:>11} {:>11} {:>7} {:>9} {:>9} {:>10} {:>10}\n",
                                "pattern", "bytes", "algorithm", "median[us]", "min[us]", "max[us]", "x best",
                                "msgs out", "msgs in", "bytes out", "bytes in");
  for (std::size_t begin = 0; begin < rows.size();) {
    std::size_t end = begin;
    double best = 1e300;
    while (end < rows.size() && rows[end].pattern == rows[begin].pattern &&
           rows[end].message_bytes == rows[begin].message_bytes) {
      if (rows[end].algorithm != Algorithm::automatic && rows[end].label.rfind("plan", 0) != 0)
        best = std::min(best, rows[end].seconds.median);
      ++end;
    }
    for (std::size_t i = begin; i < end; ++i) {
      const Row& row = rows[i];
      const std::string& name = row.label;
      out += fmt::format("{:<17} {:>8} {:<21} {:>11.1f} {:>11.1f} {:>11.1f} {:>7.2f} {:>9} {:>9} {:>10} {:>10}\n",
                         row.pattern, row.message_bytes, name, 1e6 * row.seconds.median, 1e6 * row.seconds.min,
                         1e6 * row.seconds.max, row.seconds.median / best, row.max_messages_sent,
                         row.max_messages_received, row.max_bytes_sent, row.max_bytes_received);
    }
    begin = end;
  }
  return out;
}

/// automatic's rows: what it chose, how, and its regret (learning included).
std::string learning_table(const std::vector<Row>& rows) {
  std::string out = fmt::format("{:<17} {:>8} {:<16} {:<8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9} {:>7} {:>8}  {}\n",
                                "pattern", "bytes", "automatic chose", "how", "N", "x best", "N", "x best", "prepaid",
                                "est.", "setup[us]", "own", "calls", "measured (us per call)");
  for (const Row& row : rows)
    if (row.algorithm == Algorithm::automatic && row.label.rfind("auto", 0) == 0)
      // '*': above the bound (1.3x for N = 1000, 1.10x for N >= 10^4,
      // 1.03x for its own cost).
      out += fmt::format(
          "{:<17} {:>8} {:<16} {:<8} {:>7} {:>6.3f}{:1} {:>7} {:>6.3f}{:1} {:>7.3f} {:>7.3f} {:>9.1f} {:>6.3f}{:1} {:>8}  "
          "{}\n",
          row.pattern, row.message_bytes, to_string(row.ran), row.how, row.learning_calls, row.learning_cost,
          row.learning_calls >= 1000 && row.learning_cost > 1.3 ? "*" : "", row.regret_calls, row.regret,
          row.regret_calls >= 10000 && row.regret > 1.10 ? "*" : "", row.regret_prepaid, 1 + row.estimated_regret,
          1e6 * row.setup_seconds, row.own_cost, row.own_cost > 1.03 ? "*" : "", row.class_calls, row.measured);
  return out;
}

/// Seconds as microseconds with three significant digits.
std::string microseconds(double seconds) {
  const double us = 1e6 * seconds;
  return fmt::format("{:.{}f}", us, us < 10 ? 2 : us < 100 ? 1 : 0);
}

/// automatic's rows: each measurement it holds against the same algorithm by
/// name, timed its way.
std::string agreement_table(const std::vector<Row>& rows) {
  std::string out;
  for (const Row& row : rows)
    if (row.algorithm == Algorithm::automatic && row.label.rfind("auto", 0) == 0)
      out += fmt::format("{:<17} {:>8} {:>2}/{:<2} {}\n", row.pattern, row.message_bytes, row.agreeing, row.compared,
                         row.agreement);
  return out;
}

Json json_of(const std::vector<Row>& rows, int ranks) {
  Json list = Json::array();
  for (const Row& row : rows)
    list.push_back({{"label", row.label},
                    {"pattern", row.pattern},
                    {"message_bytes", row.message_bytes},
                    {"algorithm", row.label.rfind("plan", 0) == 0 ? row.label : std::string(to_string(row.algorithm))},
                    {"ran", std::string(to_string(row.ran))},
                    {"median_s", row.seconds.median},
                    {"min_s", row.seconds.min},
                    {"max_s", row.seconds.max},
                    {"calls", row.calls},
                    {"max_messages_sent", row.max_messages_sent},
                    {"max_messages_received", row.max_messages_received},
                    {"max_bytes_sent", row.max_bytes_sent},
                    {"max_bytes_received", row.max_bytes_received},
                    {"how", row.how},
                    {"learning_cost", row.learning_cost},
                    {"learning_calls", row.learning_calls},
                    {"regret", row.regret},
                    {"regret_calls", row.regret_calls},
                    {"regret_prepaid", row.regret_prepaid},
                    {"estimated_regret", row.estimated_regret},
                    {"setup_s", row.setup_seconds},
                    {"own_cost", row.own_cost},
                    {"own_pairs", row.own_pairs},
                    {"agreement", row.agreement},
                    {"agreeing", row.agreeing},
                    {"compared", row.compared},
                    {"epoch_median_s", row.epochs.median},
                    {"epoch_min_s", row.epochs.min},
                    {"epoch_max_s", row.epochs.max},
                    {"measured", row.measured},
                    {"class_calls", row.class_calls}});
  return {{"ranks", ranks}, {"rows", list}};
}

void run_sparse(const SparseOptions& options) {
  Comm comm{MPI_COMM_WORLD};
  std::vector<Algorithm> algorithms;
  for (const auto& name : options.algorithms) algorithms.push_back(algorithm_from_string(name));
  const CostModel& model = CostModel::of_this_machine(comm);  // what automatic uses (read by rank 0)
  if (comm.rank() == 0)
    std::fprintf(stderr, "domex-bench sparse: %d ranks, %zu patterns x %zu sizes x %zu algorithms; automatic's cost model: %s\n",
                 comm.size(), options.patterns.size(), options.sizes.size(), algorithms.size(), model.source().c_str());
  std::vector<Row> rows;
  std::vector<std::string> excluded;  // what automatic does not run here, and why (docs/mpi_defects.md)
  Outbox<std::byte> outbox;
  std::vector<Inbox<std::byte>> inboxes(algorithms.size());
  for (const auto& pattern : options.patterns) {
    const auto destinations = destinations_of(comm, pattern, options);
    for (std::size_t bytes : options.sizes) {
      outbox.clear();
      // bytes per message, or per particle for migration:<N>
      std::vector<std::byte> payload;
      for (const auto& [destination, count] : destinations) {
        payload.assign(bytes * count, std::byte{1});
        outbox.add(destination, payload);
      }
      // automatic runs on a Comm of its own per row, so that it learns each
      // row from scratch: first its cost of learning, N calls from the start.
      Comm automatic_comm{MPI_COMM_WORLD};
      const auto communicator = [&](std::size_t a) -> Comm& {
        return algorithms[a] == Algorithm::automatic ? automatic_comm : comm;
      };
      double one_call = 1e300;  // the fastest of 5 (a first call can be slow)
      for (int sample = 0; sample < options.rounds; ++sample)
        one_call = std::min(one_call, time_collective(comm, [&] {
                              exchange(comm, outbox, inboxes[0], {.algorithm = algorithms[0]});
                            }));
      // N calls, fewer where 1000 would take more than a few seconds (large messages).
      // (At most --learning-calls, also below 100: simulations ask for few.)
      const std::size_t learning_calls = std::clamp<std::size_t>(
          static_cast<std::size_t>(4.0 / std::max(one_call, 1e-9)), std::min<std::size_t>(100, options.learning_calls),
          options.learning_calls);
      // ... and a longer run for the regret: up to --regret-calls, as many as
      // take about --regret-seconds, at least the N above.
      const std::size_t regret_calls = std::max(
          learning_calls,
          std::min(options.regret_calls, static_cast<std::size_t>(options.regret_seconds / std::max(one_call, 1e-9))));
      // The first learning_calls calls of `algorithm` on a fresh Comm (its
      // setup paid, as automatic pays it), then the rest of regret_calls:
      // the seconds of both (slowest rank, from a barrier each). `prepaid`:
      // every algorithm called once by name on the Comm before the timing,
      // so its one-time setups (RMA windows, the grid's communicators, first
      // uses) are not in the time: what automatic's regret is without them.
      const auto time_calls = [&](Algorithm algorithm, Inbox<std::byte>& inbox, bool prepaid = false) {
        Comm fresh{MPI_COMM_WORLD};
        if (prepaid)
          for (Algorithm a : concrete_algorithms) exchange(fresh, outbox, inbox, {.algorithm = a});
        const double first = time_collective(comm, [&] {
          for (std::size_t call = 0; call < learning_calls; ++call) exchange(fresh, outbox, inbox, {.algorithm = algorithm});
        });
        const double rest = time_collective(comm, [&] {
          for (std::size_t call = learning_calls; call < regret_calls; ++call)
            exchange(fresh, outbox, inbox, {.algorithm = algorithm});
        });
        return std::pair{first, first + rest};
      };
      for (std::size_t a = 0; a < algorithms.size(); ++a)
        if (algorithms[a] == Algorithm::automatic) {
          // The row's own Comm learns, untimed, for --learn-calls calls (at
          // most ~2 s), so that its row is sampled "after learning".
          const auto calls = std::min<std::size_t>(options.learn_calls, static_cast<std::size_t>(2.0 / std::max(one_call, 1e-9)));
          for (std::size_t call = 0; call < calls; ++call)
            exchange(automatic_comm, outbox, inboxes[a], {.algorithm = Algorithm::automatic});
        }
      // What automatic holds after learning back to back: a time it holds at
      // the end that differs was measured again during the interleaved rounds.
      const auto after_learning = automatic_report(automatic_comm);
      // Warm-up (windows), then rounds that run every algorithm once each in
      // turn, so machine noise hits all alike.
      for (std::size_t a = 0; a < algorithms.size(); ++a)
        for (int warm = 0; warm < options.warm_up; ++warm)
          exchange(communicator(a), outbox, inboxes[a], {.algorithm = algorithms[a]});
      // Two plans: checked by one allreduce per call, and promised unchanged.
      std::vector<SparsePlan<std::byte>> plans;
      if (options.plan) {
        plans.emplace_back(comm, outbox);
        plans.emplace_back(comm, outbox, PlanOptions{.check = PlanCheck::promised});
        for (auto& plan : plans)
          for (int warm = 0; warm < 3; ++warm) (void)plan.exchange(outbox);
      }
      std::vector<std::vector<double>> samples(algorithms.size());
      std::vector<std::vector<double>> plan_samples(plans.size());
      // automatic runs in a pair with the algorithm it ran last, called by
      // name with the same options on automatic's own Comm (the same windows
      // and sub-communicators: at 4 KiB, np 2, rma_passive by name on the
      // fixed rows' Comm, timed next to automatic's, took 1.5x as long as
      // automatic's: a comparison of two Comms, not of two paths), in alternating
      // order at the start of each round: its own cost is its median against
      // the twin's over the pairs where it ran the twin's algorithm. Timed at
      // the same place in the round, so that neither pays for what ran before
      // it (a 256 KiB grid call before it made any algorithm 5 % slower).
      const auto automatic_at = std::find(algorithms.begin(), algorithms.end(), Algorithm::automatic);
      const std::size_t automatic_index =
          automatic_at == algorithms.end() ? SIZE_MAX : static_cast<std::size_t>(automatic_at - algorithms.begin());
      Inbox<std::byte> twin_inbox;
      if (automatic_index != SIZE_MAX && inboxes[automatic_index].stats().algorithm != Algorithm::automatic)
        for (int warm = 0; warm < options.warm_up; ++warm)
          exchange(automatic_comm, outbox, twin_inbox, {.algorithm = inboxes[automatic_index].stats().algorithm});
      std::vector<double> own_automatic, own_twin;
      double spent = 0;
      int rounds = 0;
      while (rounds < options.rounds || (spent < options.seconds_per_row && rounds < 2000)) {
        if (automatic_index != SIZE_MAX) {
          Inbox<std::byte>& inbox = inboxes[automatic_index];
          const Algorithm twin = inbox.stats().algorithm;  // automatic only before its first call
          double alone = 0, by_name = 0;
          const auto run_automatic = [&] {
            alone = time_collective(comm, [&] { exchange(automatic_comm, outbox, inbox, {}); });
          };
          const auto run_twin = [&] {
            if (twin != Algorithm::automatic)
              by_name = time_collective(
                  comm, [&] { exchange(automatic_comm, outbox, twin_inbox, {.algorithm = twin}); });
          };
          if (rounds % 2 == 0) {
            run_automatic();
            run_twin();
          } else {
            run_twin();
            run_automatic();
          }
          samples[automatic_index].push_back(alone);
          if (twin != Algorithm::automatic && inbox.stats().algorithm == twin) {
            own_automatic.push_back(alone);
            own_twin.push_back(by_name);
          }
          spent += alone + by_name;
        }
        for (std::size_t a = 0; a < algorithms.size(); ++a) {
          if (a == automatic_index) continue;
          const double seconds = time_collective(
              comm, [&] { exchange(communicator(a), outbox, inboxes[a], {.algorithm = algorithms[a]}); });
          samples[a].push_back(seconds);
          spent += seconds;
        }
        for (std::size_t p = 0; p < plans.size(); ++p) {
          const double seconds = time_collective(comm, [&] { (void)plans[p].exchange(outbox); });
          plan_samples[p].push_back(seconds);
          spent += seconds;
        }
        ++rounds;
      }
      // The row's best fixed algorithm, N calls: the reference for the cost of learning.
      std::size_t best = SIZE_MAX;
      for (std::size_t a = 0; a < algorithms.size(); ++a)
        if (algorithms[a] != Algorithm::automatic &&
            (best == SIZE_MAX || summarize(samples[a]).median < summarize(samples[best]).median))
          best = a;
      const bool with_automatic = std::find(algorithms.begin(), algorithms.end(), Algorithm::automatic) != algorithms.end();
      // Every fixed algorithm by name, timed as automatic times it while it
      // learns: epochs of back-to-back calls (the first a warm-up), this
      // rank's median of the others, the slowest rank's; one algorithm's
      // epoch after another's, without a barrier between them, on
      // automatic's Comm (its windows and sub-communicators: another Comm's
      // can differ by 1.5x, see the twin above; calls by name leave its
      // learning alone). What automatic measured back to back is compared
      // with these (the same measurement, made by name; its range over the
      // epochs is its noise).
      std::vector<std::vector<double>> epochs(algorithms.size());
      if (with_automatic) {
        comm.barrier();
        for (int epoch = 0; epoch < by_name_epochs; ++epoch)
          for (std::size_t a = 0; a < algorithms.size(); ++a) {
            if (a == automatic_index) continue;
            std::array<double, epoch_calls - 1> times{};
            for (int call = 0; call < epoch_calls; ++call) {
              const double start = MPI_Wtime();
              exchange(automatic_comm, outbox, inboxes[a], {.algorithm = algorithms[a]});
              if (call > 0) times[static_cast<std::size_t>(call - 1)] = MPI_Wtime() - start;
            }
            std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
            epochs[a].push_back(comm.allreduce(times[times.size() / 2], MPI_MAX));
          }
      }
      // automatic's first N calls from scratch (learning included) against
      // the best fixed algorithm in hindsight's, under the same conditions:
      // a fresh Comm each time (setups, RMA windows, paid as automatic pays
      // them); the best among the fixed algorithms within 1.25x of the row's
      // best median (at most two), the least time at each checkpoint. Runs
      // interleaved, the fastest of 3 to 9 each (machine noise only ever
      // adds time, and hits both alike).
      std::pair<double, double> automatic_first{0, 0}, best_calls{0, 0};
      double automatic_prepaid = 0;  // only its total over regret_calls is reported
      if (best != SIZE_MAX && with_automatic) {
        std::vector<std::size_t> close;
        for (std::size_t a = 0; a < algorithms.size(); ++a)
          if (algorithms[a] != Algorithm::automatic &&
              summarize(samples[a]).median <= 1.25 * summarize(samples[best]).median)
            close.push_back(a);
        std::sort(close.begin(), close.end(), [&](std::size_t a, std::size_t b) {
          return summarize(samples[a]).median < summarize(samples[b]).median;
        });
        close.resize(std::min<std::size_t>(close.size(), 2));
        automatic_first = best_calls = {1e300, 1e300};
        automatic_prepaid = 1e300;
        // 3 repeats, up to 9 where they take less than ~0.5 s (a short run is
        // easily hit by one scheduler slice).
        const int repeats = std::clamp(
            static_cast<int>(0.5 / (static_cast<double>(regret_calls) * one_call * static_cast<double>(1 + close.size()))),
            3, 9);
        for (int repeat = 0; repeat < repeats; ++repeat) {
          const auto [first, all] = time_calls(Algorithm::automatic, inboxes[automatic_index]);
          automatic_first = {std::min(automatic_first.first, first), std::min(automatic_first.second, all)};
          automatic_prepaid =
              std::min(automatic_prepaid, time_calls(Algorithm::automatic, inboxes[automatic_index], true).second);
          for (std::size_t a : close) {
            const auto [best_first, best_all] = time_calls(algorithms[a], inboxes[a]);
            best_calls = {std::min(best_calls.first, best_first), std::min(best_calls.second, best_all)};
          }
        }
      }
      const auto report = automatic_report(automatic_comm);
      for (const auto& e : report.excluded) {
        const std::string line = fmt::format("{} not run: {}", to_string(e.algorithm), e.reason);
        if (std::find(excluded.begin(), excluded.end(), line) == excluded.end()) excluded.push_back(line);
      }
      for (std::size_t a = 0; a < algorithms.size(); ++a) {
        const auto& stats = inboxes[a].stats();
        unsigned long long counts[4] = {stats.messages_sent, stats.messages_received, stats.bytes_sent,
                                        stats.bytes_received};
        comm.allreduce_in_place(std::span<unsigned long long>(counts), MPI_MAX);
        // automatic: the choice of the row's class (the one with the most
        // calls), not whatever the last call ran (it may have been a recheck).
        const AutomaticClass* row_class = nullptr;
        for (const auto& c : report.classes)
          if (!row_class || c.calls > row_class->calls) row_class = &c;
        const Algorithm ran =
            algorithms[a] == Algorithm::automatic && row_class ? row_class->chosen : stats.algorithm;
        const std::string label = algorithms[a] == Algorithm::automatic ? "auto->" + std::string(to_string(ran))
                                                                        : std::string(to_string(algorithms[a]));
        Row row{label, pattern, bytes, algorithms[a], ran, "", 0, 0, summarize(samples[a]),
                samples[a].size(), counts[0], counts[1], counts[2], counts[3]};
        row.epochs = summarize(epochs[a]);
        if (algorithms[a] == Algorithm::automatic) {
          if (!own_twin.empty()) {
            row.own_cost = summarize(own_automatic).median / summarize(own_twin).median;
            row.own_pairs = own_twin.size();
          }
          // Each time automatic holds against the same algorithm by name,
          // measured the same way in the same context: one it measured while
          // learning back to back against the by-name epochs (their range over
          // 11 epochs: a further epoch of the same distribution falls outside
          // it 2 times in 12); one it measured again during the interleaved
          // rounds (marked '~': each of its calls came after a barrier and
          // other algorithms' calls) against the by-name calls of those rounds
          // (the 10th-90th percentile of the medians of 7 consecutive ones).
          // Either range widened by 5 %.
          const AutomaticClass* learnt = nullptr;
          for (const auto& c : after_learning.classes)
            if (row_class && c.message_class == row_class->message_class && c.byte_class == row_class->byte_class)
              learnt = &c;
          for (std::size_t i = 0; row_class && i < concrete_algorithms.size(); ++i) {
            const double recorded = row_class->seconds[i];
            const auto named = std::find(algorithms.begin(), algorithms.end(), concrete_algorithms[i]);
            if (recorded < 0 || named == algorithms.end()) continue;
            const auto at = static_cast<std::size_t>(named - algorithms.begin());
            const bool interleaved = !learnt || learnt->seconds[i] != recorded;
            Summary range = summarize(epochs[at]);
            if (interleaved) {
              std::vector<double> medians;
              for (auto first = samples[at].begin(); samples[at].end() - first >= 7; ++first)
                medians.push_back(summarize(std::vector<double>(first, first + 7)).median);
              std::sort(medians.begin(), medians.end());
              if (!medians.empty())
                range = {summarize(medians).median, medians[medians.size() / 10], medians[medians.size() * 9 / 10]};
            }
            if (range.median <= 0) continue;
            const bool agrees = recorded >= 0.95 * range.min && recorded <= 1.05 * range.max;
            ++row.compared;
            row.agreeing += agrees ? 1 : 0;
            row.agreement += fmt::format("{}{} {}{}{} {} [{}-{}]", row.agreement.empty() ? "" : ", ",
                                         to_string(concrete_algorithms[i]), interleaved ? "~" : "",
                                         microseconds(recorded), agrees ? "" : "!", microseconds(range.median),
                                         microseconds(range.min), microseconds(range.max));
          }
          if (row_class) {
            row.how = row_class->how;
            row.class_calls = row_class->calls;
            std::vector<std::pair<double, Algorithm>> times;
            for (std::size_t i = 0; i < concrete_algorithms.size(); ++i)
              if (row_class->seconds[i] >= 0) times.emplace_back(row_class->seconds[i], concrete_algorithms[i]);
            std::sort(times.begin(), times.end());
            for (const auto& [seconds, algorithm] : times)
              row.measured += fmt::format("{}{} {:.1f}", row.measured.empty() ? "" : ", ", to_string(algorithm),
                                          1e6 * seconds);
          }
          row.learning_calls = learning_calls;
          row.learning_cost = best_calls.first > 0 ? automatic_first.first / best_calls.first : 0;
          row.regret_calls = regret_calls;
          row.setup_seconds = report.setup_seconds;
          row.regret = best_calls.second > 0 ? automatic_first.second / best_calls.second : 0;
          row.regret_prepaid = best_calls.second > 0 ? automatic_prepaid / best_calls.second : 0;
          if (row_class && row_class->seconds_total > row_class->regret_seconds)
            row.estimated_regret =
                row_class->regret_seconds / (row_class->seconds_total - row_class->regret_seconds);
        }
        rows.push_back(row);
      }
      for (std::size_t p = 0; p < plans.size(); ++p) {
        const auto& stats = plans[p].inbox().stats();
        unsigned long long counts[4] = {stats.messages_sent, stats.messages_received, stats.bytes_sent,
                                        stats.bytes_received};
        comm.allreduce_in_place(std::span<unsigned long long>(counts), MPI_MAX);
        rows.push_back({p == 0 ? "plan, checked" : "plan, promised", pattern, bytes, Algorithm::automatic,
                        Algorithm::automatic, "", 0, 0, summarize(plan_samples[p]), plan_samples[p].size(), counts[0],
                        counts[1], counts[2], counts[3]});
      }
      if (comm.rank() == 0) {
        std::fprintf(stderr, "  %-17s %8zu B done (%d rounds)\n", pattern.c_str(), bytes, rounds);
        // What automatic's model predicts for this row (its first choice, and
        // the order in which it explores), from the row's max counts.
        const Row& any = rows.back();
        const PatternSummary summary{
            .ranks = comm.size(),
            .max_messages = double(std::max(any.max_messages_sent, any.max_messages_received)),
            .max_bytes = double(std::max(any.max_bytes_sent, any.max_bytes_received))};
        std::vector<std::pair<double, Algorithm>> predicted;
        for (Algorithm algorithm : concrete_algorithms) predicted.emplace_back(model.predict(algorithm, summary), algorithm);
        std::sort(predicted.begin(), predicted.end());
        std::string line;
        for (const auto& [seconds, algorithm] : predicted)
          line += fmt::format("{}{} {:.1f}", line.empty() ? "" : ", ", to_string(algorithm), 1e6 * seconds);
        std::printf("model %s %zu B: %s\n", pattern.c_str(), bytes, line.c_str());
      }
    }
  }
  const Json where = provenance_json(comm);
  if (comm.rank() == 0) {
    std::printf("sparse exchange, %d ranks (time per call = slowest rank, from a barrier)\n%s", comm.size(),
                table(rows).c_str());
    if (std::find(algorithms.begin(), algorithms.end(), Algorithm::automatic) != algorithms.end())
      std::printf("\nautomatic (learning from its own calls; cost model: %s): what it chose, how, and its regret: "
                  "its first N calls from scratch (learning included) against the first N calls of the best fixed "
                  "algorithm in hindsight (the fastest of 3-9 fresh Comms each, interleaved), at two N; prepaid: the same at the second N on a Comm where every "
                  "algorithm ran once by name before the timing (the one-time setups not in it); est.: its own estimate "
                  "(AutomaticClass::regret_seconds) after %zu calls; setup: its Comm's one-time setups "
                  "(AutomaticReport::setup_seconds); own: its own cost, its median against its choice's by name "
                  "(the same options), timed in adjacent pairs in alternating order; *: above 1.3x at N = 1000, 1.10x "
                  "at N >= 10^4 or 1.03x for its own cost\n%s",
                  model.source().c_str(), options.learn_calls, learning_table(rows).c_str());
    if (std::find(algorithms.begin(), algorithms.end(), Algorithm::automatic) != algorithms.end())
      std::printf("\nautomatic's measurements (us per call, the slowest rank's median of an epoch's calls 2-8) against "
                  "the same algorithms by name, measured alike in the same context: what it measured while learning "
                  "back to back against %d by-name epochs of 8 back-to-back calls (median [min-max]); '~': measured "
                  "again during the interleaved rounds, against the by-name calls of those rounds (median [10th-90th "
                  "percentile] of the medians of 7 consecutive calls); agreeing/compared; '!': outside the range "
                  "widened by 5 %%\n%s",
                  by_name_epochs, agreement_table(rows).c_str());
    for (const auto& line : excluded) std::printf("automatic: %s\n", line.c_str());
    if (!options.json.empty())
      write_results(options.json, "sparse", where, json_of(rows, comm.size()), "domex-bench sparse");
  }
}

const Registration registration{[](CLI::App& app) {
  auto options = std::make_shared<SparseOptions>();
  auto* command = app.add_subcommand("sparse", "compare the sparse-exchange algorithms (table + JSON)");
  command->add_option("--sizes", options->sizes, "bytes per message (per particle for migration:<N>)")
      ->capture_default_str();
  command
      ->add_option("--patterns", options->patterns,
                   "neighbours6, neighbours26, neighbours26+far, migration:<N> (N particles, e.g. migration:682^3)")
      ->capture_default_str();
  command->add_option("--migration-step", options->migration_step,
                      "migration:<N>: each coordinate moves uniform in +-this many mean spacings N^(-1/3)")
      ->capture_default_str();
  command->add_option("--migration-samples", options->migration_samples,
                      "migration:<N>: positions per rank (at most N / P) the multisection cuts are computed from; "
                      "0: equal-volume boxes, no multisection (no communication; for 16384 simulated ranks)")
      ->capture_default_str();
  command->add_option("--algorithms", options->algorithms, "algorithms to compare")
      ->check(CLI::IsMember(algorithm_names()))
      ->capture_default_str();
  command->add_option("--seconds-per-row", options->seconds_per_row, "measuring time per row")
      ->capture_default_str();
  command->add_option("--far-fraction", options->far_fraction, "chance per neighbour of an extra far destination")
      ->capture_default_str();
  command->add_option("--seed", options->seed, "seed of the far destinations")->capture_default_str();
  command->add_flag("!--no-plan", options->plan, "leave out the SparsePlan row");
  command->add_option("--rounds", options->rounds, "timed rounds at least (a simulation, deterministic, needs 1)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--warm-up", options->warm_up, "untimed calls per algorithm before the rounds (RMA windows)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--learn-calls", options->learn_calls,
                      "calls automatic makes (learning) before its row is sampled, at most ~2 s")
      ->capture_default_str();
  command->add_option("--learning-calls", options->learning_calls,
                      "calls of automatic timed from scratch for its cost of learning (fewer for large messages)")
      ->capture_default_str();
  command->add_option("--regret-calls", options->regret_calls,
                      "calls of automatic timed from scratch for its regret (fewer where slower than --regret-seconds)")
      ->capture_default_str();
  command->add_option("--regret-seconds", options->regret_seconds, "at most this long per run of --regret-calls")
      ->capture_default_str();
  command->add_option("--json", options->json, "write the rows as JSON to this file");
  command->callback([options] { run_sparse(*options); });
}};

}  // namespace
}  // namespace domex::bench::sparse_command

// SPDX-License-Identifier: BSD-3-Clause
// automatic: starts from the cost model's ranking, then learns from the
// caller's own calls which algorithm is fastest for each class of calls, and
// keeps checking at an exponentially decreasing rate.
//
// Identical on every rank by construction: decisions are taken only at epoch
// boundaries (the same call number on every rank), from values reduced in the
// one MPI_Allreduce such a boundary makes anyway: the pattern's shape, the
// model's fingerprint and the slowest rank's measured time of the epoch.
// Between boundaries a call costs a counter decrement: epochs that measure
// are 16 calls long, steady epochs double up to 256 calls, so the allreduce
// costs a few nanoseconds per call in a steady run.
//
// The one-sided algorithms are never run where RMA is not offered on the
// Comm (rma_refusal: an MPI defect, or a window that could not be created,
// see docs/mpi_defects.md); the report lists them with the reason, and a
// class that chose one falls back to its best two-sided algorithm.

#include "detail.hpp"

#include <domex/exchange/automatic.hpp>
#include <domex/exchange/cost_model.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

namespace domex {

namespace {

constexpr std::uint64_t measuring_epoch = 16;  // calls; the first is the warm-up (timed, charged to the budget)
constexpr std::uint64_t longest_epoch = 256;
constexpr std::size_t explored_first = 3;      // the model's best three are timed at once, the rest as challengers
constexpr std::uint64_t first_recheck = 4, last_recheck = 64;  // steady epochs between rechecks
/// Learning budget: timing challengers may cost at most this fraction of the
/// time the class has run at its best known speed (their measured or
/// predicted slowdown times the epoch, the RMA setup included), so a slow
/// candidate is re-timed rarely and a hopeless one almost never.
constexpr double learning_budget = 0.03;
/// Every challenger epoch is charged at least this slowdown (a near-tie
/// still costs the noise of switching).
constexpr double least_slowdown = 0.05;
/// ... and a never-measured algorithm at most this one, whatever the model
/// predicts (a model fitted on another machine can be off by 2x).
constexpr double untried_slowdown = 0.5;
/// A candidate that lost is not re-timed for this many calls of its class,
/// doubling with each further loss.
constexpr std::uint64_t first_backoff = 256, last_backoff = std::uint64_t{1} << 24;
/// The one-time setup of the RMA algorithms, their windows on a Comm's first
/// use, as charged to the budget before they are tried (afterwards the
/// measured warm-up call is): ~0.1 ms plus ~0.7 ns per window byte here
/// (MPI_Win_allocate: 4-64 KiB 0.07-0.1 ms, 1 MiB 0.7 ms); rma_passive's
/// window is about four times the bytes a rank sends (two parities, 2x room).
double setup_seconds(Algorithm algorithm, double max_bytes) {
  return 1e-4 + (algorithm == Algorithm::rma_passive ? 4 * max_bytes * 0.7e-9 : 0);
}

double clock_skew = 1.0;

bool has_setup(Algorithm algorithm) {
  return algorithm == Algorithm::rma_fence || algorithm == Algorithm::rma_passive;
}

std::size_t index_of(Algorithm algorithm) {
  for (std::size_t i = 0; i < concrete_algorithms.size(); ++i)
    if (concrete_algorithms[i] == algorithm) return i;
  return 0;
}

/// floor(log2(x)) + 1 for x >= 1, else 0.
int size_class(double x) { return x >= 1 ? std::bit_width(static_cast<std::uint64_t>(x)) : 0; }

struct ClassState {
  AutomaticClass report;
  std::array<Algorithm, concrete_algorithms.size()> ranked{};  // the model's order
  std::array<double, concrete_algorithms.size()> predicted{};  // the model's seconds per call
  double max_bytes = 0;  // the busiest rank's bytes per call when the class was first seen
  std::uint64_t steady_epochs = 0;             // since the last (re)check
  std::uint64_t recheck_after = 2;  // steady epochs before the next recheck
  int recheck_stage = 0;                       // 1: timing the incumbent, 2: timing a challenger
  Algorithm timing = Algorithm::automatic;     // what the current measuring epoch times
  double spent = 0;  // seconds the measuring epochs cost beyond the best known time
  std::array<std::uint64_t, concrete_algorithms.size()> retry_at{};  // calls before a loser is re-timed
  std::array<std::uint64_t, concrete_algorithms.size()> backoff{};
};

struct AutomaticState {
  explicit AutomaticState(Comm&) {}
  std::uint64_t calls_left = 0;  // until the next decision
  std::uint64_t steady_length = measuring_epoch;
  Algorithm chosen = Algorithm::nbx;
  bool measuring = false;
  bool learned = false;
  std::uint64_t timed_calls = 0;
  std::array<double, measuring_epoch> timed{};  // this rank's time of each timed call of the epoch
  bool warming = false;    // the next timed call is the epoch's first (warm-up, setup included)
  double warm_up = 0;      // its time: charged to the budget, not to the algorithm's time
  std::size_t current = SIZE_MAX;  // class of the epoch now running
  std::string model_source;
  std::vector<ClassState> classes;
  std::array<bool, concrete_algorithms.size()> set_up{};  // ran here before: no setup left
  std::array<bool, concrete_algorithms.size()> excluded{};  // never run on this Comm (see `why`)
  std::vector<ExcludedAlgorithm> why;
};

/// The algorithm a class runs when its choice is excluded: the fastest
/// measured one allowed, else the model's first allowed.
Algorithm best_allowed(const AutomaticState& state, const ClassState& cls) {
  Algorithm best = Algorithm::automatic;
  double best_time = std::numeric_limits<double>::infinity();
  for (Algorithm a : cls.ranked) {
    const std::size_t at = index_of(a);
    if (state.excluded[at]) continue;
    if (cls.report.seconds[at] >= 0 && cls.report.seconds[at] < best_time) {
      best_time = cls.report.seconds[at];
      best = a;
    }
  }
  if (best != Algorithm::automatic) return best;
  for (Algorithm a : cls.ranked)
    if (!state.excluded[index_of(a)]) return a;
  return Algorithm::nbx;
}

/// Stops running the one-sided algorithms on this Comm, for `reason`; every
/// class that chose one falls back to its best two-sided algorithm.
void exclude_rma(AutomaticState& state, const std::string& reason) {
  for (Algorithm a : {Algorithm::rma_fence, Algorithm::rma_passive}) {
    if (state.excluded[index_of(a)]) continue;
    state.excluded[index_of(a)] = true;
    state.why.push_back({a, reason});
  }
  for (auto& cls : state.classes) {
    if (!state.excluded[index_of(cls.report.chosen)]) continue;
    cls.report.chosen = best_allowed(state, cls);
    cls.report.how = cls.report.seconds[index_of(cls.report.chosen)] >= 0 ? "learned" : "model";
    cls.recheck_stage = 0;
  }
}

/// Whether this call of the epoch is timed (every call of a measuring epoch;
/// the first is the warm-up, see record_automatic_time()).
bool timed_call(const AutomaticState& state) noexcept { return state.measuring; }

/// The median of this rank's timed calls of the epoch (0 if none).
double median_time(AutomaticState& state) {
  const auto n = static_cast<std::ptrdiff_t>(state.timed_calls);
  if (n == 0) return 0;
  const auto begin = state.timed.begin(), middle = begin + n / 2;
  std::nth_element(begin, middle, begin + n);
  if (n % 2) return *middle;
  return (*middle + *std::max_element(begin, middle)) / 2;
}

/// Measured here, or known from an earlier run.
bool known(const ClassState& cls, Algorithm algorithm) {
  return cls.report.seconds[index_of(algorithm)] >= 0 || cls.report.how == "loaded";
}

/// The incumbent's time per call: measured, else predicted.
double incumbent_seconds(const ClassState& cls) {
  const std::size_t at = index_of(cls.report.chosen);
  return cls.report.seconds[at] >= 0 ? cls.report.seconds[at] : cls.predicted[at];
}

/// What timing `algorithm` for one epoch is expected to cost beyond running
/// the incumbent: its measured (else predicted) slowdown, at least
/// least_slowdown, times the epoch, plus its setup if it has not run here.
double expected_cost(const AutomaticState& state, const ClassState& cls, Algorithm algorithm) {
  const std::size_t at = index_of(algorithm);
  const double best = incumbent_seconds(cls);
  // Never measured: the model's slowdown, but at most untried_slowdown (a
  // model fitted elsewhere can be off by 2x: it must not hide an algorithm).
  const double slowdown =
      cls.report.seconds[at] >= 0
          ? std::max(cls.report.seconds[at] / std::max(best, 1e-300) - 1, least_slowdown)
          : std::clamp(cls.predicted[at] / std::max(cls.predicted[index_of(cls.report.chosen)], 1e-300) - 1,
                       least_slowdown, untried_slowdown);
  const double setup = has_setup(algorithm) && !state.set_up[at] ? setup_seconds(algorithm, cls.max_bytes) : 0;
  return slowdown * best * static_cast<double>(measuring_epoch) + setup;
}

/// Whether the class's learning budget covers timing `algorithm` now.
bool affordable(const AutomaticState& state, const ClassState& cls, Algorithm algorithm) {
  const double allowance = learning_budget * incumbent_seconds(cls) * static_cast<double>(cls.report.calls);
  return cls.spent + expected_cost(state, cls, algorithm) <= allowance;
}

/// The challenger to time next, or the incumbent where none may be timed:
/// never-measured algorithms first (in the model's order), then the one
/// with the smallest measured slowdown, among those not backing off whose
/// cost the budget covers.
Algorithm pick_challenger(const AutomaticState& state, const ClassState& cls) {
  const auto& r = cls.report;
  Algorithm pick = r.chosen;
  double pick_seconds = 0;
  bool pick_unmeasured = false;
  for (Algorithm a : cls.ranked) {
    const std::size_t at = index_of(a);
    if (a == r.chosen || state.excluded[at] || r.calls < cls.retry_at[at] || !affordable(state, cls, a)) continue;
    const bool unmeasured = r.seconds[at] < 0;
    if (pick_unmeasured && !unmeasured) continue;
    if (pick == r.chosen || (unmeasured && !pick_unmeasured) || (!unmeasured && r.seconds[at] < pick_seconds)) {
      pick = a;
      pick_seconds = r.seconds[at];
      pick_unmeasured = unmeasured;
    }
  }
  return pick;
}

/// Sets the next epoch of `cls`: what runs, whether it is timed, how long.
void plan_epoch(AutomaticState& state, ClassState& cls, bool learning) {
  auto& r = cls.report;
  const auto start_measuring = [&](Algorithm algorithm) {
    cls.timing = algorithm;
    state.set_up[index_of(algorithm)] = true;
    state.chosen = algorithm;
    state.measuring = true;
    state.calls_left = measuring_epoch;
    state.warming = true;
    state.warm_up = 0;
    state.timed_calls = 0;
  };
  state.measuring = false;
  if (learning) {
    // Exploration: the model's leading candidates (those without a setup to pay) once each.
    std::size_t tried = 0;
    for (Algorithm candidate : cls.ranked) {
      if (state.excluded[index_of(candidate)]) continue;
      if (has_setup(candidate) && !state.set_up[index_of(candidate)]) continue;
      if (!known(cls, candidate)) return start_measuring(candidate);
      if (++tried == explored_first) break;
    }
    // Rechecks with exponential back-off: the incumbent, then a challenger
    // the learning budget covers.
    if (cls.recheck_stage == 1) {
      cls.recheck_stage = 2;
      const Algorithm challenger = pick_challenger(state, cls);
      if (challenger == r.chosen) {  // nothing to try yet
        cls.recheck_stage = 0;
        return plan_epoch(state, cls, learning);
      }
      return start_measuring(challenger);
    }
    if (cls.steady_epochs >= cls.recheck_after && r.how != "model") {
      cls.steady_epochs = 0;
      if (const Algorithm challenger = pick_challenger(state, cls); challenger != r.chosen) {
        // While some algorithm was never measured, the incumbent's
        // measurement is recent: time the newcomer straight away.
        const bool unmeasured = r.seconds[index_of(challenger)] < 0;
        cls.recheck_stage = 1;
        if (unmeasured && r.how == "learned") return plan_epoch(state, cls, learning);
        return start_measuring(r.chosen);
      }
    }
  }
  ++cls.steady_epochs;
  state.chosen = r.chosen;
  state.calls_left = state.steady_length;
  state.steady_length = std::min(2 * state.steady_length, longest_epoch);
}

/// After a measuring epoch of `cls` (the slowest rank's median call and
/// warm-up call): record it, charge what it cost beyond the best known time
/// to the learning budget, and choose.
void record(const AutomaticState& state, ClassState& cls, double seconds_per_call, double warm_up) {
  auto& r = cls.report;
  const std::size_t timed = index_of(cls.timing);
  r.seconds[timed] = seconds_per_call;
  Algorithm best = r.chosen;
  double best_time = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < r.seconds.size(); ++i)
    if (!state.excluded[i] && r.seconds[i] >= 0 && r.seconds[i] < best_time) {
      best_time = r.seconds[i];
      best = concrete_algorithms[i];
    }
  cls.spent += (seconds_per_call - best_time) * static_cast<double>(measuring_epoch - 1) +
               std::max(warm_up - best_time, 0.0);  // the warm-up: a setup (RMA window) shows here
  if (cls.timing != best) {
    // Lost: not re-timed for a while, longer after each loss.
    cls.backoff[timed] = std::clamp(2 * cls.backoff[timed], first_backoff, last_backoff);
    cls.retry_at[timed] = r.calls + cls.backoff[timed];
  } else {
    cls.backoff[timed] = 0;
  }
  std::size_t measured = 0;
  for (Algorithm a : cls.ranked) measured += known(cls, a) ? 1 : 0;
  if (measured < explored_first) return;
  if (cls.recheck_stage == 2) {
    // Back off while the incumbent holds and every algorithm has been
    // measured (until then the budget alone sets the pace); recheck soon
    // after a change.
    bool all_measured = true;
    for (std::size_t i = 0; i < r.seconds.size(); ++i)
      all_measured = all_measured && (state.excluded[i] || r.seconds[i] >= 0);
    cls.recheck_stage = 0;
    cls.recheck_after = !all_measured       ? 2
                        : best == r.chosen  ? std::min(2 * cls.recheck_after, last_recheck)
                                            : first_recheck;
  }
  if (cls.recheck_stage == 0) {
    r.chosen = best;
    r.how = "learned";
  }
}

}  // namespace

namespace detail {

void set_clock_skew_for_testing(double factor) noexcept { clock_skew = factor; }

AutomaticDecision choose_automatic(Comm& comm, const SendView& send, const ExchangeOptions& options) {
  auto& state = comm.cached<AutomaticState>();
  if (state.calls_left > 0) {
    --state.calls_left;
    ++state.classes[state.current].report.calls;
    return {state.chosen, timed_call(state), state.learned};
  }
  // A decision: one allreduce (MAX) of the shape, the model fingerprint
  // (and its negation: they differ iff ranks disagree) and the epoch's time.
  const CostModel& shared = CostModel::of_this_machine(comm);  // collective on first use: every rank calls it
  const CostModel& model = options.cost_model ? *options.cost_model : shared;
  const bool learning = options.learning == Learning::on;
  const double fingerprint = model.fingerprint() + (learning ? 4503599627370496.0 : 0.0);  // + 2^52: exact
  // The epoch's time per call: this rank's median (one preempted call does
  // not decide), then the slowest rank's.
  double values[6] = {0, 0, fingerprint, -fingerprint, state.measuring ? median_time(state) : 0,
                      state.measuring ? state.warm_up : 0};
  for (std::size_t i = 0; i < send.ranks.size(); ++i) {
    if (send.ranks[i] == comm.rank()) continue;
    values[0] += 1;
    values[1] += static_cast<double>((send.offsets[i + 1] - send.offsets[i]) * send.element_size);
  }
  comm.allreduce_in_place(std::span<double>(values), MPI_MAX);
  if (values[2] != -values[3])
    fail("exchange(automatic)",
         "ExchangeOptions::cost_model or ::learning differs between ranks; every rank must pass the same");
  state.model_source = model.source();
  // RMA where windows cannot collide and none failed (collective on the
  // first decision: every rank is at it).
  if (const auto& refused = rma_refusal(comm)) exclude_rma(state, *refused);

  const int message_class = size_class(values[0]);
  const int byte_class = size_class(values[0] > 0 ? values[1] / values[0] : 0);
  std::size_t now = SIZE_MAX;
  for (std::size_t c = 0; c < state.classes.size(); ++c)
    if (state.classes[c].report.message_class == message_class && state.classes[c].report.byte_class == byte_class)
      now = c;
  if (now == SIZE_MAX) {
    ClassState cls;
    cls.report.message_class = message_class;
    cls.report.byte_class = byte_class;
    const PatternSummary pattern{.ranks = comm.size(), .max_messages = values[0], .max_bytes = values[1]};
    std::array<Algorithm, concrete_algorithms.size()> order = concrete_algorithms;
    std::stable_sort(order.begin(), order.end(), [&](Algorithm a, Algorithm b) {
      return model.predict(a, pattern) < model.predict(b, pattern);
    });
    cls.ranked = order;
    for (Algorithm a : concrete_algorithms) cls.predicted[index_of(a)] = model.predict(a, pattern);
    cls.max_bytes = values[1];
    cls.report.chosen = best_allowed(state, cls);
    if (const LearnedChoice* loaded = model.find(comm.size(), message_class, byte_class);
        loaded && learning && !state.excluded[index_of(loaded->algorithm)]) {
      // Measured by an earlier run: start from it, and recheck with back-off.
      cls.report.chosen = loaded->algorithm;
      cls.report.how = "loaded";
      cls.report.seconds[index_of(loaded->algorithm)] = loaded->seconds;
    }
    state.classes.push_back(cls);
    now = state.classes.size() - 1;
  }
  // The epoch that ended belongs to its class only if the pattern stayed in it.
  if (state.measuring && now == state.current && state.timed_calls > 0)
    record(state, state.classes[now], values[4], values[5]);
  else if (state.measuring && state.current < state.classes.size())
    state.classes[state.current].recheck_stage = 0;  // interrupted: start the recheck again later
  if (now != state.current) state.steady_length = measuring_epoch;
  state.current = now;
  ClassState& cls = state.classes[now];
  if (!learning) {
    cls.report.chosen = model.choose({.ranks = comm.size(), .max_messages = values[0], .max_bytes = values[1]});
    if (state.excluded[index_of(cls.report.chosen)]) cls.report.chosen = best_allowed(state, cls);
    cls.report.how = "model";
  }
  plan_epoch(state, cls, learning);
  state.learned = cls.report.how != "model" || state.measuring;
  --state.calls_left;  // this call is the epoch's first
  ++cls.report.calls;
  return {state.chosen, timed_call(state), state.learned};
}

void record_automatic_time(Comm& comm, double seconds) {
  auto& state = comm.cached<AutomaticState>();
  if (state.warming) {
    state.warm_up = seconds * clock_skew;
    state.warming = false;
  } else if (state.timed_calls < state.timed.size()) {
    state.timed[state.timed_calls++] = seconds * clock_skew;
  }
}

void automatic_fell_back(Comm& comm) {
  auto& state = comm.cached<AutomaticState>();
  state.calls_left = 0;  // the next call decides (and excludes what failed)
  state.measuring = false;
  state.warming = false;
  state.timed_calls = 0;
  if (state.current < state.classes.size()) state.classes[state.current].recheck_stage = 0;
}

}  // namespace detail

AutomaticReport automatic_report(const Comm& comm) {
  const auto& state = comm.cached<AutomaticState>();
  AutomaticReport report{state.model_source, {}, state.why};
  for (const auto& cls : state.classes) report.classes.push_back(cls.report);
  return report;
}

CostModel learned_model(const Comm& comm) {
  CostModel model = CostModel::of_this_machine(comm);
  for (const auto& cls : comm.cached<AutomaticState>().classes) {
    const auto& r = cls.report;
    if (r.how != "learned") continue;
    const LearnedChoice choice{comm.size(), r.message_class, r.byte_class, r.chosen, r.seconds[index_of(r.chosen)]};
    auto existing = std::find_if(model.learned.begin(), model.learned.end(), [&](const LearnedChoice& c) {
      return c.ranks == choice.ranks && c.message_class == choice.message_class && c.byte_class == choice.byte_class;
    });
    if (existing != model.learned.end()) *existing = choice;
    else model.learned.push_back(choice);
  }
  return model;
}

}  // namespace domex

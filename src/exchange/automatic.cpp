// SPDX-License-Identifier: BSD-3-Clause
// automatic: starts from the cost model's ranking, then learns from the
// caller's own calls which algorithm is fastest for each class of calls,
// with bounded regret: over N calls it costs little more than the best fixed
// algorithm in hindsight (docs/cost_model.md).
//
// - Explore: every algorithm runs one measuring epoch early in a class's life
//   (the first 8 x 7 calls), whatever the model predicts, and those within
//   1.5x of the fastest a second one, whose time is kept. A one-time setup
//   (an RMA window, the grid's communicators) shows in the first epoch's
//   first, warm-up call and is charged once to the Comm (setup_seconds), not
//   to the class as if it recurred: per-Comm state is reused by every class.
//   The rest of an algorithm's first epoch on a Comm can still read slow (its
//   first uses: at 64 B, np 2, reduce_scatter's calls 2-8 on a fresh Comm
//   took 1.0-1.3 us, its later ones 0.9): the second look, for the
//   algorithms that can matter, does not see that; the others keep their one
//   epoch (a second one for all cost 15 % of the first 1000 calls at 4 KiB).
// - Adopt only what survives a re-measurement: a challenger that measured
//   faster than the incumbent runs a confirming duel, incumbent and
//   challenger in adjacent epochs of the same length, and replaces it only if
//   it wins by a margin again.
// - Recheck, never lock: a challenger is re-timed in a duel every 128 to 2048
//   calls of its class, within a budget of 3 % of the class's time, the
//   closest runner-up first; one that lost waits 256 calls, doubling up to
//   8192. The last three calls of every steady epoch are timed too (the
//   sentinel, their median): an incumbent that slowed down is re-measured at
//   once and, if confirmed, duels straight away.
//
// Identical on every rank by construction: decisions are taken only at epoch
// boundaries (the same call number on every rank), from values reduced in the
// one MPI_Allreduce such a boundary makes anyway: the pattern's shape, the
// model's fingerprint and the slowest rank's measured times. Between
// boundaries a call costs a counter decrement: measuring epochs are 8 calls
// long, steady epochs double from 16 up to 256 calls, so the allreduce costs a
// few nanoseconds per call in a steady run.
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

/// Calls of a measuring epoch: the first is the warm-up (timed, not part of
/// the median: a switch of algorithm or a setup shows there), the slowest
/// rank's median of the other seven is the algorithm's time.
constexpr std::uint64_t measuring_epoch = 8;
/// While a class explores, the algorithms whose first epoch took at most this
/// factor of the fastest first epoch get a second one (see the top).
constexpr double second_look = 1.5;
constexpr std::uint64_t first_steady = 16, longest_epoch = 256;
/// Rechecks (the challengers' epochs) may cost at most this fraction of the
/// time the class has run at its incumbent's speed.
constexpr double recheck_budget = 0.03;
/// Every challenger epoch is expected to cost at least this slowdown (a
/// near-tie still costs the noise of switching) ...
constexpr double least_slowdown = 0.05;
/// ... and a never-measured one (a loaded class) at most this one, whatever
/// the model predicts (a model fitted elsewhere can be off by 2x).
constexpr double untried_slowdown = 0.5;
/// A challenger wins a duel only when faster than the incumbent by this
/// fraction, twice in a row (the duel and its confirmation).
constexpr double win_margin = 0.03;
/// A sentinel (the median of a steady epoch's last sentinel_calls calls) this
/// much slower than the incumbent's time re-measures the incumbent; a
/// re-measurement this much slower than before starts a duel.
constexpr std::uint64_t sentinel_calls = 3;
constexpr double sentinel_factor = 1.5, slowed_factor = 1.25;
/// Calls of a class between rechecks: from the first, doubling while the
/// incumbent holds, back to the first after a change.
constexpr std::uint64_t first_recheck = 128, last_recheck = 2048;
/// A challenger that lost is not re-timed for this many calls of its class,
/// doubling with each further loss (never more: no choice is ever locked).
constexpr std::uint64_t first_backoff = 256, last_backoff = 8192;

double clock_skew = 1.0;

std::size_t index_of(Algorithm algorithm) {
  for (std::size_t i = 0; i < concrete_algorithms.size(); ++i)
    if (concrete_algorithms[i] == algorithm) return i;
  return 0;
}

/// floor(log2(x)) + 1 for x >= 1, else 0.
int size_class(double x) { return x >= 1 ? std::bit_width(static_cast<std::uint64_t>(x)) : 0; }

/// What a class's measuring epochs are for.
enum class Step {
  explore,  ///< timing every algorithm once
  duel,     ///< incumbent and challenger, adjacent epochs
  confirm,  ///< the challenger won: the same again, in the other order
  check,    ///< a sentinel call was slow: the incumbent re-measured
  steady,   ///< running the incumbent
};

struct ClassState {
  AutomaticClass report;
  std::array<Algorithm, concrete_algorithms.size()> ranked{};  // the model's order
  std::array<double, concrete_algorithms.size()> predicted{};  // the model's seconds per call
  Step step = Step::explore;
  std::array<Algorithm, 2> queue{};  // epochs of the step still to run
  std::size_t queued = 0, next = 0;
  Algorithm challenger = Algorithm::automatic;
  double incumbent_time = -1, challenger_time = -1;  // the step's measurements
  double before_check = 0;                           // the incumbent's time before a check
  std::uint64_t next_recheck = first_recheck;        // class calls at which a recheck is due
  std::uint64_t recheck_interval = first_recheck;
  std::array<std::uint64_t, concrete_algorithms.size()> retry_at{};  // calls before a loser is re-timed
  std::array<std::uint64_t, concrete_algorithms.size()> backoff{};
  std::array<std::uint8_t, concrete_algorithms.size()> explored{};  // exploring epochs recorded
  double spent = 0;             // seconds the challenger epochs cost beyond the incumbent's time
  std::uint64_t accounted = 0;  // calls whose time is in report.seconds_total
};

struct AutomaticState {
  explicit AutomaticState(Comm&) {}
  std::uint64_t calls_left = 0;  // until the next decision
  std::uint64_t steady_length = first_steady;
  Algorithm chosen = Algorithm::nbx;
  bool measuring = false;
  bool watching = false;  // steady epoch: its last sentinel_calls calls are timed (the sentinel)
  bool learned = false;
  Algorithm timing = Algorithm::automatic;  // what the current measuring epoch times
  std::uint64_t timed_calls = 0;
  std::array<double, measuring_epoch> timed{};  // this rank's time of each timed call of the epoch
  bool warming = false;  // the next timed call is the epoch's first (warm-up, setup included)
  double warm_up = 0;    // its time
  std::array<double, sentinel_calls> sentinel{};  // this rank's times of the steady epoch's last calls
  std::size_t sentinel_timed = 0;
  std::size_t current = SIZE_MAX;  // class of the epoch now running
  std::string model_source;
  std::vector<ClassState> classes;
  std::array<bool, concrete_algorithms.size()> set_up{};    // measured on this Comm: its setup is paid
  std::array<bool, concrete_algorithms.size()> excluded{};  // never run on this Comm (see `why`)
  std::vector<ExcludedAlgorithm> why;
  double setup_seconds = 0;
};

/// The seconds per call of `algorithm` in `cls`: measured, else predicted.
double per_call(const ClassState& cls, Algorithm algorithm) {
  const std::size_t at = index_of(algorithm);
  return cls.report.seconds[at] >= 0 ? cls.report.seconds[at] : cls.predicted[at];
}

/// The fastest measured algorithm allowed (automatic where none is).
Algorithm fastest_measured(const AutomaticState& state, const ClassState& cls) {
  Algorithm best = Algorithm::automatic;
  double best_time = std::numeric_limits<double>::infinity();
  for (Algorithm a : cls.ranked) {
    const std::size_t at = index_of(a);
    if (!state.excluded[at] && cls.report.seconds[at] >= 0 && cls.report.seconds[at] < best_time) {
      best_time = cls.report.seconds[at];
      best = a;
    }
  }
  return best;
}

/// The algorithm a class runs when its choice is excluded: the fastest
/// measured one allowed, else the model's first allowed.
Algorithm best_allowed(const AutomaticState& state, const ClassState& cls) {
  if (const Algorithm best = fastest_measured(state, cls); best != Algorithm::automatic) return best;
  for (Algorithm a : cls.ranked)
    if (!state.excluded[index_of(a)]) return a;
  return Algorithm::nbx;
}

/// Ends the class's current step where it stands (interrupted, or an
/// algorithm of it excluded): exploring goes on later, a duel is retried.
void abandon_step(ClassState& cls) {
  cls.queued = cls.next = 0;
  if (cls.step != Step::explore) cls.step = Step::steady;
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
    abandon_step(cls);
    if (!state.excluded[index_of(cls.report.chosen)]) continue;
    cls.report.chosen = best_allowed(state, cls);
    cls.report.how = cls.report.seconds[index_of(cls.report.chosen)] >= 0 ? "learned" : "model";
  }
}

/// The median of this rank's timed calls of the epoch (0 if none).
double median_time(AutomaticState& state) {
  const auto n = static_cast<std::ptrdiff_t>(state.timed_calls);
  if (n == 0) return 0;
  const auto begin = state.timed.begin(), middle = begin + n / 2;
  std::nth_element(begin, middle, begin + n);
  if (n % 2) return *middle;
  return (*middle + *std::max_element(begin, middle)) / 2;
}

/// The median of this rank's sentinel calls (0 if none: all must be timed).
double sentinel_time(const AutomaticState& state) {
  if (state.sentinel_timed < state.sentinel.size()) return 0;
  auto times = state.sentinel;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Adds the calls of the class since the last boundary to its total: as
/// measured (`epoch_seconds`, a measuring epoch), else at the incumbent's
/// time per call; and updates its regret against the fastest measured.
void account(const AutomaticState& state, ClassState& cls, double epoch_seconds = -1) {
  auto& r = cls.report;
  const auto calls = static_cast<double>(r.calls - cls.accounted);
  r.seconds_total += epoch_seconds >= 0 ? epoch_seconds : calls * per_call(cls, r.chosen);
  cls.accounted = r.calls;
  if (const Algorithm best = fastest_measured(state, cls); best != Algorithm::automatic)
    r.regret_seconds = std::max(r.seconds_total - static_cast<double>(r.calls) * per_call(cls, best), 0.0);
}

/// What a duel with `algorithm` is expected to cost beyond running the
/// incumbent: its slowdown (measured, else the model's, capped), at least
/// least_slowdown, times the epoch.
double expected_cost(const ClassState& cls, Algorithm algorithm) {
  const double incumbent = per_call(cls, cls.report.chosen);
  const std::size_t at = index_of(algorithm);
  const double slowdown =
      cls.report.seconds[at] >= 0
          ? std::max(cls.report.seconds[at] / std::max(incumbent, 1e-300) - 1, least_slowdown)
          : std::clamp(cls.predicted[at] / std::max(cls.predicted[index_of(cls.report.chosen)], 1e-300) - 1,
                       least_slowdown, untried_slowdown);
  return slowdown * incumbent * static_cast<double>(measuring_epoch);
}

/// The challenger to duel next, or automatic where none may: never-measured
/// algorithms first (in the model's order), then the fastest measured, among
/// those not backing off whose expected cost the recheck budget covers.
Algorithm pick_challenger(const AutomaticState& state, const ClassState& cls) {
  const auto& r = cls.report;
  const double allowance = recheck_budget * per_call(cls, r.chosen) * static_cast<double>(r.calls);
  Algorithm pick = Algorithm::automatic;
  bool pick_unmeasured = false;
  for (Algorithm a : cls.ranked) {
    const std::size_t at = index_of(a);
    if (a == r.chosen || state.excluded[at] || r.calls < cls.retry_at[at]) continue;
    if (cls.spent + expected_cost(cls, a) > allowance) continue;
    const bool unmeasured = r.seconds[at] < 0;
    if (pick == Algorithm::automatic || (unmeasured && !pick_unmeasured) ||
        (!unmeasured && !pick_unmeasured && r.seconds[at] < r.seconds[index_of(pick)])) {
      pick = a;
      pick_unmeasured = unmeasured;
    }
  }
  return pick;
}

/// The algorithm a class explores next (model's order): one never explored,
/// else one explored once within second_look of the fastest; automatic
/// where none is left.
Algorithm next_to_explore(const AutomaticState& state, const ClassState& cls) {
  for (Algorithm a : cls.ranked)
    if (!state.excluded[index_of(a)] && cls.explored[index_of(a)] == 0) return a;
  const Algorithm fastest = fastest_measured(state, cls);
  if (fastest == Algorithm::automatic) return Algorithm::automatic;
  const double bound = second_look * cls.report.seconds[index_of(fastest)];
  for (Algorithm a : cls.ranked) {
    const std::size_t at = index_of(a);
    if (!state.excluded[at] && cls.explored[at] == 1 && cls.report.seconds[at] <= bound) return a;
  }
  return Algorithm::automatic;
}

/// After a measuring epoch of `cls` (the slowest rank's median call and
/// warm-up call): record it and account for it. The first run of an
/// algorithm on the Comm pays its setup in the warm-up: charged to the Comm.
void record(AutomaticState& state, ClassState& cls, double seconds_per_call, double warm_up) {
  auto& r = cls.report;
  const Algorithm timed = state.timing;
  const std::size_t at = index_of(timed);
  r.seconds[at] = seconds_per_call;
  if (cls.step == Step::explore) ++cls.explored[at];
  if (!state.set_up[at]) {
    state.set_up[at] = true;
    state.setup_seconds += std::max(warm_up - seconds_per_call, 0.0);
    warm_up = std::min(warm_up, seconds_per_call);
  }
  const auto calls = static_cast<double>(r.calls - cls.accounted);
  const double epoch_seconds = warm_up + seconds_per_call * std::max(calls - 1, 0.0);
  if (cls.step != Step::explore && timed != r.chosen) {
    const double incumbent = cls.incumbent_time >= 0 ? cls.incumbent_time : per_call(cls, r.chosen);
    cls.spent += std::max(epoch_seconds - calls * incumbent, 0.0);
  }
  if (timed == r.chosen) cls.incumbent_time = seconds_per_call;
  else cls.challenger_time = seconds_per_call;
  account(state, cls, epoch_seconds);
}

/// The challenger lost its duel: it waits, longer after each loss, and so
/// does the next recheck while the incumbent holds.
void challenger_lost(ClassState& cls) {
  const std::size_t at = index_of(cls.challenger);
  cls.backoff[at] = std::clamp(2 * cls.backoff[at], first_backoff, last_backoff);
  cls.retry_at[at] = cls.report.calls + cls.backoff[at];
  cls.recheck_interval = std::min(2 * cls.recheck_interval, last_recheck);
  cls.next_recheck = cls.report.calls + cls.recheck_interval;
  cls.step = Step::steady;
}

/// The challenger won its duel and the confirmation: it becomes the
/// incumbent; the old one is a challenger like any other, rechecked soon.
void challenger_adopted(ClassState& cls) {
  const Algorithm old = cls.report.chosen;
  cls.report.chosen = cls.challenger;
  cls.report.how = "learned";
  cls.backoff[index_of(cls.challenger)] = 0;
  cls.backoff[index_of(old)] = 0;
  cls.retry_at[index_of(old)] = 0;
  cls.recheck_interval = first_recheck;
  cls.next_recheck = cls.report.calls + first_recheck;
  cls.step = Step::steady;
}

/// Starts a step measuring `first`, then `second` (automatic: nothing).
void start_step(ClassState& cls, Step step, Algorithm challenger, Algorithm first, Algorithm second) {
  cls.step = step;
  cls.challenger = challenger;
  cls.queue = {first, second};
  cls.queued = second == Algorithm::automatic ? 1 : 2;
  cls.next = 0;
  if (step != Step::duel || first != cls.report.chosen) return;
  cls.incumbent_time = cls.challenger_time = -1;
}

/// Whether the step's challenger beat the incumbent by the margin.
bool challenger_won(const ClassState& cls) {
  return cls.challenger_time >= 0 && cls.incumbent_time >= 0 &&
         cls.challenger_time < (1 - win_margin) * cls.incumbent_time;
}

/// Moves the class's step on after an epoch, and returns what the next epoch
/// measures (automatic: none, run the incumbent).
Algorithm next_measurement(const AutomaticState& state, ClassState& cls, bool slow_sentinel) {
  auto& r = cls.report;
  for (;;) {
    if (cls.next < cls.queued) {
      const Algorithm a = cls.queue[cls.next++];
      if (!state.excluded[index_of(a)]) return a;
      abandon_step(cls);
      continue;
    }
    switch (cls.step) {
      case Step::explore: {
        if (const Algorithm a = next_to_explore(state, cls); a != Algorithm::automatic) return a;
        // Every algorithm measured: the fastest must confirm it.
        const Algorithm fastest = fastest_measured(state, cls);
        r.how = "learned";
        cls.step = Step::steady;
        cls.next_recheck = r.calls + first_recheck;
        if (fastest != Algorithm::automatic && fastest != r.chosen) {
          start_step(cls, Step::confirm, fastest, r.chosen, fastest);
        }
        continue;
      }
      case Step::duel:
        if (challenger_won(cls)) start_step(cls, Step::confirm, cls.challenger, cls.challenger, r.chosen);
        else challenger_lost(cls);
        continue;
      case Step::confirm:
        if (challenger_won(cls)) challenger_adopted(cls);
        else challenger_lost(cls);
        continue;
      case Step::check: {
        cls.step = Step::steady;
        if (cls.incumbent_time <= slowed_factor * cls.before_check) continue;
        // The incumbent slowed down: a duel at once, against its fresh time.
        const Algorithm challenger = pick_challenger(state, cls);
        if (challenger == Algorithm::automatic) continue;
        start_step(cls, Step::duel, challenger, challenger, Algorithm::automatic);
        cls.challenger_time = -1;
        continue;
      }
      case Step::steady:
        if (r.calls >= cls.next_recheck) {
          if (const Algorithm challenger = pick_challenger(state, cls); challenger != Algorithm::automatic) {
            start_step(cls, Step::duel, challenger, r.chosen, challenger);
            continue;
          }
        }
        if (slow_sentinel) {
          cls.before_check = per_call(cls, r.chosen);
          start_step(cls, Step::check, r.chosen, r.chosen, Algorithm::automatic);
          continue;
        }
        return Algorithm::automatic;
    }
  }
}

/// Sets the next epoch of `cls`: what runs, whether it is timed, how long.
void plan_epoch(AutomaticState& state, ClassState& cls, bool learning, bool slow_sentinel) {
  state.measuring = false;
  state.watching = false;
  const Algorithm measure = learning ? next_measurement(state, cls, slow_sentinel) : Algorithm::automatic;
  if (measure != Algorithm::automatic) {
    state.timing = measure;
    state.chosen = measure;
    state.measuring = true;
    state.calls_left = measuring_epoch;
    state.warming = true;
    state.warm_up = 0;
    state.timed_calls = 0;
    return;
  }
  state.chosen = cls.report.chosen;
  state.watching = learning && cls.report.seconds[index_of(cls.report.chosen)] >= 0;
  state.calls_left = state.steady_length;
  state.steady_length = std::min(2 * state.steady_length, longest_epoch);
}

}  // namespace

namespace detail {

void set_clock_skew_for_testing(double factor) noexcept { clock_skew = factor; }

AutomaticDecision choose_automatic(Comm& comm, const SendView& send, const ExchangeOptions& options) {
  auto& state = comm.cached<AutomaticState>();
  if (state.calls_left > 0) {
    --state.calls_left;
    ++state.classes[state.current].report.calls;
    return {state.chosen, state.measuring || (state.watching && state.calls_left < sentinel_calls), state.learned};
  }
  // A decision: one allreduce (MAX) of the shape, the model fingerprint
  // (and its negation: they differ iff ranks disagree) and the epoch's times.
  const CostModel& shared = CostModel::of_this_machine(comm);  // collective on first use: every rank calls it
  const CostModel& model = options.cost_model ? *options.cost_model : shared;
  const bool learning = options.learning == Learning::on;
  const double fingerprint = model.fingerprint() + (learning ? 4503599627370496.0 : 0.0);  // + 2^52: exact
  // The epoch's time per call: this rank's median (one preempted call does
  // not decide), then the slowest rank's; its warm-up; a steady epoch's
  // sentinel call.
  double values[7] = {0,
                      0,
                      fingerprint,
                      -fingerprint,
                      state.measuring ? median_time(state) : 0,
                      state.measuring ? state.warm_up : 0,
                      state.watching ? sentinel_time(state) : 0};
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
    cls.report.chosen = best_allowed(state, cls);
    if (const LearnedChoice* loaded = model.find(comm.size(), message_class, byte_class);
        loaded && learning && !state.excluded[index_of(loaded->algorithm)]) {
      // Measured by an earlier run: start from it, no exploration; the
      // others are tried at the rechecks, never-measured ones first.
      cls.report.chosen = loaded->algorithm;
      cls.report.how = "loaded";
      cls.report.seconds[index_of(loaded->algorithm)] = loaded->seconds;
      cls.step = Step::steady;
    }
    state.classes.push_back(cls);
    now = state.classes.size() - 1;
  }
  // The epoch that ended: recorded and accounted to its class, if the
  // pattern stayed in it; a step it interrupted is taken up again later.
  bool slow_sentinel = false;
  if (state.current < state.classes.size()) {
    ClassState& previous = state.classes[state.current];
    if (state.measuring && now == state.current && state.timed_calls > 0) {
      record(state, previous, values[4], values[5]);
    } else {
      account(state, previous);
      if (state.measuring) abandon_step(previous);
      slow_sentinel = state.watching && now == state.current &&
                      values[6] > sentinel_factor * per_call(previous, previous.report.chosen);
    }
  }
  if (now != state.current) state.steady_length = first_steady;
  state.current = now;
  ClassState& cls = state.classes[now];
  if (!learning) {
    cls.report.chosen = model.choose({.ranks = comm.size(), .max_messages = values[0], .max_bytes = values[1]});
    if (state.excluded[index_of(cls.report.chosen)]) cls.report.chosen = best_allowed(state, cls);
    cls.report.how = "model";
  }
  plan_epoch(state, cls, learning, slow_sentinel);
  state.learned = cls.report.how != "model" || state.measuring;
  state.sentinel_timed = 0;
  --state.calls_left;  // this call is the epoch's first
  ++cls.report.calls;
  return {state.chosen, state.measuring || (state.watching && state.calls_left < sentinel_calls), state.learned};
}

void record_automatic_time(Comm& comm, double seconds) {
  auto& state = comm.cached<AutomaticState>();
  if (!state.measuring) {
    if (state.sentinel_timed < state.sentinel.size()) state.sentinel[state.sentinel_timed++] = seconds * clock_skew;
  } else if (state.warming) {
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
  state.watching = false;
  state.warming = false;
  state.timed_calls = 0;
  if (state.current < state.classes.size()) abandon_step(state.classes[state.current]);
}

}  // namespace detail

AutomaticReport automatic_report(const Comm& comm) {
  const auto& state = comm.cached<AutomaticState>();
  AutomaticReport report{state.model_source, {}, state.why};
  for (const auto& cls : state.classes) report.classes.push_back(cls.report);
  report.setup_seconds = state.setup_seconds;
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

// automatic: the algorithm with the least predicted time under the calibrated
// CostModel, for the pattern reduced over ranks. All ranks must choose the
// same algorithm, which needs one small MPI_Allreduce; it is done on the
// first call on a Comm and then every `decide_every` calls, so its cost is
// amortised (patterns of a simulation change slowly from step to step).

#include "detail.hpp"

#include <domex/exchange/cost_model.hpp>

#include <cstdint>
#include <span>

namespace domex::detail {

namespace {

constexpr std::uint64_t decide_every = 16;

struct AutomaticChoice {
  explicit AutomaticChoice(Comm&) {}
  std::uint64_t calls = 0;
  Algorithm chosen = Algorithm::nbx;
};

}  // namespace

Algorithm choose_automatic(Comm& comm, const SendView& send, const ExchangeOptions& options) {
  auto& state = comm.cached<AutomaticChoice>();
  if (state.calls++ % decide_every != 0) return state.chosen;
  // The choice is identical on every rank by construction: the pattern is
  // reduced over ranks, and the model is either the Comm's shared one (read by
  // rank 0 and broadcast) or the caller's, whose fingerprint rides in the same
  // allreduce (max of f and of -f differ iff the ranks' models differ).
  const CostModel& shared = CostModel::of_this_machine(comm);  // collective on first use: every rank calls it
  const CostModel& model = options.cost_model ? *options.cost_model : shared;
  const double fingerprint = model.fingerprint();
  double shape[4] = {0, 0, fingerprint, -fingerprint};  // messages, bytes sent (self excluded)
  for (std::size_t i = 0; i < send.ranks.size(); ++i) {
    if (send.ranks[i] == comm.rank()) continue;
    shape[0] += 1;
    shape[1] += static_cast<double>((send.offsets[i + 1] - send.offsets[i]) * send.element_size);
  }
  comm.allreduce_in_place(std::span<double>(shape), MPI_MAX);
  if (shape[2] != -shape[3]) {
    --state.calls;  // nothing was decided: the next call decides again
    fail("exchange(automatic)",
         "ExchangeOptions::cost_model differs between ranks; every rank must pass an equal model");
  }
  state.chosen = model.choose({.ranks = comm.size(), .max_messages = shape[0], .max_bytes = shape[1]});
  return state.chosen;
}

}  // namespace domex::detail

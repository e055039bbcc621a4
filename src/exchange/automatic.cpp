// automatic: the algorithm with the least predicted time under the calibrated
// CostModel, for the pattern reduced over ranks. All ranks must choose the
// same algorithm, which needs one small MPI_Allreduce; it is done on the
// first call on a Comm and then every `decide_every` calls, so its cost is
// amortised (patterns of a simulation change slowly from step to step).

#include "detail.hpp"

#include <domex/exchange/cost_model.hpp>

#include <cstdint>

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
  double shape[2] = {0, 0};  // messages, bytes sent by this rank (self excluded)
  for (std::size_t i = 0; i < send.ranks.size(); ++i) {
    if (send.ranks[i] == comm.rank()) continue;
    shape[0] += 1;
    shape[1] += static_cast<double>((send.offsets[i + 1] - send.offsets[i]) * send.element_size);
  }
  comm.allreduce_in_place(std::span<double>(shape), MPI_MAX);
  const CostModel& model = options.cost_model ? *options.cost_model : CostModel::of_this_machine();
  state.chosen = model.choose({.ranks = comm.size(), .max_messages = shape[0], .max_bytes = shape[1]});
  return state.chosen;
}

}  // namespace domex::detail

// Placeholder model until calibration lands (replaced by the calibrated one).
#include <domex/exchange/cost_model.hpp>
#include <domex/comm/error.hpp>

#include <cmath>
#include <limits>

namespace domex {

namespace {
std::size_t index_of(Algorithm algorithm) {
  for (std::size_t i = 0; i < concrete_algorithms.size(); ++i)
    if (concrete_algorithms[i] == algorithm) return i;
  fail("CostModel", "automatic has no coefficients");
}
double rho(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::alltoall: return 1.0;
    case Algorithm::rma_fence: return 1.0 / 16;
    case Algorithm::sendrecv_reduce:
    case Algorithm::reduce_scatter: return 1.0 / 64;
    default: return 0.0;
  }
}
}  // namespace

CostModel CostModel::builtin() {
  CostModel model;
  for (Algorithm algorithm : concrete_algorithms) model[algorithm] = {20e-6, 2e-6, 2e-10};
  return model;
}
const CostModel& CostModel::of_this_machine() {
  static const CostModel model = builtin();
  return model;
}
CostModel::Coefficients& CostModel::operator[](Algorithm algorithm) { return coefficients_[index_of(algorithm)]; }
const CostModel::Coefficients& CostModel::operator[](Algorithm algorithm) const {
  return coefficients_[index_of(algorithm)];
}
double CostModel::predict(Algorithm algorithm, const PatternSummary& pattern) const {
  const auto g = [&](double p) { return std::log2(std::max(p, 2.0)) + rho(algorithm) * p; };
  const auto& c = (*this)[algorithm];
  return c.fixed * g(pattern.ranks) / g(calibration_ranks) + c.per_message * pattern.max_messages +
         c.per_byte * pattern.max_bytes;
}
Algorithm CostModel::choose(const PatternSummary& pattern) const {
  Algorithm best = Algorithm::nbx;
  double best_time = std::numeric_limits<double>::infinity();
  for (Algorithm algorithm : concrete_algorithms)
    if (const double t = predict(algorithm, pattern); t < best_time) {
      best_time = t;
      best = algorithm;
    }
  return best;
}
CostModel CostModel::load(const std::string& path) { fail("CostModel::load", "not implemented: " + path); }
void CostModel::save(const std::string& path) const { fail("CostModel::save", "not implemented: " + path); }

}  // namespace domex

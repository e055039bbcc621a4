// The calibrated cost model of Algorithm::automatic (docs/cost_model.md).

#include <domex/comm/error.hpp>
#include <domex/exchange/cost_model.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace domex {

namespace {

constexpr const char* header = "domex-cost-model 1";

std::size_t index_of(Algorithm algorithm) {
  for (std::size_t i = 0; i < concrete_algorithms.size(); ++i)
    if (concrete_algorithms[i] == algorithm) return i;
  fail("CostModel", "Algorithm::automatic has no coefficients");
}

/// Weight of P in the synchronisation part g(P) = log2 P + rho P: 1 for
/// alltoall's O(P) exchange, small for the P-vector reductions, 0 for the
/// algorithms whose synchronisation is a tree (barrier, Ibarrier).
double rho(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::alltoall: return 1.0;
    case Algorithm::rma_fence: return 1.0 / 16;
    case Algorithm::sendrecv_reduce:
    case Algorithm::reduce_scatter: return 1.0 / 64;
    default: return 0.0;
  }
}

double synchronisation(Algorithm algorithm, double ranks) {
  return std::log2(std::max(ranks, 2.0)) + rho(algorithm) * ranks;
}

}  // namespace

CostModel CostModel::builtin() {
  // Fitted by `mpirun -n 8 domex-bench calibrate` on the development machine
  // (2-core container, Open MPI 4.1.4, 8 ranks oversubscribed); see
  // docs/cost_model.md. Re-run calibrate on your machine for a better model.
  CostModel model;
  model.calibration_ranks = 8;
  model[Algorithm::alltoall] = {79.16e-6, 3.869e-6, 0.9724e-9};
  model[Algorithm::sendrecv_reduce] = {52.09e-6, 4.787e-6, 1.2924e-9};
  model[Algorithm::nbx] = {85.35e-6, 12.051e-6, 1.2531e-9};
  model[Algorithm::reduce_scatter] = {53.90e-6, 3.745e-6, 1.2915e-9};
  model[Algorithm::rma_fence] = {106.69e-6, 5.390e-6, 0.9966e-9};
  model[Algorithm::rma_passive] = {101.49e-6, 4.597e-6, 1.9732e-9};
  return model;
}

const CostModel& CostModel::of_this_machine() {
  static const CostModel model = [] {
    if (const char* path = std::getenv("DOMEX_COST_MODEL"); path && *path) return load(path);
    if (std::ifstream("domex-cost-model.txt")) return load("domex-cost-model.txt");
    return builtin();
  }();
  return model;
}

CostModel CostModel::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("CostModel::load", fmt::format("cannot open '{}'", path));
  CostModel model;
  std::array<bool, concrete_algorithms.size()> seen{};
  std::string line;
  int number = 0;
  bool has_header = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    if (!has_header) {
      if (line != header) fail("CostModel::load", fmt::format("{}:{}: expected '{}', got '{}'", path, number, header, line));
      has_header = true;
      continue;
    }
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "calibration_ranks") {
      if (!(fields >> model.calibration_ranks) || model.calibration_ranks < 1)
        fail("CostModel::load", fmt::format("{}:{}: bad calibration_ranks in '{}'", path, number, line));
      continue;
    }
    Algorithm algorithm;
    try {
      algorithm = algorithm_from_string(key);
    } catch (const Error&) {
      fail("CostModel::load", fmt::format("{}:{}: unknown algorithm '{}'", path, number, key));
    }
    Coefficients c;
    if (algorithm == Algorithm::automatic || !(fields >> c.fixed >> c.per_message >> c.per_byte) || c.fixed < 0 ||
        c.per_message < 0 || c.per_byte < 0 || !std::isfinite(c.fixed + c.per_message + c.per_byte))
      fail("CostModel::load",
           fmt::format("{}:{}: expected '<algorithm> <fixed> <per_message> <per_byte>' (seconds, >= 0), got '{}'",
                       path, number, line));
    model[algorithm] = c;
    seen[index_of(algorithm)] = true;
  }
  if (!has_header) fail("CostModel::load", fmt::format("{}: empty file", path));
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (!seen[i])
      fail("CostModel::load", fmt::format("{}: no line for algorithm {}", path, to_string(concrete_algorithms[i])));
  return model;
}

void CostModel::save(const std::string& path) const {
  std::string text = fmt::format(
      "{}\n# T = fixed * g(P)/g(P_cal) + per_message * m + per_byte * B  (seconds; see docs/cost_model.md)\n"
      "calibration_ranks {}\n",
      header, calibration_ranks);
  for (Algorithm algorithm : concrete_algorithms) {
    const auto& c = (*this)[algorithm];
    text += fmt::format("{} {:.6e} {:.6e} {:.6e}\n", to_string(algorithm), c.fixed, c.per_message, c.per_byte);
  }
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    if (!(out << text)) fail("CostModel::save", fmt::format("cannot write '{}'", temporary));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    fail("CostModel::save", fmt::format("cannot rename '{}' to '{}'", temporary, path));
}

CostModel::Coefficients& CostModel::operator[](Algorithm algorithm) { return coefficients_[index_of(algorithm)]; }

const CostModel::Coefficients& CostModel::operator[](Algorithm algorithm) const {
  return coefficients_[index_of(algorithm)];
}

double CostModel::predict(Algorithm algorithm, const PatternSummary& pattern) const {
  const auto& c = (*this)[algorithm];
  return c.fixed * synchronisation(algorithm, pattern.ranks) / synchronisation(algorithm, calibration_ranks) +
         c.per_message * pattern.max_messages + c.per_byte * pattern.max_bytes;
}

Algorithm CostModel::choose(const PatternSummary& pattern) const {
  Algorithm best = Algorithm::nbx;
  double best_time = std::numeric_limits<double>::infinity();
  for (Algorithm algorithm : concrete_algorithms)
    if (const double time = predict(algorithm, pattern); time < best_time) {
      best_time = time;
      best = algorithm;
    }
  return best;
}

}  // namespace domex

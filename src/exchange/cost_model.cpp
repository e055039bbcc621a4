// SPDX-License-Identifier: BSD-3-Clause
// The calibrated cost model of Algorithm::automatic (docs/cost_model.md).

#include <domex/comm/error.hpp>
#include <domex/exchange/cost_model.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
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
  // grid: two all-to-alls of counts among sqrt(P) ranks (a row, a column).
  if (algorithm == Algorithm::grid) return 2 * std::sqrt(std::max(ranks, 1.0));
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
  // Not fitted yet: two alltoall-like hops among sqrt(P) ranks, every byte
  // forwarded once (so twice alltoall's per-byte cost).
  model[Algorithm::grid] = {1.5 * 79.16e-6, 3.869e-6, 2 * 0.9724e-9};
  return model;
}

namespace {

/// The shared model of one Comm, read by its rank 0 on first use.
struct SharedModel {
  explicit SharedModel(Comm&) {}
  bool loaded = false;
  CostModel model;
};

}  // namespace

const CostModel& CostModel::of_this_machine(const Comm& comm) {
  auto& shared = comm.cached<SharedModel>();
  if (shared.loaded) return shared.model;
  // Rank 0 resolves and reads; everyone parses the same text.
  std::string text, source, problem;
  if (comm.rank() == 0) {
    try {
      if (const char* path = std::getenv("DOMEX_COST_MODEL"); path && *path) {
        source = path;
        text = load(path).text();
      } else if (std::ifstream("domex-cost-model.txt")) {
        source = "domex-cost-model.txt";
        text = load(source).text();
      } else {
        source = "built-in";  // no text: every rank has it (formatting and parsing it cost ~30 us per Comm)
      }
    } catch (const Error& error) {
      problem = error.what();
    }
  }
  std::string message = problem;
  const std::string payload = comm.rank() == 0 ? (problem.empty() ? source + "\n" + text : std::string()) : "";
  // One broadcast of "<source>\n<text>" (or of nothing when rank 0 failed).
  int length = static_cast<int>(payload.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT, 0, comm.get()), "MPI_Bcast");
  if (length == 0) {
    // Rank 0 could not read the file: the same error everywhere.
    int size = static_cast<int>(message.size());
    check_mpi(MPI_Bcast(&size, 1, MPI_INT, 0, comm.get()), "MPI_Bcast");
    message.resize(static_cast<std::size_t>(size));
    check_mpi(MPI_Bcast(message.data(), size, MPI_CHAR, 0, comm.get()), "MPI_Bcast");
    throw Error(message);
  }
  std::string received = payload;
  received.resize(static_cast<std::size_t>(length));
  check_mpi(MPI_Bcast(received.data(), length, MPI_CHAR, 0, comm.get()), "MPI_Bcast");
  const std::size_t newline = received.find('\n');
  if (newline + 1 == received.size() && received.compare(0, newline, "built-in") == 0) {
    static const CostModel built_in = builtin();  // a file's text is never empty (it has a header)
    shared.model = built_in;
  } else {
    shared.model = parse(received.substr(newline + 1), received.substr(0, newline));
  }
  shared.model.source_ = received.substr(0, newline);
  shared.loaded = true;
  return shared.model;
}

CostModel CostModel::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("CostModel::load", fmt::format("cannot open '{}'", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail("CostModel::load", fmt::format("cannot read '{}'", path));
  CostModel model = parse(text.str(), path);
  model.source_ = path;
  return model;
}

CostModel CostModel::parse(const std::string& text, const std::string& path) {
  std::istringstream in(text);
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
    if (key == "learned") {
      LearnedChoice choice;
      std::string name;
      if (!(fields >> choice.ranks >> choice.message_class >> choice.byte_class >> name >> choice.seconds) ||
          choice.ranks < 1 || choice.message_class < 0 || choice.byte_class < 0 || !(choice.seconds >= 0))
        fail("CostModel::load",
             fmt::format("{}:{}: expected 'learned <ranks> <message_class> <byte_class> <algorithm> <seconds>', got '{}'",
                         path, number, line));
      try {
        choice.algorithm = algorithm_from_string(name);
      } catch (const Error&) {
        choice.algorithm = Algorithm::automatic;
      }
      if (choice.algorithm == Algorithm::automatic)
        fail("CostModel::load", fmt::format("{}:{}: unknown algorithm '{}'", path, number, name));
      model.learned.push_back(choice);
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
  // A model file written before grid existed stays valid: grid's line is optional.
  if (!seen[index_of(Algorithm::grid)]) model[Algorithm::grid] = builtin()[Algorithm::grid];
  seen[index_of(Algorithm::grid)] = true;
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (!seen[i])
      fail("CostModel::load", fmt::format("{}: no line for algorithm {}", path, to_string(concrete_algorithms[i])));
  model.source_ = path;
  return model;
}

std::string CostModel::text() const {
  // 17 significant digits: load(save()) gives back every coefficient exactly.
  std::string text = fmt::format(
      "{}\n# T = fixed * g(P)/g(P_cal) + per_message * m + per_byte * B  (seconds; see docs/cost_model.md)\n"
      "calibration_ranks {}\n",
      header, calibration_ranks);
  for (Algorithm algorithm : concrete_algorithms) {
    const auto& c = (*this)[algorithm];
    text += fmt::format("{} {:.17g} {:.17g} {:.17g}\n", to_string(algorithm), c.fixed, c.per_message, c.per_byte);
  }
  if (!learned.empty())
    text += "# learned by automatic: ranks, message class, byte class (floor(log2) + 1), fastest, seconds per call\n";
  for (const auto& choice : learned)
    text += fmt::format("learned {} {} {} {} {:.17g}\n", choice.ranks, choice.message_class, choice.byte_class,
                        to_string(choice.algorithm), choice.seconds);
  return text;
}

void CostModel::save(const std::string& path) const {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    if (!(out << text())) fail("CostModel::save", fmt::format("cannot write '{}'", temporary));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    fail("CostModel::save", fmt::format("cannot rename '{}' to '{}'", temporary, path));
}

const LearnedChoice* CostModel::find(int ranks, int message_class, int byte_class) const noexcept {
  for (const auto& choice : learned)
    if (choice.ranks == ranks && choice.message_class == message_class && choice.byte_class == byte_class)
      return &choice;
  return nullptr;
}

double CostModel::fingerprint() const {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a over the coefficients' bits
  const auto mix = [&](double value) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (bits >> (8 * byte)) & 0xff;
      hash *= 1099511628211ull;
    }
  };
  mix(static_cast<double>(calibration_ranks));
  for (const auto& c : coefficients_) {
    mix(c.fixed);
    mix(c.per_message);
    mix(c.per_byte);
  }
  for (const auto& choice : learned) {
    mix(choice.ranks);
    mix(choice.message_class);
    mix(choice.byte_class);
    mix(static_cast<double>(choice.algorithm));
    mix(choice.seconds);
  }
  return static_cast<double>(hash >> 12);
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

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The cost model behind Algorithm::automatic.

#include <domex/comm/comm.hpp>
#include <domex/exchange/algorithm.hpp>

#include <array>
#include <string>
#include <vector>

namespace domex {

/// What Algorithm::automatic learned for one class of calls: the fastest
/// measured algorithm and its time per call (slowest rank). Classes: P, the
/// busiest rank's message count and its mean bytes per message, each as
/// floor(log2(x)) + 1 (0 for none).
struct LearnedChoice {
  int ranks = 1;
  int message_class = 0;
  int byte_class = 0;
  Algorithm algorithm = Algorithm::nbx;
  double seconds = 0;
  bool operator==(const LearnedChoice&) const = default;
};

/// The shape of one exchange, reduced over ranks (the same on every rank).
struct PatternSummary {
  int ranks = 1;                ///< P
  double max_messages = 0;      ///< largest number of messages a rank sends or receives (self excluded)
  double max_bytes = 0;         ///< largest number of bytes a rank sends or receives (self excluded)
};

/// Predicted time of each algorithm for a pattern, from an alpha-beta model
/// whose constants are measured on this machine (`domex-bench calibrate`):
///
///   T_a(P, m, B) = fixed_a * g_a(P) / g_a(P_cal) + per_message_a * m + per_byte_a * B
///
/// with g_a(P) = log2(P) + rho_a * P (the synchronisation part: rho = 1 for
/// alltoall's O(P) rounds, small for the P-vector reductions, 0 for nbx and
/// rma_passive), and g(P) = 2 sqrt(P) for grid (two all-to-alls of counts among
/// sqrt(P) ranks). See docs/cost_model.md.
class CostModel {
 public:
  struct Coefficients {
    double fixed = 0;        ///< seconds per call at the calibration P
    double per_message = 0;  ///< seconds per message (alpha)
    double per_byte = 0;     ///< seconds per byte (beta)
  };

  /// Constants measured on the development machine (see docs/cost_model.md).
  static CostModel builtin();
  /// Collective over `comm`: the model from $DOMEX_COST_MODEL, else
  /// ./domex-cost-model.txt, else builtin(), as rank 0 of `comm` sees it,
  /// read there once and broadcast, so every rank holds the same model even
  /// where the file differs between nodes or exists only on some. Cached on
  /// the Comm (later calls do not communicate). A file that rank 0 cannot
  /// read or parse is a domex::Error on every rank. source() says where the
  /// model came from.
  static const CostModel& of_this_machine(const Comm& comm);
  /// Reads a model file; throws domex::Error naming the file and line.
  static CostModel load(const std::string& path);
  /// Parses the text format of save(); `origin` names it in errors.
  static CostModel parse(const std::string& text, const std::string& origin);
  /// Writes the text format load() reads.
  void save(const std::string& path) const;
  /// The text format of save().
  [[nodiscard]] std::string text() const;
  /// Where the model came from: "built-in" or the file path.
  [[nodiscard]] const std::string& source() const noexcept { return source_; }
  /// A fingerprint of the coefficients (52 bits, exact as a double): equal
  /// models have equal fingerprints, used to check that ranks agree.
  [[nodiscard]] double fingerprint() const;

  [[nodiscard]] double predict(Algorithm algorithm, const PatternSummary& pattern) const;
  /// The concrete algorithm with the smallest predicted time.
  [[nodiscard]] Algorithm choose(const PatternSummary& pattern) const;

  /// The measured choices (saved and loaded with the model: lines
  /// "learned <ranks> <message_class> <byte_class> <algorithm> <seconds>").
  std::vector<LearnedChoice> learned;
  /// The learned choice for a class, or nullptr.
  [[nodiscard]] const LearnedChoice* find(int ranks, int message_class, int byte_class) const noexcept;

  [[nodiscard]] Coefficients& operator[](Algorithm algorithm);
  [[nodiscard]] const Coefficients& operator[](Algorithm algorithm) const;
  int calibration_ranks = 8;  ///< P_cal

 private:
  std::array<Coefficients, concrete_algorithms.size()> coefficients_{};
  std::string source_ = "built-in";
};

}  // namespace domex

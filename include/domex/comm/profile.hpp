// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex::Profile: named phase timers reduced over ranks.

#include <domex/comm/comm.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace domex {

/// Records the time spent in named phases ("decompose", "exchange particles",
/// "build tree", "build LET", "exchange LET", "traverse", "kernel", "other"),
/// then reduces min/avg/max over the ranks and prints the table the seed
/// studies print, or writes it as JSON.
///
///   domex::Profile profile;
///   { auto timer = profile.phase("kernel"); compute(); }
///   profile.print(comm, std::cout);   // collective
class Profile {
 public:
  /// RAII timer: adds the time from construction to destruction to a phase.
  class Timer {
   public:
    Timer(Profile& profile, std::size_t phase) noexcept;
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;
    ~Timer();

   private:
    Profile& profile_;
    std::size_t phase_;
    double start_;
  };

  /// Phase statistics after reduction over ranks; times are in seconds.
  struct Row {
    std::string name;
    double min = 0;  ///< smallest per-rank total
    double avg = 0;  ///< mean per-rank total
    double max = 0;  ///< largest per-rank total (the one that costs wall time)
    std::uint64_t calls = 0;  ///< calls on the rank with most calls
  };

  /// Starts timing `name` until the returned timer is destroyed.
  [[nodiscard]] Timer phase(std::string_view name);
  /// Adds `seconds` (and one call) to phase `name`.
  void add(std::string_view name, double seconds);
  /// Forgets every recorded time, keeps nothing.
  void clear() noexcept { phases_.clear(); }

  /// Local (this rank's) total for a phase; 0 if it was never timed.
  [[nodiscard]] double local_seconds(std::string_view name) const noexcept;

  /// Collective: min/avg/max over the ranks of `comm`, phases in order of
  /// first use (phases timed on some ranks only count 0 on the others).
  [[nodiscard]] std::vector<Row> reduce(const Comm& comm) const;
  /// Collective; rank 0 prints an aligned table to `out`.
  void print(const Comm& comm, std::ostream& out, std::string_view title = "profile") const;
  /// Formats reduced rows as a JSON array of objects.
  [[nodiscard]] static std::string to_json(const std::vector<Row>& rows);
  /// Formats reduced rows as an aligned text table (what print() prints).
  [[nodiscard]] static std::string to_table(const std::vector<Row>& rows, std::string_view title);

 private:
  struct Phase {
    std::string name;
    double seconds = 0;
    std::uint64_t calls = 0;
  };
  std::size_t index_of(std::string_view name);
  std::vector<Phase> phases_;
};

}  // namespace domex

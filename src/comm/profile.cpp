// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/profile.hpp>

#include <fmt/format.h>

#include <cmath>

#include <algorithm>
#include <ostream>

namespace domex {

Profile::Timer::Timer(Profile& profile, std::size_t phase) noexcept
    : profile_(profile), phase_(phase), start_(MPI_Wtime()) {}

Profile::Timer::~Timer() {
  auto& phase = profile_.phases_[phase_];
  phase.seconds += MPI_Wtime() - start_;
  ++phase.calls;
}

std::size_t Profile::index_of(std::string_view name) {
  for (std::size_t i = 0; i < phases_.size(); ++i)
    if (phases_[i].name == name) return i;
  phases_.push_back({std::string(name), 0.0, 0});
  return phases_.size() - 1;
}

Profile::Timer Profile::phase(std::string_view name) { return Timer(*this, index_of(name)); }

void Profile::add(std::string_view name, double seconds) {
  auto& phase = phases_[index_of(name)];
  phase.seconds += seconds;
  ++phase.calls;
}

double Profile::local_seconds(std::string_view name) const noexcept {
  for (const auto& phase : phases_)
    if (phase.name == name) return phase.seconds;
  return 0.0;
}

std::vector<Profile::Row> Profile::reduce(const Comm& comm) const {
  // Ranks may have timed different phases: agree on the union of names
  // first (in order of first appearance, rank 0's first), then reduce
  // value arrays aligned to it.
  std::string names;
  for (const auto& phase : phases_) names += phase.name + '\n';
  const auto all = comm.allgatherv<char>(std::span<const char>(names.data(), names.size()));
  std::vector<std::string> union_names;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i] != '\n') continue;
    std::string name(all.begin() + static_cast<std::ptrdiff_t>(begin), all.begin() + static_cast<std::ptrdiff_t>(i));
    if (std::find(union_names.begin(), union_names.end(), name) == union_names.end()) union_names.push_back(name);
    begin = i + 1;
  }
  const std::size_t n = union_names.size();
  std::vector<double> minimum(n), sum(n), maximum(n);
  std::vector<unsigned long long> calls(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& phase : phases_)
      if (phase.name == union_names[i]) {
        minimum[i] = sum[i] = maximum[i] = phase.seconds;
        calls[i] = phase.calls;
      }
  }
  comm.allreduce_in_place(std::span(minimum), MPI_MIN);
  comm.allreduce_in_place(std::span(sum), MPI_SUM);
  comm.allreduce_in_place(std::span(maximum), MPI_MAX);
  comm.allreduce_in_place(std::span(calls), MPI_MAX);
  std::vector<Row> rows(n);
  for (std::size_t i = 0; i < n; ++i)
    rows[i] = {union_names[i], minimum[i], sum[i] / comm.size(), maximum[i], calls[i]};
  return rows;
}

std::string Profile::to_table(const std::vector<Row>& rows, std::string_view title) {
  double total = 0;
  for (const auto& row : rows) total += row.max;
  std::string out = fmt::format("{}\n{:<24} {:>12} {:>12} {:>12} {:>8} {:>7}\n", title, "phase", "min [s]",
                                "avg [s]", "max [s]", "calls", "max %");
  for (const auto& row : rows)
    out += fmt::format("{:<24} {:>12.6f} {:>12.6f} {:>12.6f} {:>8} {:>6.1f}%\n", row.name, row.min, row.avg, row.max,
                       row.calls, total > 0 ? 100.0 * row.max / total : 0.0);
  return out;
}

namespace {

/// A JSON string literal: quotes, backslashes and control characters escaped.
std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<int>(c));
        else out += c;
    }
  }
  return out + "\"";
}

/// A JSON number, or null for NaN and infinities (which JSON cannot hold).
std::string json_number(double value) {
  return std::isfinite(value) ? fmt::format("{:.9g}", value) : std::string("null");
}

}  // namespace

std::string Profile::to_json(const std::vector<Row>& rows) {
  std::string out = "[";
  for (std::size_t i = 0; i < rows.size(); ++i)
    out += fmt::format("{}{{\"phase\": {}, \"min\": {}, \"avg\": {}, \"max\": {}, \"calls\": {}}}", i ? ", " : "",
                       json_string(rows[i].name), json_number(rows[i].min), json_number(rows[i].avg),
                       json_number(rows[i].max), rows[i].calls);
  return out + "]";
}

void Profile::print(const Comm& comm, std::ostream& out, std::string_view title) const {
  const auto rows = reduce(comm);
  if (comm.rank() == 0) out << to_table(rows, title) << std::flush;
}

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Command-line checks the applications share.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <bit>
#include <charconv>
#include <limits>
#include <string>
#include <system_error>
#include <type_traits>

#include "files.hpp"  // fail_app

namespace domex::apps {

/// A CLI11 check for an option stored in the integer type T: the text the
/// user typed (flag or INI value) must be a whole number in [lo, hi], in
/// decimal. Without it CLI11 wraps "--particles -5" around to 2^64 - 5 (the
/// error then names a number nobody typed), runs "--steps 1e30"-sized values
/// as LONG_MAX, and reads "010" as octal 8. Otherwise throws domex::Error
/// "<app>: <flag> <text>: must be ..." out of CLI::App::parse(), which
/// run_app() reports like every other bad value (exit status 2). Finer
/// limits (a positive time step count, ...) stay with each app's validate().
template <class T>
[[nodiscard]] CLI::Validator whole_number(std::string app, std::string flag, T lo = std::numeric_limits<T>::min(),
                                          T hi = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  const auto check = [app = std::move(app), flag = std::move(flag), lo, hi](std::string &text) -> std::string {
    const auto what = [&] {
      // Powers of two as such: "2^40", not 1099511627776.
      const auto top = static_cast<std::make_unsigned_t<T>>(hi);
      const std::string most = hi > 0 && std::has_single_bit(top) && top > 1024
                                   ? fmt::format("2^{}", std::countr_zero(top))
                                   : fmt::format("{}", hi);
      if (lo == 1) return fmt::format("a positive integer (at most {})", most);
      if (lo == 0) return fmt::format("a whole number >= 0 (at most {})", most);
      return fmt::format("a whole number in [{}, {}]", lo, most);
    };
    T value{};
    const char *end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    const bool read = !text.empty() && stop == end && error == std::errc();
    if (!read || value < lo || value > hi) fail_app(app, fmt::format("{} {}: must be {}", flag, text, what()));
    text = fmt::format("{}",
                       value);  // decimal for CLI11 ("010" is 10, not octal 8)
    return "";
  };
  return CLI::Validator(check, "",
                        "whole number");  // no description: --help unchanged
}

}  // namespace domex::apps

// SPDX-License-Identifier: BSD-3-Clause
// C API: named phase timers reduced over ranks.
#include "capi.hpp"

#include <algorithm>
#include <cstring>
#include <iostream>

using domex::capi::guarded;
using domex::capi::need;

extern "C" {

int domex_profile_create(domex_profile** out) {
  return guarded("domex_profile_create", [&] { need(out, "domex_profile_create", "out") = new domex_profile{}; });
}

int domex_profile_free(domex_profile** profile) { return domex::capi::free_handle(profile, "domex_profile_free"); }

int domex_profile_begin(domex_profile* profile, const char* phase) {
  constexpr const char* call = "domex_profile_begin";
  return guarded(call, [&] {
    auto& p = need(profile, call, "profile");
    const std::string name = domex::capi::need_text(phase, call, "phase");
    for (const auto& running : p.running)
      if (running.first == name)
        throw domex::capi::ArgumentError(domex::capi::message(call, "phase '" + name + "' is already running"));
    p.running.emplace_back(name, MPI_Wtime());
  });
}

int domex_profile_end(domex_profile* profile, const char* phase) {
  constexpr const char* call = "domex_profile_end";
  return guarded(call, [&] {
    const double now = MPI_Wtime();
    auto& p = need(profile, call, "profile");
    const std::string name = domex::capi::need_text(phase, call, "phase");
    const auto running = std::find_if(p.running.begin(), p.running.end(),
                                      [&](const auto& entry) { return entry.first == name; });
    if (running == p.running.end())
      throw domex::capi::ArgumentError(domex::capi::message(call, "phase '" + name + "' was not begun"));
    p.profile.add(name, now - running->second);
    p.running.erase(running);
  });
}

int domex_profile_add(domex_profile* profile, const char* phase, double seconds) {
  constexpr const char* call = "domex_profile_add";
  return guarded(call, [&] { need(profile, call, "profile").profile.add(domex::capi::need_text(phase, call, "phase"), seconds); });
}

int domex_profile_seconds(const domex_profile* profile, const char* phase, double* seconds) {
  constexpr const char* call = "domex_profile_seconds";
  return guarded(call, [&] {
    need(seconds, call, "seconds") = need(profile, call, "profile").profile.local_seconds(domex::capi::need_text(phase, call, "phase"));
  });
}

int domex_profile_print(const domex_profile* profile, const domex_comm* comm, const char* title) {
  constexpr const char* call = "domex_profile_print";
  return guarded(call, [&] {
    const auto& p = need(profile, call, "profile");
    const auto& c = need(comm, call, "comm").comm;
    p.profile.print(c, std::cout, title ? title : "profile");
    std::cout.flush();
  });
}

int domex_profile_json(const domex_profile* profile, const domex_comm* comm, char* text, size_t capacity,
                       size_t* length) {
  constexpr const char* call = "domex_profile_json";
  return guarded(call, [&] {
    const auto& p = need(profile, call, "profile");
    const auto& c = need(comm, call, "comm").comm;
    need(length, call, "length");
    if (capacity > 0) need(text, call, "text");
    const std::string json = domex::Profile::to_json(p.profile.reduce(c));
    *length = json.size();
    if (capacity > 0) {
      const std::size_t copied = std::min(json.size(), capacity - 1);
      std::memcpy(text, json.data(), copied);
      text[copied] = '\0';
    }
  });
}

}  // extern "C"

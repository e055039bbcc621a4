// SPDX-License-Identifier: BSD-3-Clause
// C API: sparse exchange of elements of any size with any algorithm.
#include "capi.hpp"

using domex::capi::guarded;
using domex::capi::need;

extern "C" {

int domex_inbox_create(domex_inbox** out) {
  return guarded("domex_inbox_create", [&] { need(out, "domex_inbox_create", "out") = new domex_inbox{}; });
}

int domex_inbox_free(domex_inbox** inbox) { return domex::capi::free_handle(inbox, "domex_inbox_free"); }

int domex_exchange(domex_comm* comm, size_t element_size, size_t message_count, const int* ranks,
                   const size_t* offsets, const void* data, const char* algorithm, domex_inbox* inbox) {
  constexpr const char* call = "domex_exchange";
  return guarded(call, [&] {
    auto& c = need(comm, call, "comm").comm;
    auto& into = need(inbox, call, "inbox");
    into.store.clear();
    into.stats = {};
    std::string problem;
    const domex::Algorithm chosen = domex::capi::parse_algorithm(algorithm, problem);
    static const std::size_t no_messages[1] = {0};
    if (message_count > 0 && ranks == nullptr)
      problem = "ranks is NULL with " + std::to_string(message_count) + " messages";
    else if (message_count > 0 && offsets == nullptr)
      problem = "offsets is NULL with " + std::to_string(message_count) + " messages";
    else if (element_size == 0)
      problem = "element_size is 0";
    const std::size_t* used_offsets = message_count > 0 ? offsets : (offsets ? offsets : no_messages);
    if (problem.empty() && used_offsets[message_count] > 0 && data == nullptr)
      problem = "data is NULL with " + std::to_string(used_offsets[message_count]) + " elements";
    domex::capi::agree_arguments(c, call, problem);
    const domex::detail::SendView send{std::span<const int>(ranks, message_count),
                                       std::span<const std::size_t>(used_offsets, message_count + 1),
                                       static_cast<const std::byte*>(data), element_size,
                                       used_offsets[message_count]};
    into.stats = domex::detail::exchange_bytes(c, send, into.store, {.algorithm = chosen});
  });
}

int domex_inbox_count(const domex_inbox* inbox, size_t* count) {
  return guarded("domex_inbox_count", [&] {
    need(count, "domex_inbox_count", "count") = need(inbox, "domex_inbox_count", "inbox").store.sources.size();
  });
}

int domex_inbox_sources(const domex_inbox* inbox, const int** sources) {
  return guarded("domex_inbox_sources", [&] {
    need(sources, "domex_inbox_sources", "sources") =
        need(inbox, "domex_inbox_sources", "inbox").store.sources.data();
  });
}

int domex_inbox_offsets(const domex_inbox* inbox, const size_t** offsets) {
  return guarded("domex_inbox_offsets", [&] {
    need(offsets, "domex_inbox_offsets", "offsets") =
        need(inbox, "domex_inbox_offsets", "inbox").store.offsets.data();
  });
}

int domex_inbox_data(const domex_inbox* inbox, const void** data, size_t* elements) {
  return guarded("domex_inbox_data", [&] {
    const auto& in = need(inbox, "domex_inbox_data", "inbox");
    need(data, "domex_inbox_data", "data") = in.store.data.data();
    need(elements, "domex_inbox_data", "elements") = in.store.offsets.back();
  });
}

int domex_inbox_algorithm(const domex_inbox* inbox, const char** name) {
  return guarded("domex_inbox_algorithm", [&] {
    // to_string returns views of string literals: NUL-terminated.
    need(name, "domex_inbox_algorithm", "name") =
        domex::to_string(need(inbox, "domex_inbox_algorithm", "inbox").stats.algorithm).data();
  });
}

}  // extern "C"

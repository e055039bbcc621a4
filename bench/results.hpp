// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// JSON results files of the benchmarks: nlohmann::json (valid JSON whatever
// the values: NaN and infinities become null, strings are escaped), with the
// run's provenance in every file.

#include "timing.hpp"

#include <domex/comm/provenance.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace domex::bench {

using Json = nlohmann::ordered_json;

/// domex version, git commit, MPI library, compiler, host, date, ranks.
inline Json provenance_json(const Comm& comm) { return Json(provenance(comm)); }

/// Writes a results file: {"benchmark": name, "provenance": {...}, then
/// `fields`} (through a temporary renamed at the end). Local: call it on one
/// rank, with the provenance every rank computed collectively before.
inline void write_results(const std::string& path, const std::string& benchmark, const Json& provenance,
                          const Json& fields, const char* command) {
  Json document{{"benchmark", benchmark}, {"provenance", provenance}};
  for (const auto& [key, value] : fields.items()) document[key] = value;
  write_file(path, document.dump(1) + "\n", command);
}

}  // namespace domex::bench

// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/simulated.hpp>

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace domex::simulated {
namespace {

struct Phase {
  std::string name;
  double fixed = 0, per_unit = 0;  // seconds, seconds per unit
};

/// What DOMEX_SIM_RECORD / DOMEX_SIM_MODEL ask for, read once per process.
/// Under SMPI only the model is used, and it is read-only once loaded (the
/// ranks may share this object: smpi/privatization:no).
struct Settings {
  bool record = false, charge = false;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file{nullptr, &std::fclose};
  std::string model_path;
  std::vector<Phase> model;
  double factor = 1;
};

[[noreturn]] void give_up(const std::string& message) {
  std::fprintf(stderr, "domex: %s\n", message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::abort();
}

/// sim/fit.py's format: "<fixed seconds> <seconds per unit> <phase name>"
/// per line (the name may hold spaces); '#' starts a comment line.
[[maybe_unused]] std::vector<Phase> read_model(const std::string& path) {
  std::ifstream in(path);
  if (!in) give_up("DOMEX_SIM_MODEL=" + path + ": cannot be read");
  std::vector<Phase> phases;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const char* text = line.c_str();
    char* end = nullptr;
    Phase phase;
    phase.fixed = std::strtod(text, &end);
    const char* after_fixed = end;
    phase.per_unit = std::strtod(after_fixed, &end);
    std::string name(end);
    const auto name_first = name.find_first_not_of(" \t"), name_last = name.find_last_not_of(" \t\r");
    if (after_fixed == text || end == after_fixed || name_first == std::string::npos ||
        !(phase.fixed >= 0 && phase.per_unit >= 0 && phase.fixed + phase.per_unit < HUGE_VAL))
      give_up("DOMEX_SIM_MODEL=" + path + ", line " + std::to_string(number) + " '" + line +
              "': expected '<fixed seconds> <seconds per unit> <phase>', both finite and >= 0");
    phase.name = name.substr(name_first, name_last - name_first + 1);
    phases.push_back(std::move(phase));
  }
  return phases;
}

Settings load() {
  Settings s;
#ifdef DOMEX_SMPI
  if (const char* path = std::getenv("DOMEX_SIM_MODEL"); path && *path) {
    s.model_path = path;
    s.model = read_model(s.model_path);
    s.charge = true;
    if (const char* factor = std::getenv("DOMEX_SIM_MODEL_FACTOR"); factor && *factor) {
      char* end = nullptr;
      s.factor = std::strtod(factor, &end);
      if (*end != '\0' || !(s.factor > 0 && s.factor < HUGE_VAL))
        give_up(std::string("DOMEX_SIM_MODEL_FACTOR=") + factor + ": must be a number > 0");
    }
  }
#else
  if (const char* prefix = std::getenv("DOMEX_SIM_RECORD"); prefix && *prefix) {
    int initialized = 0, rank = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      std::fprintf(stderr, "domex: DOMEX_SIM_RECORD: a Work before MPI_Init (the file is named by the rank)\n");
      std::abort();
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const std::string path = std::string(prefix) + "." + std::to_string(rank);
    s.file.reset(std::fopen(path.c_str(), "a"));
    if (!s.file) give_up("DOMEX_SIM_RECORD: cannot open " + path + " for appending");
    s.record = true;
  }
#endif
  return s;
}

const Settings& settings() {
  static const Settings s = load();
  return s;
}

double now() noexcept {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Work::Work(std::string_view phase) noexcept : phase_(phase) {
  if (settings().record) start_ = now();
}

void Work::done(double units) noexcept {
  const Settings& s = settings();
  if (finished_ || !(s.record || s.charge)) return;
  finished_ = true;
  if (s.record) {
    std::fprintf(s.file.get(), "%.9e\t%.17g\t%.*s\n", now() - start_, units, static_cast<int>(phase_.size()),
                 phase_.data());
    return;
  }
  for (const Phase& phase : s.model)
    if (phase.name == phase_) {
#ifdef DOMEX_SMPI
      const double seconds = s.factor * (phase.fixed + phase.per_unit * units);
      if (seconds > 0) smpi_execute(seconds);
#endif
      return;
    }
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    std::fprintf(stderr, "domex: DOMEX_SIM_MODEL=%s names no phase '%.*s': charged 0 (warned once)\n",
                 s.model_path.c_str(), static_cast<int>(phase_.size()), phase_.data());
}

}  // namespace domex::simulated

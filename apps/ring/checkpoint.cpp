// SPDX-License-Identifier: BSD-3-Clause
#include "checkpoint.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <domex/comm/collective.hpp>
#include <domex/comm/error.hpp>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>

#include "files.hpp"  // fail_app

namespace domex::ring {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void reject(std::string_view what) { apps::fail_app("domex-ring", what); }

/// Bytes of a rank file holding n particles: the count, three Points and an
/// id per particle, the dissipated energy.
std::uint64_t rank_file_bytes(std::uint64_t n) {
  return sizeof(std::uint64_t) + n * (3 * sizeof(Point) + sizeof(std::uint64_t)) + sizeof(double);
}

/// meta.txt's text on every rank (rank 0 reads it; one broadcast).
std::string meta_text(const Comm &comm, const fs::path &folder) {
  std::string text;
  collectively(comm, [&] {
    if (comm.rank() != 0) return;
    const fs::path meta = folder / "meta.txt";
    std::ifstream in(meta, std::ios::binary);
    if (!fs::is_regular_file(meta) || !in)
      reject(fmt::format("--restart {}: not a checkpoint folder ({} is missing)", folder.string(), meta.string()));
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (text.size() > (1u << 20)) reject(fmt::format("--restart {}: more than 1 MiB, not a checkpoint", meta.string()));
  });
  auto size = static_cast<int>(text.size());
  check_mpi(MPI_Bcast(&size, 1, MPI_INT, 0, comm.get()), "MPI_Bcast");
  text.resize(static_cast<std::size_t>(size));
  check_mpi(MPI_Bcast(text.data(), size, MPI_CHAR, 0, comm.get()), "MPI_Bcast");
  return text;
}

}  // namespace

std::vector<std::pair<std::string, double>> physics_of(const Config &c) {
  return {{"--ring-radius", c.ring_radius},
          {"--ring-width", c.ring_width},
          {"--ring-mass", c.ring_mass},
          {"--optical-depth", c.optical_depth},
          {"--dt", c.dt},
          {"--restitution", c.restitution},
          {"--contact-steps", c.contact_steps},
          {"--softening", c.softening},
          {"--self-gravity", c.self_gravity ? 1.0 : 0.0},
          {"--collisions", c.collisions ? 1.0 : 0.0}};
}

CheckpointInfo read_checkpoint_info(const Comm &comm, Config &config, bool particles_given) {
  const fs::path folder = config.restart;
  const std::string meta = (folder / "meta.txt").string();
  // Every rank parses the same text: the same verdict everywhere.
  std::istringstream lines(meta_text(comm, folder));
  CheckpointInfo info;
  std::string line;
  bool has_checksum = false, has_divisions = false, has_particles = false;
  std::getline(lines, line);
  if (line != "domex-ring checkpoint")
    reject(fmt::format("--restart {}: not a domex-ring checkpoint (first line)", meta));
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string key, value;
    words >> key >> value;
    if (key.empty()) continue;
    const auto bad = [&] { reject(fmt::format("--restart {}: unreadable line '{}'", meta, line)); };
    if (key == "step") {
      if (!(std::istringstream(value) >> info.step)) bad();
    } else if (key == "ranks") {
      if (!(std::istringstream(value) >> info.ranks)) bad();
    } else if (key == "particles") {
      has_particles = static_cast<bool>(std::istringstream(value) >> info.particles);
      if (!has_particles) bad();
    } else if (key == "divisions") {
      std::istringstream all(line.substr(line.find(' ') + 1));
      has_divisions = static_cast<bool>(all >> info.divisions[0] >> info.divisions[1] >> info.divisions[2]);
      if (!has_divisions) bad();
    } else if (key == "checksum") {
      char *end = nullptr;
      info.checksum = std::strtoull(value.c_str(), &end, 16);
      has_checksum = !value.empty() && *end == '\0';
      if (!has_checksum) bad();
    } else if (key.starts_with("--")) {
      char *end = nullptr;
      const double number = std::strtod(value.c_str(), &end);  // hex floats: exact
      if (value.empty() || *end != '\0') bad();
      info.physics.emplace_back(key, number);
    }
  }
  if (info.step < 0 || info.ranks < 1 || !has_particles || !has_divisions || !has_checksum)
    reject(
        fmt::format("--restart {}: lacks a step, ranks, particles, "
                    "divisions or checksum line (not a checkpoint "
                    "of this domex-ring)",
                    meta));
  if (particles_given && config.particles != info.particles)
    reject(
        fmt::format("--restart {}: holds {} particles, --particles is {} "
                    "(leave --particles out: the checkpoint "
                    "sets it)",
                    meta, info.particles, config.particles));
  if (info.particles < 1 || info.particles > (std::uint64_t{1} << 40))
    reject(fmt::format("--restart {}: particles {}: not a valid count", meta, info.particles));
  config.particles = info.particles;
  for (const auto &[flag, value] : physics_of(config)) {
    const auto &name = flag;  // (clang 14 cannot capture a structured binding)
    const auto saved = std::find_if(info.physics.begin(), info.physics.end(), [&](auto &p) { return p.first == name; });
    if (saved == info.physics.end())
      reject(fmt::format("--restart {}: has no {} line (not a checkpoint of this domex-ring)", meta, flag));
    if (std::memcmp(&saved->second, &value, sizeof value) != 0)
      reject(
          fmt::format("--restart {}: written with {} {}, this run has {} {}", meta, flag, saved->second, flag, value));
  }
  return info;
}

Checkpoint read_checkpoint(const Comm &comm, const Config &config, const Derived &derived, CheckpointInfo info) {
  const fs::path folder = config.restart;
  if (config.particles != info.particles)
    reject(fmt::format("--restart {}: holds {} particles, this run has {}", (folder / "meta.txt").string(),
                       info.particles, config.particles));
  if (info.step > config.steps)
    reject(
        fmt::format("--restart {}: the checkpoint is at step {}, beyond "
                    "--steps {} (--steps counts from step 0)",
                    folder.string(), info.step, config.steps));
  Checkpoint checkpoint;
  checkpoint.info = std::move(info);
  const CheckpointInfo &meta = checkpoint.info;
  const auto writers = static_cast<std::uint64_t>(meta.ranks), ranks = static_cast<std::uint64_t>(comm.size()),
             me = static_cast<std::uint64_t>(comm.rank());
  const bool same_layout = writers == ranks && meta.divisions == derived.divisions;
  Particles &p = checkpoint.particles;
  collectively(comm, [&] {
    for (std::uint64_t w = writers * me / ranks; w < writers * (me + 1) / ranks; ++w) {
      const fs::path file = folder / fmt::format("rank_{:06}.bin", w);
      std::error_code error;
      const std::uint64_t bytes = fs::file_size(file, error);
      std::ifstream in(file, std::ios::binary);
      if (error || !in)
        reject(
            fmt::format("--restart {}: missing or unreadable (the "
                        "checkpoint was written by {} ranks)",
                        file.string(), writers));
      std::uint64_t n = 0;
      in.read(reinterpret_cast<char *>(&n), sizeof n);
      if (!in || n > meta.particles || bytes != rank_file_bytes(n))
        reject(
            fmt::format("--restart {}: truncated or damaged ({} bytes; {} "
                        "particles take {})",
                        file.string(), bytes, n, rank_file_bytes(n)));
      const std::size_t at = p.size(), count = static_cast<std::size_t>(n);
      p.position.resize(at + count);
      p.velocity.resize(at + count);
      p.acceleration.resize(at + count);
      p.id.resize(at + count);
      const auto read = [&in](auto *data, std::size_t values) {
        in.read(reinterpret_cast<char *>(data), static_cast<std::streamsize>(values * sizeof *data));
      };
      read(p.position.data() + at, count);
      read(p.velocity.data() + at, count);
      read(p.acceleration.data() + at, count);
      read(p.id.data() + at, count);
      double dissipated = 0;
      read(&dissipated, 1);
      if (!in) reject(fmt::format("--restart {}: truncated", file.string()));
      checkpoint.dissipated += dissipated;
      for (std::size_t i = at; i < p.size(); ++i)
        if (p.id[i] >= meta.particles)
          reject(fmt::format("--restart {}: particle id {} of {} particles", file.string(), p.id[i], meta.particles));
    }
    if (!same_layout || comm.rank() != 0) return;
    // The decomposition as it was: a rebalance now could cut elsewhere.
    const fs::path file = folder / "cuts.bin";
    std::error_code error;
    const std::uint64_t bytes = fs::file_size(file, error);
    std::ifstream in(file, std::ios::binary);
    if (error || !in || bytes == 0 || bytes % sizeof(double) != 0 || bytes > (1u << 30))
      reject(fmt::format("--restart {}: missing, empty or damaged", file.string()));
    checkpoint.cuts.resize(bytes / sizeof(double));
    in.read(reinterpret_cast<char *>(checkpoint.cuts.data()), static_cast<std::streamsize>(bytes));
    if (!in) reject(fmt::format("--restart {}: truncated", file.string()));
  });
  if (same_layout) {  // rank 0's cuts to every rank
    auto size = static_cast<int>(checkpoint.cuts.size());
    check_mpi(MPI_Bcast(&size, 1, MPI_INT, 0, comm.get()), "MPI_Bcast");
    checkpoint.cuts.resize(static_cast<std::size_t>(size));
    check_mpi(MPI_Bcast(checkpoint.cuts.data(), size, MPI_DOUBLE, 0, comm.get()), "MPI_Bcast");
  }
  const std::uint64_t count = comm.allreduce(static_cast<std::uint64_t>(p.size()), MPI_SUM);
  if (count != meta.particles)
    reject(fmt::format("--restart {}: the rank files hold {} particles, meta.txt says {}", folder.string(), count,
                       meta.particles));
  const std::uint64_t sum = checksum(comm, p);
  if (sum != meta.checksum)
    reject(
        fmt::format("--restart {}: the rank files' checksum {:016x} is not "
                    "meta.txt's {:016x} (files of another "
                    "checkpoint?)",
                    folder.string(), sum, meta.checksum));
  return checkpoint;
}

}  // namespace domex::ring

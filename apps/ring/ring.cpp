// SPDX-License-Identifier: BSD-3-Clause
#include "ring.hpp"

#include "checkpoint.hpp"
#include "files.hpp"

#include <domex/comm/collective.hpp>
#include <domex/comm/simulated.hpp>
#include <domex/migrate/migrate.hpp>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>
#include <sstream>

namespace domex::ring {
namespace {

/// The integrator's loops run on the tree's threads from this many particles
/// on: below it, waking the team costs more than the loop (2026-11-28, a lent
/// 16-core Xeon: at 2000 and 16000 particles per rank the serial kick ran 2.0
/// and 27 us at one thread; the tree's 16 threads left its arrays in other
/// cores' caches, and the same loop took 19 and 124 us).
constexpr std::size_t threaded_from = 32768;

constexpr double two_pi = 2 * std::numbers::pi;

/// splitmix64: a counter-based generator, so particle `id`'s numbers do not
/// depend on which rank draws them.
std::uint64_t mix(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Uniform in (0, 1) from a 64-bit word.
double uniform(std::uint64_t bits) noexcept { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }

/// A standard normal deviate from two words (Box-Muller).
double normal(std::uint64_t a, std::uint64_t b) noexcept {
  return std::sqrt(-2 * std::log(uniform(a))) * std::cos(two_pi * uniform(b));
}

std::uint64_t bits_of(double value) noexcept { return std::bit_cast<std::uint64_t>(value); }

/// Per-thread sums, a cache line apart.
struct alignas(64) ThreadSums {
  double dissipation = 0, potential = 0, spring = 0;
  std::uint64_t contacts = 0;
};


}  // namespace

InitialRing::InitialRing(const Config& config, const Derived& derived) : config_(config), derived_(derived) {
  const double area = two_pi * config.ring_radius * config.ring_width;
  const double spacing = std::sqrt(area / static_cast<double>(config.particles));
  const auto rows = static_cast<std::size_t>(std::max(1.0, std::round(config.ring_width / spacing)));
  row_width_ = config.ring_width / static_cast<double>(rows);
  double sum = 0;
  for (std::size_t k = 0; k < rows; ++k) sum += radius(k);
  row_start_.assign(1, 0);
  double running = 0;
  for (std::size_t k = 0; k < rows; ++k) {
    running += radius(k);
    row_start_.push_back(k + 1 == rows ? config.particles
                                       : static_cast<std::uint64_t>(std::llround(static_cast<double>(config.particles) *
                                                                                 running / sum)));
  }
}

double InitialRing::radius(std::size_t row) const noexcept {
  return config_.ring_radius - 0.5 * config_.ring_width + (static_cast<double>(row) + 0.5) * row_width_;
}

void InitialRing::state(std::uint64_t id, Point& position, Point& velocity) const {
  std::uint64_t bits = mix(config_.seed * 0x632BE59BD9B4E019ull ^ mix(id));
  const auto next = [&bits] { return bits = mix(bits); };
  const auto row = static_cast<std::size_t>(std::upper_bound(row_start_.begin(), row_start_.end(), id) - row_start_.begin() - 1);
  const double in_row = static_cast<double>(row_start_[row + 1] - row_start_[row]);
  const double r0 = radius(row), contact = 2 * derived_.particle_radius;
  // Jitter inside the lattice cell by less than the gap between neighbours'
  // surfaces: no two particles start in contact.
  const double gap_r = std::max(0.0, row_width_ - contact), gap_phi = std::max(0.0, two_pi * r0 / in_row - contact);
  const double r = r0 + 0.98 * gap_r * (uniform(next()) - 0.5);
  const double phi = two_pi * (static_cast<double>(id - row_start_[row]) + 0.5) / in_row +
                     0.98 * gap_phi * (uniform(next()) - 0.5) / r0;
  const double z = derived_.thickness * normal(next(), next());
  position = {r * std::cos(phi), r * std::sin(phi), z};
  const double speed = 1 / std::sqrt(r);  // Keplerian, central mass 1
  velocity = {-speed * std::sin(phi), speed * std::cos(phi), 0.0};
  for (auto& component : velocity) component += config_.dispersion * normal(next(), next());
}

Ring::Ring(Comm& comm, const Config& config, const Derived& derived, Particles initial)
    : comm_(comm), config_(config), derived_(derived), particles_(std::move(initial)) {
  setup();
  const std::size_t n = particles_.size();
  if (particles_.position.size() != n || particles_.velocity.size() != n)
    apps::fail_app("domex-ring", fmt::format("initial particles: {} ids, {} positions, {} velocities", n,
                                   particles_.position.size(), particles_.velocity.size()));
  particles_.acceleration.assign(n, Point{0, 0, 0});
  start();
}

Ring::Ring(Comm& comm, const Config& config, const Derived& derived)
    : comm_(comm), config_(config), derived_(derived) {
  setup();
  setup_particles();
  start();
}

Ring::Ring(Comm& comm, const Config& config, const Derived& derived, Checkpoint checkpoint)
    : comm_(comm), config_(config), derived_(derived) {
  setup();
  adopt(std::move(checkpoint));
  start();
}

void Ring::adopt(Checkpoint&& checkpoint) {
  steps_ = checkpoint.info.step;
  particles_ = std::move(checkpoint.particles);
  dissipated_ = checkpoint.dissipated;
  restored_cuts_ = std::move(checkpoint.cuts);
}

void Ring::setup() {
  const double reach = derived_.domain_radius;
  MultisectionOptions decomposition{.divisions = derived_.divisions, .geometry = Geometry::cylindrical};
  if (derived_.legacy.bcast_decompose) {
    decomposition.method = CutMethod::root_broadcast;
    decomposition.total_samples = std::max<std::size_t>(4096, config_.particles / 50);
  }
  domains_ = std::make_unique<Multisection>(
      comm_, Box{{0, 0, -derived_.domain_half_height}, {reach, two_pi, derived_.domain_half_height}}, decomposition);
  tree_ = std::make_unique<TreeForce>(
      comm_, TreeOptions{.theta = config_.theta,
                         .leaf_limit = config_.leaf_limit,
                         .group_limit = config_.group_limit,
                         .merge_groups = true,  // a thin ring: see TreeOptions
                         .quadrupole = config_.quadrupole,
                         .let = derived_.legacy.alltoallv_let ? LetMode::alltoallv : let_mode_from_string(config_.let),
                         .reuse = config_.reuse,
                         .softening = derived_.softening,
                         .search_radius = config_.collisions ? derived_.search_radius : 0.0,
                         .sort = derived_.legacy.merge_sort ? SortMethod::merge : SortMethod::sample,
                         .threads = config_.threads,
                         // The ring plane z = 0 at 2/3 of the root's height (binary
                         // 0.1010...): never a cell face, so no group is cut in two halves.
                         .root = {{-reach, -reach, -4 * reach / 3}, {reach, reach, 2 * reach / 3}}});
}

void Ring::setup_particles() {
  Particles& p = particles_;
  if (config_.restart.empty()) {
    const auto ranks = static_cast<std::uint64_t>(comm_.size()), me = static_cast<std::uint64_t>(comm_.rank());
    const std::uint64_t first = config_.particles * me / ranks, last = config_.particles * (me + 1) / ranks;
    const InitialRing initial(config_, derived_);
    for (std::uint64_t id = first; id < last; ++id) {
      Point x, v;
      initial.state(id, x, v);
      p.position.push_back(x);
      p.velocity.push_back(v);
      p.id.push_back(id);
    }
    p.acceleration.assign(p.size(), Point{0, 0, 0});
  } else {
    Config config = config_;
    CheckpointInfo info = read_checkpoint_info(comm_, config, true);
    adopt(read_checkpoint(comm_, config, derived_, std::move(info)));
  }
}

void Ring::start() {
  start_step_ = steps_;
  // The state at a step that rebalances: cuts, owners and the lists are
  // built as the uninterrupted run built them (a restart on the same ranks
  // continues bitwise: the saved cuts, a migration that moves nobody, the
  // same lists; on other ranks the domains are rebalanced and the particles
  // migrate to them).
  if (restored_cuts_.empty()) {
    decompose();
  } else {
    domains_->restore(restored_cuts_);
    restored_cuts_.clear();
  }
  migrate();
  forces(false);
}

Ring::~Ring() = default;

double Ring::time() const noexcept { return static_cast<double>(steps_) * config_.dt; }

void Ring::sync() {
  auto timer = profile_.phase("imbalance");
  comm_.barrier();
}

void Ring::decompose() {
  sync();
  auto timer = profile_.phase("decompose");
  domains_->rebalance(particles_.position);
}

void Ring::migrate() {
  sync();
  auto timer = profile_.phase("exchange particles");
  const MigrationOptions options = derived_.legacy.alltoall_exchange
                                       ? MigrationOptions{.algorithm = Algorithm::alltoall, .neighbour_only = false}
                                       : MigrationOptions{};
  MigrationPlan plan(comm_, *domains_, particles_.position, options);
  domex::migrate(plan, particles_.position, particles_.velocity, particles_.acceleration, particles_.id);
}

void Ring::forces(bool track_dissipation) {
  Particles& p = particles_;
  const std::size_t n = p.size();
  std::vector<Point> acceleration(n);
  const bool tree_needed = config_.self_gravity || config_.collisions;
  if (tree_needed) {
    {
      auto timer = profile_.phase("other");
      if (masses_.size() != n) masses_.assign(n, config_.self_gravity ? derived_.particle_mass : 0.0);
    }
    if (config_.collisions) {
      std::vector<ThreadSums> sums(static_cast<std::size_t>(tree_->threads()));
      const double contact = 2 * derived_.particle_radius, contact2 = contact * contact;
      const double kappa = derived_.kappa, eta = derived_.eta, half_dt = 0.5 * config_.dt;
      // Equal masses: the reduced mass is m / 2, so each side takes half of
      // the relative acceleration kappa delta - eta v_n. v_n is the relative
      // normal velocity at the end of this step, from the half-step one with
      // the damping implicit (the second half kick under this pair's force):
      // v_n = (v_n(half) + dt/2 kappa delta) / (1 + dt/2 eta). An explicit
      // v_n lags by half a step and loses ~10 % of e at T = 32 dt.
      const NearKernel near = [&](const TargetGroup& group, const NearSources& s) {
        Box box{{HUGE_VAL, HUGE_VAL, HUGE_VAL}, {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL}};
        for (const Point& x : group.positions)
          for (int a = 0; a < 3; ++a) box.lo[a] = std::min(box.lo[a], x[a]), box.hi[a] = std::max(box.hi[a], x[a]);
        // Candidates: the sources near the group's box, as fp32 offsets from
        // its centre (a vectorised pre-test per target; the group's own
        // particles are among them, so this is O(targets x candidates)).
        thread_local std::vector<std::uint32_t> partners;
        thread_local std::vector<float> px, py, pz;
        partners.clear();
        px.clear(), py.clear(), pz.clear();
        const double cx = 0.5 * (box.lo[0] + box.hi[0]), cy = 0.5 * (box.lo[1] + box.hi[1]),
                     cz = 0.5 * (box.lo[2] + box.hi[2]);
        for (std::size_t r = 0; r < s.ranges.size(); r += 2)
          for (std::uint32_t k = s.ranges[r]; k < s.ranges[r + 1]; ++k)
            if (squared_distance(box, {s.x[k], s.y[k], s.z[k]}) < contact2) {
              partners.push_back(k);
              px.push_back(static_cast<float>(s.x[k] - cx));
              py.push_back(static_cast<float>(s.y[k] - cy));
              pz.push_back(static_cast<float>(s.z[k] - cz));
            }
        if (partners.size() < 2) return;
        // fp32 rounding of offsets < 0.1 is far below 1 % of a contact distance.
        const auto pretest2 = static_cast<float>(contact2 * 1.0001 + 1e-12);
        const std::size_t count = partners.size();
        ThreadSums& sum = sums[static_cast<std::size_t>(omp_get_thread_num())];
        for (std::size_t i = 0; i < group.positions.size(); ++i) {
          const Point& xi = group.positions[i];
          const auto tx = static_cast<float>(xi[0] - cx), ty = static_cast<float>(xi[1] - cy),
                     tz = static_cast<float>(xi[2] - cz);
          int close = 0;  // itself (distance 0) and its contact partners
#pragma omp simd reduction(+ : close)
          for (std::size_t k = 0; k < count; ++k) {
            const float dx = tx - px[k], dy = ty - py[k], dz = tz - pz[k];
            close += dx * dx + dy * dy + dz * dz < pretest2 ? 1 : 0;
          }
          if (close < 2) continue;
          const Point& vi = group.velocities[i];
          for (std::uint32_t k : partners) {
            const double dx = xi[0] - s.x[k], dy = xi[1] - s.y[k], dz = xi[2] - s.z[k];
            const double d2 = dx * dx + dy * dy + dz * dz;
            if (!(d2 < contact2) || d2 == 0) continue;
            const double d = std::sqrt(d2), overlap = contact - d;
            const double nx = dx / d, ny = dy / d, nz = dz / d;
            const Point& vj = s.velocities[k];
            const double half_step = (vi[0] - vj[0]) * nx + (vi[1] - vj[1]) * ny + (vi[2] - vj[2]) * nz;
            const double vn = (half_step + half_dt * kappa * overlap) / (1 + half_dt * eta);
            const double push = 0.5 * (kappa * overlap - eta * vn);
            group.accelerations[i][0] += push * nx;
            group.accelerations[i][1] += push * ny;
            group.accelerations[i][2] += push * nz;
            sum.dissipation += 0.5 * eta * vn * vn;  // per unit mass of i: half of the pair's m_red eta vn^2
            ++sum.contacts;
          }
        }
      };
      tree_->compute(p.position, masses_, p.velocity, acceleration, near, profile_);  // half-step velocities
      double rate = 0;
      contacts_ = 0;
      for (const ThreadSums& sum : sums) rate += sum.dissipation, contacts_ += sum.contacts;
      if (track_dissipation) dissipated_ += rate * derived_.particle_mass * config_.dt;
    } else {
      tree_->compute(p.position, masses_, acceleration, profile_);
    }
  }
  auto timer = profile_.phase("other");
  simulated::Work work("ring: central force");
  const int team = threads();
#pragma omp parallel for num_threads(team) if (n >= threaded_from) schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    const Point& x = p.position[i];
    const double r2 = x[0] * x[0] + x[1] * x[1] + x[2] * x[2];
    const double inverse_r3 = 1 / (r2 * std::sqrt(r2));
    for (int a = 0; a < 3; ++a) p.acceleration[i][a] = acceleration[i][a] - x[a] * inverse_r3;
  }
  work.done(static_cast<double>(n));
}

void Ring::step() {
  Particles& p = particles_;
  const double dt = config_.dt, half = 0.5 * dt;
  {
    auto timer = profile_.phase("other");
    simulated::Work work("ring: kick and drift");
    const std::size_t n = p.size();
    const int team = threads();
#pragma omp parallel for num_threads(team) if (n >= threaded_from) schedule(static)
    for (std::size_t i = 0; i < n; ++i)
      for (int a = 0; a < 3; ++a) {
        p.velocity[i][a] += half * p.acceleration[i][a];
        p.position[i][a] += dt * p.velocity[i][a];
      }
    work.done(static_cast<double>(p.size()));
  }
  ++steps_;
  if (steps_ % config_.rebalance_every == 0) decompose();
  if (steps_ % config_.reuse == 0) migrate();
  forces(true);
  auto timer = profile_.phase("other");
  simulated::Work work("ring: kick");
  const std::size_t n = p.size();
  const int team = threads();
#pragma omp parallel for num_threads(team) if (n >= threaded_from) schedule(static)
  for (std::size_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a) p.velocity[i][a] += half * p.acceleration[i][a];
  work.done(static_cast<double>(p.size()));
}

Energy Ring::energy() {
  const Particles& p = particles_;
  const double m = derived_.particle_mass;
  double local[5] = {0, 0, 0, 0, dissipated_};
  for (std::size_t i = 0; i < p.size(); ++i) {
    const Point &x = p.position[i], &v = p.velocity[i];
    local[0] += 0.5 * m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    local[1] -= m / std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
  }
  if (config_.self_gravity || config_.collisions) {
    // fp64 potential of the same lists as the forces (cells as monopoles),
    // and the springs' stored energy 1/2 kappa m_red overlap^2 (half per side).
    TreeOptions options = tree_->options();
    options.reuse = 1;
    TreeForce pass(comm_, options);
    const double eps2 = derived_.softening * derived_.softening, contact = 2 * derived_.particle_radius;
    const double gravity = config_.self_gravity ? 1.0 : 0.0, spring = config_.collisions ? 1.0 : 0.0;
    const double kappa = derived_.kappa;
    std::vector<Point> out(p.size());
    Profile scratch;
    const UserKernel kernel = [&](const TargetGroup& group, std::span<const Epj> epj, std::span<const Spj> spj) {
      for (std::size_t i = 0; i < group.positions.size(); ++i) {
        const Point& xi = group.positions[i];
        double phi = 0, stored = 0;
        for (const Epj& source : epj) {
          const double dx = source.position[0] - xi[0], dy = source.position[1] - xi[1],
                       dz = source.position[2] - xi[2];
          const double d2 = dx * dx + dy * dy + dz * dz;
          if (d2 == 0) continue;  // the target itself
          phi -= source.mass / std::sqrt(d2 + eps2);
          if (d2 < contact * contact) {
            const double overlap = contact - std::sqrt(d2);
            stored += 0.5 * 0.5 * kappa * 0.5 * m * overlap * overlap;
          }
        }
        for (const Spj& cell : spj) {
          const double dx = cell.centre[0] - xi[0], dy = cell.centre[1] - xi[1], dz = cell.centre[2] - xi[2];
          phi -= cell.mass / std::sqrt(dx * dx + dy * dy + dz * dz + eps2);
        }
        group.accelerations[i] = {0.5 * m * phi * gravity, stored * spring, 0};
      }
    };
    pass.compute(p.position, std::vector<double>(p.size(), m), p.velocity, out, kernel, scratch);
    for (const Point& e : out) local[2] += e[0], local[3] += e[1];
  }
  comm_.allreduce_in_place(std::span<double>(local), MPI_SUM);
  return {local[0], local[1], local[2], local[3], local[4]};
}

std::uint64_t Ring::checksum() const { return ring::checksum(comm_, particles_); }

std::uint64_t checksum(const Comm& comm, const Particles& p) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    std::uint64_t h = mix(p.id[i]);
    for (int a = 0; a < 3; ++a) h = mix(h ^ bits_of(p.position[i][a])), h = mix(h ^ bits_of(p.velocity[i][a]));
    sum += h;
  }
  return comm.allreduce(sum, MPI_SUM);
}

std::uint64_t Ring::global_count() const {
  return comm_.allreduce(static_cast<std::uint64_t>(particles_.size()), MPI_SUM);
}

void Ring::write_checkpoint(const std::filesystem::path& folder) const {
  namespace fs = std::filesystem;
  const fs::path part = folder.string() + ".part";
  collectively(comm_, [&] {
    if (comm_.rank() != 0) return;
    fs::remove_all(part);
    fs::create_directories(part);
  });
  collectively(comm_, [&] {
    const Particles& p = particles_;
    std::string bytes;
    const std::uint64_t n = p.size();
    const auto add = [&bytes](const void* data, std::size_t size) {
      bytes.append(static_cast<const char*>(data), size);
    };
    add(&n, sizeof n);
    add(p.position.data(), n * sizeof(Point));
    add(p.velocity.data(), n * sizeof(Point));
    add(p.acceleration.data(), n * sizeof(Point));
    add(p.id.data(), n * sizeof(std::uint64_t));
    add(&dissipated_, sizeof dissipated_);
    const auto file = part / fmt::format("rank_{:06}.bin", comm_.rank());
    std::ofstream out(file, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) apps::fail_app("domex-ring", fmt::format("checkpoint: cannot write {}", file.string()));
  });
  const std::uint64_t sum = checksum();  // collective
  collectively(comm_, [&] {
    if (comm_.rank() != 0) return;
    {
      const std::vector<double> cuts = domains_->cuts();
      std::ofstream out(part / "cuts.bin", std::ios::binary);
      out.write(reinterpret_cast<const char*>(cuts.data()), static_cast<std::streamsize>(cuts.size() * sizeof(double)));
      if (!out) apps::fail_app("domex-ring", fmt::format("checkpoint: cannot write {}", (part / "cuts.bin").string()));
    }
    {
      std::ofstream meta(part / "meta.txt");
      // See checkpoint.hpp; doubles in hex: a restart compares them bitwise.
      std::string text = fmt::format(
          "domex-ring checkpoint\nstep {}\nranks {}\nparticles {}\ndivisions {} {} {}\nchecksum {:016x}\n", steps_,
          comm_.size(), config_.particles, derived_.divisions[0], derived_.divisions[1], derived_.divisions[2], sum);
      for (const auto& [flag, value] : physics_of(config_)) text += fmt::format("{} {:a}\n", flag, value);
      meta << text;
      if (!meta) apps::fail_app("domex-ring", fmt::format("checkpoint: cannot write {}", (part / "meta.txt").string()));
    }
    fs::remove_all(folder);
    fs::rename(part, folder);
  });
}

std::vector<double> Ring::surface_density(int width, double extent) const {
  std::vector<double> grid(static_cast<std::size_t>(width) * static_cast<std::size_t>(width), 0.0);
  for (const Point& x : particles_.position) {
    const double u = (x[0] + extent) / (2 * extent), v = (x[1] + extent) / (2 * extent);
    if (!(u >= 0 && u < 1 && v >= 0 && v < 1)) continue;
    const auto column = static_cast<std::size_t>(u * width), row = static_cast<std::size_t>(v * width);
    grid[row * static_cast<std::size_t>(width) + column] += 1;
  }
  std::vector<double> sum(comm_.rank() == 0 ? grid.size() : 0);
  check_mpi(MPI_Reduce(grid.data(), sum.data(), static_cast<int>(grid.size()), MPI_DOUBLE, MPI_SUM, 0, comm_.get()),
            "MPI_Reduce");
  return sum;
}

}  // namespace domex::ring

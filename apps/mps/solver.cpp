// SPDX-License-Identifier: BSD-3-Clause
#include "solver.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <domex/comm/collective.hpp>
#include <domex/exchange/exchange.hpp>
#include <domex/migrate/migrate.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <stdexcept>

#include "files.hpp"

namespace domex::mps {
namespace {

[[noreturn]] void reject(std::string_view what) { apps::fail_app("domex-mps", what); }

/// Koshizuka & Oka's weight w(r) = r_e / r - 1 for 0 < r < r_e.
inline double weight(double r, double re) noexcept { return r < re && r > 0 ? re / r - 1 : 0.0; }

inline double distance2(const Point& a, const Point& b) noexcept {
  const double dx = b[0] - a[0], dy = b[1] - a[1], dz = b[2] - a[2];
  return dx * dx + dy * dy + dz * dz;
}

/// The sum of value[m] x[column[m]] for m in [begin, end), in four partial
/// sums rather than one chain of dependent additions (the Poisson product and
/// the triangular solves: 6-9 % less time per step at 20,000 fluid particles,
/// np 1). A fixed order: the same operands give the same bits.
inline double row_sum(const std::vector<double>& value, const std::vector<std::uint32_t>& column, const double* x,
                      std::size_t begin, std::size_t end) noexcept {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t m = begin;
  for (; m + 4 <= end; m += 4) {
    s0 += value[m] * x[column[m]];
    s1 += value[m + 1] * x[column[m + 1]];
    s2 += value[m + 2] * x[column[m + 2]];
    s3 += value[m + 3] * x[column[m + 3]];
  }
  for (; m < end; ++m) s0 += value[m] * x[column[m]];
  return (s0 + s1) + (s2 + s3);
}

/// One particle of a gathered state or a checkpoint.
struct Record {
  std::int64_t id;
  std::int32_t kind;
  std::int32_t unused;
  Point x, v;
  double p;
};

constexpr char checkpoint_magic[8] = {'D', 'X', 'M', 'P', 'S', 'C', 'K', '1'};
struct CheckpointHeader {
  char magic[8];
  std::int64_t step;
  std::int64_t count;
  double parameters[16];
};
constexpr const char* parameter_names[16] = {"width",       "resolution",   "gravity",         "density",
                                             "viscosity",   "cfl",          "re-density",      "re-laplacian",
                                             "beta",        "relaxation",   "compressibility", "collision-distance",
                                             "restitution", "cg-tolerance", "dimension",       "layers"};

std::array<double, 16> parameters_of(const Config& c) {
  return {c.width,
          static_cast<double>(c.resolution),
          c.gravity,
          c.density,
          c.viscosity,
          c.cfl,
          c.re_density,
          c.re_laplacian,
          c.beta,
          c.relaxation,
          c.compressibility,
          c.collision_distance,
          c.restitution,
          c.cg_tolerance,
          static_cast<double>(c.dimension),
          static_cast<double>(c.layers)};
}

/// Every rank's records on every rank, sorted by id.
std::vector<Record> sorted_by_id(const Comm& comm, const std::vector<Record>& mine) {
  auto all = comm.allgatherv(std::span<const Record>(mine));
  std::sort(all.begin(), all.end(), [](const Record& a, const Record& b) { return a.id < b.id; });
  return all;
}

}  // namespace

struct Solver::Window {
  MPI_Win win = MPI_WIN_NULL;
  std::vector<std::uint64_t> slots;  ///< exposed by MPI_Win_create where it is used (see the constructor)
  std::uint64_t* base = nullptr;
  ~Window() {
    if (win != MPI_WIN_NULL) MPI_Win_free(&win);
  }
};

Solver::Solver(Comm& comm, const Config& config) : comm_(comm), config_(config) {
  const long res = config.resolution;
  l0_ = config.width / static_cast<double>(res);
  dt_ = config.cfl * l0_ / std::sqrt(2 * config.gravity * 2 * config.width);
  re_n_ = config.re_density * l0_;
  re_lap_ = config.re_laplacian * l0_;
  // n0 and lambda of a full square lattice (Koshizuka & Oka's definitions).
  {
    n0_ = n0_lap_ = 0;
    double r2w = 0;
    const int reach = static_cast<int>(std::ceil(config.re_laplacian)) + 1;
    const int reach_z = config.dimension == 3 ? reach : 0;
    for (int k = -reach_z; k <= reach_z; ++k)
      for (int j = -reach; j <= reach; ++j)
        for (int i = -reach; i <= reach; ++i) {
          if (i == 0 && j == 0 && k == 0) continue;
          const double r = std::sqrt(static_cast<double>(i * i + j * j + k * k)) * l0_;
          n0_ += weight(r, re_n_);
          const double w = weight(r, re_lap_);
          n0_lap_ += w;
          r2w += r * r * w;
        }
    lambda_ = r2w / n0_lap_;
  }
  // The tank of Koshizuka's sample code, on the lattice x = i l0, y = j l0:
  // two wall layers (i = -1, 0; j = -1, 0; i = nt + 1, nt + 2) and two dummy
  // layers beyond them; water at i = 1..res, j = 1..2 res (width a, height 2a,
  // its front at x = a); the tank 4a long, its walls 2.5a high.
  // 3-D: the same section repeated over `layers` lattice planes z = k l0,
  // periodic in z (a slab of the 2-D flow).
  const long nt = 4 * res, top = 2 * res + res / 2;
  const long layers = config.dimension == 3 ? config.layers : 1;
  const int ranks = comm_.size(), rank = comm_.rank();
  std::int64_t next_id = 0;
  for (long k = 0; k < layers; ++k)
    for (long j = -3; j <= top; ++j)
      for (long i = -3; i <= nt + 4; ++i) {
        int kind = -1;
        if (i >= 1 && i <= res && j >= 1 && j <= 2 * res)
          kind = fluid;
        else if (i >= 1 && i <= nt && j >= 1)
          kind = -1;
        else if (i >= -1 && i <= nt + 2 && j >= -1)
          kind = wall;
        else
          kind = dummy;
        if (kind < 0) continue;
        const std::int64_t id = next_id++;
        if (id % ranks != rank) continue;  // spread; the first step migrates them to their owners
        x_.push_back({static_cast<double>(i) * l0_, static_cast<double>(j) * l0_, static_cast<double>(k) * l0_});
        v_.push_back({0, 0, 0});
        id_.push_back(id);
        kind_.push_back(kind);
      }
  owned_ = x_.size();
  // The box the decomposition cuts: the tank, and room above it for splashes.
  box_.lo = {-3.5 * l0_, -3.5 * l0_, config.dimension == 3 ? -0.5 * l0_ : -l0_};
  box_.hi = {(static_cast<double>(nt) + 4.5) * l0_, 6 * config.width,
             config.dimension == 3 ? (static_cast<double>(layers) - 0.5) * l0_ : l0_};
  const bool periodic_z = config.dimension == 3;
  list_.emplace(NeighborOptions{.cutoff = re_lap_, .skin = config.skin * l0_, .kind = NeighborKind::full});
  if (config.decomposition == "bucket") {
    // Buckets at least r_e (of the Laplacian) wide; in 2-D one layer in z.
    std::array<int, 3> buckets{1, 1, 1};
    for (int axis = 0; axis < config.dimension; ++axis)
      buckets[axis] = std::max(1, static_cast<int>(std::floor(box_.extent(axis) / re_lap_)));
    buckets_ = std::make_unique<BucketDecomposition>(
        comm_, box_, BucketOptions{.buckets = buckets, .periodic = {false, false, periodic_z}});
  } else {
    multisection_ =
        std::make_unique<Multisection>(comm_, box_,
                                       MultisectionOptions{.divisions = {0, 0, config.dimension == 3 ? 0 : 1},
                                                           .periodic = {false, false, periodic_z}});
  }
  if (config.count_exchange == "put") {
    // As domex's own windows (src/exchange/exchange.cpp): MPI_Win_allocate
    // under Open MPI, MPI_Win_create over our own memory elsewhere, because
    // MPICH 4.0.x misplaces Puts into allocated windows (docs/mpi_defects.md:
    // the counts differed from the ghost plan's at np 3), while Open MPI
    // 4.1's osc/rdma refused MPI_Win_create here (MPI_ERR_WIN at np 2).
    window_ = std::make_unique<Window>();
    const auto bytes = static_cast<MPI_Aint>(sizeof(std::uint64_t)) * ranks;
#if defined(OPEN_MPI)
    check_mpi(MPI_Win_allocate(bytes, sizeof(std::uint64_t), MPI_INFO_NULL, comm_.get(), &window_->base, &window_->win),
              "MPI_Win_allocate");
#else
    window_->slots.assign(static_cast<std::size_t>(ranks), 0);
    window_->base = window_->slots.data();
    check_mpi(MPI_Win_create(window_->base, bytes, sizeof(std::uint64_t), MPI_INFO_NULL, comm_.get(), &window_->win),
              "MPI_Win_create");
#endif
  }
}

Solver::~Solver() = default;

double Solver::dimensionless_time() const noexcept { return time() * std::sqrt(2 * config_.gravity / config_.width); }

long Solver::total_steps() const noexcept {
  if (config_.steps > 0) return config_.steps;
  const double per_step = dt_ * std::sqrt(2 * config_.gravity / config_.width);
  return static_cast<long>(std::ceil(config_.end_time / per_step - 1e-9));
}

template <class... Fields>
void Solver::update(Fields&&... fields) {
  ghosts_->update(std::forward<Fields>(fields)...);
}

void Solver::rebalance_and_migrate() {
  x_.resize(owned_);
  v_.resize(owned_);
  id_.resize(owned_);
  kind_.resize(owned_);
  {
    auto timer = profile_.phase("rebalance");
    // Cost per particle: fluid and wall particles carry the work; dummies only complete densities.
    std::vector<double> cost(owned_);
    for (std::size_t i = 0; i < owned_; ++i) cost[i] = kind_[i] == dummy ? 0.25 : 1.0;
    if (buckets_)
      buckets_->rebalance(x_, cost);
    else
      multisection_->rebalance(x_, cost);
  }
  auto timer = profile_.phase("migration");
  std::optional<MigrationPlan> plan;
  if (buckets_)
    plan.emplace(comm_, *buckets_, std::span<const Point>(x_));
  else
    plan.emplace(comm_, *multisection_, std::span<const Point>(x_));
  previous_.resize(owned_, 0.0);
  // Periodic z (3-D): positions wrapped back into the box as they move
  // (ghost images arrive shifted by the period).
  migrate(*plan, wrapped(x_), v_, id_, kind_, previous_);
  owned_ = x_.size();
  // Id order: every later sum runs in an order that does not depend on where particles came from.
  std::vector<std::size_t> order(owned_);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return id_[a] < id_[b]; });
  const auto permute = [&](auto& values) {
    auto copy = values;
    for (std::size_t k = 0; k < owned_; ++k) values[k] = copy[order[k]];
  };
  permute(x_);
  permute(v_);
  permute(id_);
  permute(kind_);
  permute(previous_);
}

void Solver::build_ghosts_and_neighbours() {
  {
    auto timer = profile_.phase("ghost build");
    const std::span<const Point> owned(x_.data(), owned_);
    if (!ghosts_) {
      const GhostOptions options{.cutoff = re_lap_ + config_.skin * l0_};
      if (buckets_)
        ghosts_.emplace(comm_, *buckets_, owned, options);
      else
        ghosts_.emplace(comm_, *multisection_, owned, options);
    } else if (buckets_) {
      ghosts_->rebuild(*buckets_, owned);
    } else {
      ghosts_->rebuild(*multisection_, owned);
    }
    // Owned entries, then ghosts; x's ghost entries get the build's (shifted)
    // positions with no message.
    ghosts_->resize_fields(shifted(x_), v_, id_, kind_);
  }
  exchange_counts();
  {
    auto timer = profile_.phase("ghost update");
    update(v_, id_, kind_);
  }
  {
    auto timer = profile_.phase("neighbour search");
    list_->build(*ghosts_, x_);
  }
  auto timer = profile_.phase("neighbour order");
  order_neighbours_by_id();
}

void Solver::order_neighbours_by_id() {
  // The library's lists hold each owned particle's neighbours in bin order,
  // owned entries first, which depends on the rank's bounding box. Every sum
  // of the step runs over them in id order instead, whatever the ranks (an
  // entry and a periodic image of it, 3-D, tie on the id: then by position,
  // z, y, x, a total order the same at every np; the periodic depth of at
  // least 2 (r_e + skin) keeps both out of one list). Owned entries are in
  // id order already (rebalance_and_migrate), and a full list is symmetric
  // between owned particles (the same squared distance both ways), so the
  // owned part of every list comes in id order from one transposition,
  // O(pairs): walking the owned particles i in id order, i is appended to
  // the lists of its owned neighbours. The ghost parts (boundary particles
  // only) are sorted by the ghosts' rank in id order and merged in.
  const auto offsets = list_->offsets();
  const auto ghost_begin = list_->ghost_begin();
  const auto neighbors = list_->neighbors();
  const std::size_t entries = x_.size(), pairs = neighbors.size();
  Reorder& r = reorder_;
  const auto before = [&](std::uint32_t a, std::uint32_t b) {
    if (id_[a] != id_[b]) return id_[a] < id_[b];
    const Point &pa = x_[a], &pb = x_[b];
    return pa[2] != pb[2] ? pa[2] < pb[2] : pa[1] != pb[1] ? pa[1] < pb[1] : pa[0] < pb[0];
  };
  // The ghosts in id order, and each ghost's place in it.
  r.ghosts.resize(entries - owned_);
  std::iota(r.ghosts.begin(), r.ghosts.end(), static_cast<std::uint32_t>(owned_));
  std::sort(r.ghosts.begin(), r.ghosts.end(), before);
  r.ghost_rank.resize(entries - owned_);
  for (std::size_t k = 0; k < r.ghosts.size(); ++k) r.ghost_rank[r.ghosts[k] - owned_] = static_cast<std::uint32_t>(k);
  // The owned parts, transposed: owned[owned_first[j] ..) the owned neighbours of j in id order.
  r.owned_first.resize(owned_ + 1);
  r.owned_first[0] = 0;
  for (std::size_t i = 0; i < owned_; ++i) r.owned_first[i + 1] = r.owned_first[i] + (ghost_begin[i] - offsets[i]);
  r.fill.assign(r.owned_first.begin(), r.owned_first.end() - 1);
  r.owned.resize(r.owned_first[owned_]);
  for (std::size_t i = 0; i < owned_; ++i)
    for (std::size_t m = offsets[i]; m < ghost_begin[i]; ++m) {
      const std::uint32_t j = neighbors[m];
      if (r.fill[j] == r.owned_first[j + 1])  // a bug, on this rank only: not an Error (run_app would return
        // while the other ranks wait in the next collective); main_of prints it and aborts the job
        throw std::logic_error(
            fmt::format("internal: owned particle {} lists {} but not the other way round", id_[i], id_[j]));
      r.owned[r.fill[j]++] = static_cast<std::uint32_t>(i);
    }
  // Each list: its owned part merged with its ghost part, both in id order.
  first_.assign(offsets.begin(), offsets.end());
  neighbour_.resize(pairs);
  for (std::size_t i = 0; i < owned_; ++i) {
    std::uint32_t* out = neighbour_.data() + offsets[i];
    const std::uint32_t* o = r.owned.data() + r.owned_first[i];
    const std::uint32_t* o_end = r.owned.data() + r.owned_first[i + 1];
    if (ghost_begin[i] == offsets[i + 1]) {
      std::copy(o, o_end, out);
      continue;
    }
    r.ranks.clear();
    for (std::size_t m = ghost_begin[i]; m < offsets[i + 1]; ++m) r.ranks.push_back(r.ghost_rank[neighbors[m] - owned_]);
    std::sort(r.ranks.begin(), r.ranks.end());
    auto g = r.ranks.begin();
    while (o != o_end || g != r.ranks.end()) {
      if (g == r.ranks.end() || (o != o_end && before(*o, r.ghosts[*g])))
        *out++ = *o++;
      else
        *out++ = r.ghosts[*g++];
    }
  }
}

void Solver::exchange_counts() {
  // Per-destination counts of ghost copies (the particles other ranks need
  // for their neighbour search), exchanged as the study's three codes do.
  const auto destinations = ghosts_->destinations();
  const auto offsets = ghosts_->destination_offsets();
  const int ranks = comm_.size(), rank = comm_.rank();
  std::vector<int> to;
  std::vector<std::uint64_t> counts;
  for (std::size_t m = 0; m < destinations.size(); ++m)
    if (destinations[m] != rank) {
      to.push_back(destinations[m]);
      counts.push_back(offsets[m + 1] - offsets[m]);
    }
  std::vector<std::uint64_t> received(static_cast<std::size_t>(ranks), 0);
  comm_.barrier();
  const double start = MPI_Wtime();
  if (config_.count_exchange == "alltoall") {
    std::vector<std::uint64_t> send(static_cast<std::size_t>(ranks), 0);
    for (std::size_t m = 0; m < to.size(); ++m) send[static_cast<std::size_t>(to[m])] = counts[m];
    check_mpi(MPI_Alltoall(send.data(), 1, MPI_UINT64_T, received.data(), 1, MPI_UINT64_T, comm_.get()),
              "MPI_Alltoall");
  } else if (config_.count_exchange == "put") {
    std::fill(window_->base, window_->base + ranks, std::uint64_t{0});
    check_mpi(MPI_Win_fence(0, window_->win), "MPI_Win_fence");
    for (std::size_t m = 0; m < to.size(); ++m)
      check_mpi(MPI_Put(&counts[m], 1, MPI_UINT64_T, to[m], rank, 1, MPI_UINT64_T, window_->win), "MPI_Put");
    check_mpi(MPI_Win_fence(0, window_->win), "MPI_Win_fence");
    std::copy(window_->base, window_->base + ranks, received.begin());
  } else {
    Outbox<std::uint64_t> outbox;
    for (std::size_t m = 0; m < to.size(); ++m) outbox.add(to[m], counts[m]);
    const auto inbox = exchange(comm_, outbox);
    for (const auto [source, items] : inbox) received[static_cast<std::size_t>(source)] = items[0];
  }
  const double seconds = MPI_Wtime() - start;
  profile_.add("count exchange", seconds);
  count_samples_.push_back({seconds, static_cast<int>(to.size())});
  // What arrived must be what the ghost plan receives from each rank.
  const auto sources = ghosts_->sources();
  const auto source_offsets = ghosts_->source_offsets();
  std::vector<std::uint64_t> expected(static_cast<std::size_t>(ranks), 0);
  for (std::size_t s = 0; s < sources.size(); ++s)
    if (sources[s] != rank) expected[static_cast<std::size_t>(sources[s])] = source_offsets[s + 1] - source_offsets[s];
  agree(comm_, "count exchange",
        received == expected ? std::string() : std::string("the counts received differ from the ghost plan's"));
}

std::vector<int> Solver::count_partners() const {
  std::vector<int> partners;
  if (ghosts_)
    for (int rank : ghosts_->destinations())  // ascending
      if (rank != comm_.rank()) partners.push_back(rank);
  return partners;
}

void Solver::explicit_step() {
  auto timer = profile_.phase("explicit");
  // Gravity + viscosity (Laplacian model: 2d / (n0 lambda) sum (v_j - v_i) w).
  const double dimension = config_.dimension, laplacian = 2 * dimension / (n0_lap_ * lambda_);
  const double re2 = re_lap_ * re_lap_;
  std::vector<Point> acceleration(owned_, Point{0, 0, 0});
  for (std::size_t i = 0; i < owned_; ++i) {
    if (kind_[i] != fluid) continue;
    Point sum{0, 0, 0};
    for (std::size_t m = first_[i]; m < first_[i + 1]; ++m) {
      const std::uint32_t j = neighbour_[m];
      const double r2 = distance2(x_[i], x_[j]);
      if (r2 >= re2) continue;
      const double w = weight(std::sqrt(r2), re_lap_);
      for (int a = 0; a < 3; ++a) sum[a] += (v_[j][a] - v_[i][a]) * w;
    }
    for (int a = 0; a < 3; ++a) acceleration[i][a] = config_.viscosity * laplacian * sum[a];
    acceleration[i][1] -= config_.gravity;
  }
  for (std::size_t i = 0; i < owned_; ++i) {
    if (kind_[i] != fluid) continue;
    for (int a = 0; a < 3; ++a) {
      v_[i][a] += dt_ * acceleration[i][a];
      x_[i][a] += dt_ * v_[i][a];
    }
  }
}

void Solver::collide() {
  auto timer = profile_.phase("collision");
  // Koshizuka's sample code: approaching pairs closer than the collision
  // distance exchange momentum as particles of equal mass with restitution e.
  const double reach = config_.collision_distance * l0_, reach2 = reach * reach;
  const double e = config_.restitution;
  std::vector<Point> after(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(owned_));
  for (std::size_t i = 0; i < owned_; ++i) {
    if (kind_[i] != fluid) continue;
    for (std::size_t m = first_[i]; m < first_[i + 1]; ++m) {
      const std::uint32_t j = neighbour_[m];
      const double r2 = distance2(x_[i], x_[j]);
      if (r2 >= reach2) continue;
      const double r = std::sqrt(r2);
      Point d{};
      for (int a = 0; a < 3; ++a) d[a] = x_[j][a] - x_[i][a];
      double approach = 0;
      for (int a = 0; a < 3; ++a) approach += (v_[i][a] - v_[j][a]) * d[a];
      approach /= r;
      if (approach <= 0) continue;
      // mi = mj: (1 + e) mi mj / (mi + mj) / mi = (1 + e) / 2.
      const double impulse = (1 + e) / 2 * approach;
      for (int a = 0; a < 3; ++a) after[i][a] -= impulse * d[a] / r;
    }
  }
  for (std::size_t i = 0; i < owned_; ++i) {
    if (kind_[i] != fluid) continue;
    for (int a = 0; a < 3; ++a) {
      x_[i][a] += (after[i][a] - v_[i][a]) * dt_;
      v_[i][a] = after[i][a];
    }
  }
}

void Solver::solve_pressure() {
  const std::size_t size = x_.size();
  n_.assign(owned_, 0.0);
  inner_.assign(size, 0);
  {
    auto timer = profile_.phase("pressure setup");
    const double re2 = re_n_ * re_n_;
    for (std::size_t i = 0; i < owned_; ++i) {
      if (kind_[i] == dummy) continue;
      double n = 0;
      for (std::size_t m = first_[i]; m < first_[i + 1]; ++m) {
        const std::uint32_t j = neighbour_[m];
        const double r2 = distance2(x_[i], x_[j]);
        if (r2 < re2) n += weight(std::sqrt(r2), re_n_);
      }
      n_[i] = n;
      inner_[i] = n >= config_.beta * n0_ ? 1 : 0;  // below: free surface, p = 0
    }
  }
  {
    auto timer = profile_.phase("ghost update");
    update(inner_);
  }
  {
    auto timer = profile_.phase("Poisson matrix");
    assemble_poisson();
  }
  {
    auto timer = profile_.phase("Poisson CG");
    last_cg_iterations_ = conjugate_gradients();
  }
  total_cg_iterations_ += last_cg_iterations_;
  ++solved_steps_;
  // CG's solution is the next step's first guess (it travels with the
  // particle); the pressure that moves particles has its negative part clamped.
  previous_.assign(owned_, 0.0);
  p_.assign(size, 0.0);
  for (std::size_t k = 0; k < poisson_.row.size(); ++k) {
    previous_[poisson_.row[k]] = poisson_.solution[k];
    p_[poisson_.row[k]] = std::max(poisson_.solution[k], 0.0);
  }
  auto timer = profile_.phase("ghost update");
  update(p_);
}

void Solver::assemble_poisson() {
  // The matrix -lap / rho + C / dt^2 over the inner particles (Laplacian
  // model, 2d / (n0 lambda) w / rho per pair; surface neighbours have p = 0
  // and add to the diagonal only; dummies are not in it), a row per inner
  // owned particle in owned (id) order. A row's entries: the rows before it,
  // then the rows after it (both ascending, row numbers), then its ghost
  // neighbours (id order, owned + ghost entries).
  PoissonMatrix& a = poisson_;
  const double dimension = config_.dimension, coefficient = 2 * dimension / (n0_lap_ * lambda_) / config_.density;
  const double re2 = re_lap_ * re_lap_;
  std::vector<std::uint32_t> row_of(owned_, 0);
  a.row.clear();
  for (std::size_t i = 0; i < owned_; ++i)
    if (inner_[i]) {
      row_of[i] = static_cast<std::uint32_t>(a.row.size());
      a.row.push_back(static_cast<std::uint32_t>(i));
    }
  const std::size_t rows = a.row.size();
  a.first.assign(1, 0);
  a.upper.clear();
  a.ghost.clear();
  a.column.clear();
  a.value.clear();
  a.diagonal.clear();
  a.rhs.clear();
  std::vector<std::uint32_t> upper_column, ghost_column;
  std::vector<double> upper_value, ghost_value;
  const double source = config_.relaxation / (dt_ * dt_);
  for (const std::uint32_t i : a.row) {
    upper_column.clear();
    upper_value.clear();
    ghost_column.clear();
    ghost_value.clear();
    double sum = 0;
    for (std::size_t m = first_[i]; m < first_[i + 1]; ++m) {
      const std::uint32_t j = neighbour_[m];
      if (kind_[j] == dummy) continue;
      const double r2 = distance2(x_[i], x_[j]);
      if (r2 >= re2) continue;
      const double c = coefficient * weight(std::sqrt(r2), re_lap_);
      sum += c;
      if (!inner_[j]) continue;
      if (j >= owned_) {
        ghost_column.push_back(j);
        ghost_value.push_back(-c);
      } else if (j > i) {
        upper_column.push_back(row_of[j]);
        upper_value.push_back(-c);
      } else {
        a.column.push_back(row_of[j]);
        a.value.push_back(-c);
      }
    }
    a.diagonal.push_back(sum + config_.compressibility / (dt_ * dt_));
    a.rhs.push_back(source * (n_[i] - n0_) / n0_);
    a.upper.push_back(a.column.size());
    a.column.insert(a.column.end(), upper_column.begin(), upper_column.end());
    a.value.insert(a.value.end(), upper_value.begin(), upper_value.end());
    a.ghost.push_back(a.column.size());
    a.column.insert(a.column.end(), ghost_column.begin(), ghost_column.end());
    a.value.insert(a.value.end(), ghost_value.begin(), ghost_value.end());
    a.first.push_back(a.column.size());
  }
  // The preconditioner's diagonal D (stored inverted).
  a.inverse.resize(rows);
  if (config_.cg_preconditioner == "jacobi") {
    for (std::size_t k = 0; k < rows; ++k) a.inverse[k] = 1 / a.diagonal[k];
    return;
  }
  // MIC(0) in the D-ILU form M = (D + L) D^-1 (D + U), L and U the owned
  // block's own off-diagonal entries (block Jacobi across ranks: M stays
  // symmetric positive definite, so CG holds). Modified incomplete Cholesky
  // (Gustafsson 1978): D chosen so that M's row sums are the block's, relaxed
  // by omega; the couplings to ghost rows, which the block drops, are lumped
  // onto the diagonal with a weight. Both measured (iterations over 20 steps
  // at 5,000 and 20,000 fluid particles, np 1, 2, 4, and a whole a/20 run):
  // omega 1 has the fewest iterations at np 1 but twice as many at np 2;
  // omega 0.99 with 0.7 of the ghost couplings is within 10 % of the best
  // at every np.
  constexpr double omega = 0.99, ghost_lumping = 0.7;
  std::vector<double> upper_sum(rows, 0.0);
  for (std::size_t k = 0; k < rows; ++k) {
    double d = a.diagonal[k];
    for (std::size_t m = a.ghost[k]; m < a.first[k + 1]; ++m) d += ghost_lumping * a.value[m];
    for (std::size_t m = a.first[k]; m < a.upper[k]; ++m) {
      const std::uint32_t l = a.column[m];
      d -= a.value[m] * (omega * upper_sum[l] + (1 - omega) * a.value[m]) * a.inverse[l];
    }
    for (std::size_t m = a.upper[k]; m < a.ghost[k]; ++m) upper_sum[k] += a.value[m];
    // An M-matrix keeps D > 0 in exact MIC; guard the relaxed, lumped one.
    a.inverse[k] = 1 / (d > 1e-2 * a.diagonal[k] ? d : a.diagonal[k]);
  }
}

long Solver::conjugate_gradients() {
  // Preconditioned CG (Jacobi or MIC(0), see assemble_poisson()) on the rows
  // of this rank; per iteration one ghost update of the search direction
  // (begun before the product's own-row part, finished before its ghost
  // part) and two allreduces (d.q; then r.z with r.r).
  PoissonMatrix& a = poisson_;
  const std::size_t rows = a.row.size();
  const bool jacobi = config_.cg_preconditioner == "jacobi";
  // Vectors by row; the search direction also as an owned + ghost field.
  std::vector<double>& p = a.solution;
  p.assign(rows, 0.0);
  bool started = false;
  for (std::size_t k = 0; k < rows; ++k) {
    p[k] = previous_[a.row[k]];
    started = started || p[k] != 0;
  }
  std::vector<double> r(a.rhs), z(rows), q(rows), d(rows), y(rows), field(x_.size(), 0.0);
  const auto multiply = [&](const std::vector<double>& v, std::vector<double>& out) {  // out = A v
    for (std::size_t k = 0; k < rows; ++k) field[a.row[k]] = v[k];
    ghosts_->begin(field);
    for (std::size_t k = 0; k < rows; ++k)
      out[k] = a.diagonal[k] * v[k] + row_sum(a.value, a.column, v.data(), a.first[k], a.ghost[k]);
    ghosts_->finish();
    for (std::size_t k = 0; k < rows; ++k)
      if (a.ghost[k] < a.first[k + 1]) out[k] += row_sum(a.value, a.column, field.data(), a.ghost[k], a.first[k + 1]);
  };
  const auto precondition = [&] {  // z = M^-1 r
    if (jacobi) {
      for (std::size_t k = 0; k < rows; ++k) z[k] = r[k] * a.inverse[k];
      return;
    }
    for (std::size_t k = 0; k < rows; ++k)  // (D + L) y = r
      y[k] = (r[k] - row_sum(a.value, a.column, y.data(), a.first[k], a.upper[k])) * a.inverse[k];
    for (std::size_t k = rows; k-- > 0;)  // (D + U) z = D y
      z[k] = y[k] - row_sum(a.value, a.column, z.data(), a.upper[k], a.ghost[k]) * a.inverse[k];
  };
  // Warm start (the last step's solution) where any rank has one: r = b - A p.
  if (comm_.allreduce(started ? 1 : 0, MPI_MAX) != 0) {
    multiply(p, q);
    for (std::size_t k = 0; k < rows; ++k) r[k] -= q[k];
  }
  precondition();
  std::array<double, 2> sums{0, 0};  // r.z, b.b
  for (std::size_t k = 0; k < rows; ++k) {
    sums[0] += r[k] * z[k];
    sums[1] += a.rhs[k] * a.rhs[k];
  }
  comm_.allreduce_in_place(std::span<double>(sums), MPI_SUM);
  double rz = sums[0];
  const double bb = sums[1], limit2 = config_.cg_tolerance * config_.cg_tolerance * bb;
  last_cg_residual_ = 0;
  if (bb == 0) {
    std::fill(p.begin(), p.end(), 0.0);  // b = 0: p = 0, whatever the guess
    return 0;
  }
  d = z;
  for (long iteration = 1; iteration <= config_.cg_max_iterations; ++iteration) {
    multiply(d, q);
    double dq = 0;
    for (std::size_t k = 0; k < rows; ++k) dq += d[k] * q[k];
    dq = comm_.allreduce(dq, MPI_SUM);
    const double alpha = rz / dq;
    for (std::size_t k = 0; k < rows; ++k) {
      p[k] += alpha * d[k];
      r[k] -= alpha * q[k];
    }
    precondition();
    sums = {0, 0};
    for (std::size_t k = 0; k < rows; ++k) {
      sums[0] += r[k] * z[k];
      sums[1] += r[k] * r[k];
    }
    comm_.allreduce_in_place(std::span<double>(sums), MPI_SUM);
    last_cg_residual_ = std::sqrt(sums[1] / bb);
    if (sums[1] <= limit2) return iteration;
    const double beta = sums[0] / rz;
    rz = sums[0];
    for (std::size_t k = 0; k < rows; ++k) d[k] = z[k] + beta * d[k];
  }
  reject(fmt::format("step {}: CG did not reach --cg-tolerance {} in --cg-max-iterations {} (relative residual {:.3g})",
                     step_ + 1, config_.cg_tolerance, config_.cg_max_iterations, last_cg_residual_));
}

void Solver::correct() {
  auto timer = profile_.phase("pressure gradient");
  // Gradient model with the minimum neighbour pressure (Koshizuka & Oka):
  // d / n0 sum (p_j - p_min,i) (x_j - x_i) / r^2 w, always repulsive.
  const double gradient = config_.dimension / n0_, re2 = re_n_ * re_n_;
  std::vector<Point> acceleration(owned_, Point{0, 0, 0});
  for (std::size_t i = 0; i < owned_; ++i) {
    if (kind_[i] != fluid) continue;
    double lowest = p_[i];
    for (std::size_t m = first_[i]; m < first_[i + 1]; ++m) {
      const std::uint32_t j = neighbour_[m];
      if (kind_[j] != dummy && distance2(x_[i], x_[j]) < re2) lowest = std::min(lowest, p_[j]);
    }
    Point sum{0, 0, 0};
    for (std::size_t m = first_[i]; m < first_[i + 1]; ++m) {
      const std::uint32_t j = neighbour_[m];
      if (kind_[j] == dummy) continue;
      const double r2 = distance2(x_[i], x_[j]);
      if (r2 >= re2) continue;
      const double factor = (p_[j] - lowest) * weight(std::sqrt(r2), re_n_) / r2;
      for (int a = 0; a < 3; ++a) sum[a] += (x_[j][a] - x_[i][a]) * factor;
    }
    for (int a = 0; a < 3; ++a) acceleration[i][a] = -gradient * sum[a] / config_.density;
  }
  for (std::size_t i = 0; i < owned_; ++i) {
    if (kind_[i] != fluid) continue;
    for (int a = 0; a < 3; ++a) {
      v_[i][a] += dt_ * acceleration[i][a];
      x_[i][a] += dt_ * dt_ * acceleration[i][a];
    }
  }
}

void Solver::step() {
  rebalance_and_migrate();
  build_ghosts_and_neighbours();
  explicit_step();
  {
    auto timer = profile_.phase("ghost update");
    update(shifted(x_), v_);
  }
  collide();
  {
    auto timer = profile_.phase("ghost update");
    update(shifted(x_), v_);
  }
  solve_pressure();
  correct();
  ++step_;
  // The neighbour lists hold every pair within r_e as long as no particle
  // moved more than half the skin since the build.
  double moved = list_->max_displacement2(std::span<const Point>(x_.data(), owned_));
  moved = std::sqrt(comm_.allreduce(moved, MPI_MAX)) / l0_;
  if (!(moved <= config_.skin / 2))
    reject(fmt::format("step {}: a particle moved {:.3g} l0 in one step, more than half the --skin {} (lower --cfl)",
                       step_, moved, config_.skin));
}

double Solver::front() const {
  double highest = -1e300;
  for (std::size_t i = 0; i < owned_; ++i)
    if (kind_[i] == fluid) highest = std::max(highest, x_[i][0]);
  return comm_.allreduce(highest, MPI_MAX) / config_.width;
}

std::array<long, 3> Solver::counts() const {
  std::array<long, 3> counts{0, 0, 0};
  for (std::size_t i = 0; i < owned_; ++i) ++counts[static_cast<std::size_t>(kind_[i])];
  comm_.allreduce_in_place(std::span<long>(counts), MPI_SUM);
  return counts;
}

State Solver::gather() const {
  std::vector<Record> mine(owned_);
  for (std::size_t i = 0; i < owned_; ++i) mine[i] = {id_[i], kind_[i], 0, x_[i], v_[i], pressure(i)};
  State state;
  for (const Record& record : sorted_by_id(comm_, mine)) {
    state.id.push_back(record.id);
    state.kind.push_back(record.kind);
    state.x.push_back(record.x);
    state.v.push_back(record.v);
    state.p.push_back(record.p);
  }
  return state;
}

Solver::PoissonRows Solver::poisson_rows() const {
  const PoissonMatrix& a = poisson_;
  PoissonRows rows;
  rows.first.assign(1, 0);
  for (std::size_t k = 0; k < a.row.size(); ++k) {
    rows.id.push_back(id_[a.row[k]]);
    rows.column.push_back(id_[a.row[k]]);
    rows.value.push_back(a.diagonal[k]);
    for (std::size_t m = a.first[k]; m < a.first[k + 1]; ++m) {
      rows.column.push_back(id_[m < a.ghost[k] ? a.row[a.column[m]] : a.column[m]]);
      rows.value.push_back(a.value[m]);
    }
    rows.first.push_back(rows.column.size());
    rows.rhs.push_back(a.rhs[k]);
    rows.solution.push_back(a.solution[k]);
  }
  return rows;
}

std::uint64_t Solver::checksum() const {
  const State state = gather();
  std::uint64_t hash = 14695981039346656037ull;
  const auto mix = [&](const void* data, std::size_t bytes) {
    const auto* at = static_cast<const unsigned char*>(data);
    for (std::size_t k = 0; k < bytes; ++k) hash = (hash ^ at[k]) * 1099511628211ull;
  };
  for (std::size_t k = 0; k < state.id.size(); ++k) {
    mix(&state.id[k], sizeof(std::int64_t));
    mix(state.x[k].data(), sizeof(Point));
    mix(state.v[k].data(), sizeof(Point));
  }
  return hash;
}

void Solver::write_checkpoint(const std::filesystem::path& path) const {
  // The pressure field of a record: CG's last solution (the first guess of
  // the next step, so that a restart is bitwise the uninterrupted run).
  std::vector<Record> mine(owned_);
  for (std::size_t i = 0; i < owned_; ++i)
    mine[i] = {id_[i], kind_[i], 0, x_[i], v_[i], i < previous_.size() ? previous_[i] : 0.0};
  const std::vector<Record> records = sorted_by_id(comm_, mine);
  collectively(comm_, [&] {
    if (comm_.rank() != 0) return;
    CheckpointHeader header{};
    std::memcpy(header.magic, checkpoint_magic, sizeof header.magic);
    header.step = step_;
    header.count = static_cast<std::int64_t>(records.size());
    const auto parameters = parameters_of(config_);
    std::copy(parameters.begin(), parameters.end(), header.parameters);
    std::string bytes(sizeof header + records.size() * sizeof(Record), '\0');
    std::memcpy(bytes.data(), &header, sizeof header);
    std::memcpy(bytes.data() + sizeof header, records.data(), records.size() * sizeof(Record));
    apps::write_file(path, bytes);
  });
}

void Solver::read_checkpoint(const std::filesystem::path& path) {
  std::vector<Record> records;
  CheckpointHeader header{};
  collectively(comm_, [&] {
    std::ifstream in(path, std::ios::binary);
    if (!in) reject(fmt::format("--restart {}: cannot open the file", path.string()));
    if (!in.read(reinterpret_cast<char*>(&header), sizeof header) ||
        std::memcmp(header.magic, checkpoint_magic, sizeof header.magic) != 0)
      reject(fmt::format("--restart {}: not a domex-mps checkpoint", path.string()));
    const auto parameters = parameters_of(config_);
    for (std::size_t k = 0; k < parameters.size(); ++k)
      if (header.parameters[k] != parameters[k])
        reject(fmt::format("--restart {}: written with --{} {}, this run has {}", path.string(), parameter_names[k],
                           header.parameters[k], parameters[k]));
    if (header.count <= 0 || header.step < 0)
      reject(fmt::format("--restart {}: bad header (count {}, step {})", path.string(), header.count, header.step));
    records.resize(static_cast<std::size_t>(header.count));
    if (!in.read(reinterpret_cast<char*>(records.data()),
                 static_cast<std::streamsize>(records.size() * sizeof(Record))))
      reject(fmt::format("--restart {}: shorter than its {} particles", path.string(), header.count));
  });
  // Spread over the ranks; the next step migrates them to their owners.
  x_.clear();
  v_.clear();
  id_.clear();
  kind_.clear();
  previous_.clear();
  const int ranks = comm_.size(), rank = comm_.rank();
  for (std::size_t k = 0; k < records.size(); ++k) {
    if (static_cast<int>(k % static_cast<std::size_t>(ranks)) != rank) continue;
    x_.push_back(records[k].x);
    v_.push_back(records[k].v);
    id_.push_back(records[k].id);
    kind_.push_back(records[k].kind);
    previous_.push_back(records[k].p);
  }
  owned_ = x_.size();
  p_.clear();
  step_ = header.step;
}

}  // namespace domex::mps

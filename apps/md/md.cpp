// SPDX-License-Identifier: BSD-3-Clause
#include "md.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <domex/comm/collective.hpp>
#include <domex/comm/error.hpp>
#include <domex/migrate/migrate.hpp>
#include <domex/comm/pages.hpp>
#include <domex/neighbor/sort.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>

#include "files.hpp"

namespace domex::md {

namespace {

[[noreturn]] void reject(std::string_view what) { apps::fail_app("domex-md", what); }

/// SplitMix64 (Steele, Lea & Flood 2014): a hash of (seed, id) per velocity
/// component, so that the initial velocities do not depend on np.
std::uint64_t splitmix(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double uniform(std::uint64_t seed, std::int64_t id, int component) noexcept {
  const std::uint64_t bits = splitmix(splitmix(seed) ^ splitmix(static_cast<std::uint64_t>(id) * 3 + component));
  return static_cast<double>(bits >> 11) * 0x1.0p-53 - 0.5;  // [-0.5, 0.5)
}

/// Checkpoint: header, then the atom count of every rank that wrote it,
/// then one record per atom, rank after rank in each rank's order.
constexpr char checkpoint_magic[8] = {'D', 'X', 'M', 'D', 'C', 'K', '0', '1'};
struct CheckpointHeader {
  char magic[8];
  std::int64_t step;
  std::int64_t ranks;
  std::int64_t count;
  double parameters[8];
};
constexpr const char* parameter_names[8] = {"cells", "density", "cutoff", "skin", "dt", "neigh-every", "steps", "seed"};
struct Record {
  std::int64_t id;
  Point x, v, held;
};

std::array<double, 8> parameters_of(const Config& c) {
  return {static_cast<double>(c.cells), c.density, c.cutoff, c.skin, c.dt, static_cast<double>(c.neigh_every),
          0.0 /* steps: a restart may run longer */, static_cast<double>(c.seed)};
}

}  // namespace

/// The bound of update() and reverse_sum() for the bytes they move: every
/// byte copied once, contiguously, plus the same messages between contiguous
/// buffers (persistent requests, on a communicator of its own). Update: the
/// copies to other ranks into the send buffers and this rank's own periodic
/// images into place, then the messages. Reverse: the ghosts' values for
/// other ranks into the send buffers, the messages, then what arrived and
/// the own images' values once more (the sum's pass). The messages'
/// buffers on huge pages, as the plan's.
struct System::Bound {
  MPI_Comm mpi = MPI_COMM_NULL;
  detail::PageBuffer out, in;
  std::vector<std::byte> landing, own;
  std::vector<MPI_Request> forward, reverse;
  std::size_t forward_bytes = 0, reverse_bytes = 0, arrive_bytes = 0, own_bytes = 0;

  explicit Bound(const Comm& comm) {
    check_mpi(MPI_Comm_dup(comm.get(), &mpi), "MPI_Comm_dup");
  }
  ~Bound() {
    free();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&mpi);
  }
  void free() {
    for (auto* requests : {&forward, &reverse})
      for (auto& request : *requests)
        if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
    forward.clear();
    reverse.clear();
  }
  /// The messages of the plan's update (forward) and reverse sum of Points.
  void build(const GhostPlan& plan, int me) {
    free();
    const auto destinations = plan.destinations();
    const auto sources = plan.sources();
    const auto to = plan.destination_offsets(), from = plan.source_offsets();
    constexpr std::size_t point = sizeof(Point);
    out.resize(std::max(to.back(), from.back()) * point);
    in.resize(std::max(to.back(), from.back()) * point);
    landing.resize(in.size());
    std::memset(landing.data(), 0, landing.size());  // its pages mapped now
    forward_bytes = reverse_bytes = arrive_bytes = own_bytes = 0;
    auto post = [&](std::vector<MPI_Request>& requests, bool send, std::byte* at, std::size_t bytes, int peer,
                    int tag) {
      MPI_Request request = MPI_REQUEST_NULL;
      if (send)
        check_mpi(MPI_Send_init(at, static_cast<int>(bytes), MPI_BYTE, peer, tag, mpi, &request), "MPI_Send_init");
      else
        check_mpi(MPI_Recv_init(at, static_cast<int>(bytes), MPI_BYTE, peer, tag, mpi, &request), "MPI_Recv_init");
      requests.push_back(request);
    };
    for (std::size_t m = 0; m < destinations.size(); ++m)
      if (destinations[m] == me) own_bytes += (to[m + 1] - to[m]) * point;
    own.resize(own_bytes);
    std::memset(own.data(), 0, own.size());
    for (std::size_t m = 0; m < destinations.size(); ++m)
      if (destinations[m] != me) {
        const std::size_t bytes = (to[m + 1] - to[m]) * point;
        post(forward, true, out.data() + to[m] * point, bytes, destinations[m], 1);
        post(reverse, false, in.data() + to[m] * point, bytes, destinations[m], 2);
        forward_bytes += bytes;
        arrive_bytes += bytes;
      }
    for (std::size_t s = 0; s < sources.size(); ++s)
      if (sources[s] != me) {
        const std::size_t bytes = (from[s + 1] - from[s]) * point;
        post(forward, false, in.data() + from[s] * point, bytes, sources[s], 1);
        post(reverse, true, out.data() + from[s] * point, bytes, sources[s], 2);
        reverse_bytes += bytes;
      }
  }
  static void run(std::vector<MPI_Request>& requests) {
    if (requests.empty()) return;
    check_mpi(MPI_Startall(static_cast<int>(requests.size()), requests.data()), "MPI_Startall");
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }
};

System::System(Comm& comm, const Config& config, bool create)
    : comm_(comm),
      config_(config),
      side_(static_cast<double>(config.cells) * std::cbrt(4 / config.density)),
      domains_(comm, Box{{0, 0, 0}, {side_, side_, side_}}, {.periodic = {true, true, true}}),
      list_({.cutoff = config.cutoff, .skin = config.skin, .kind = NeighborKind::half}) {
  const long n = config.cells;
  total_ = 4 * n * n * n;
  if (!create) return;
  // fcc: four atoms per cell; each rank creates those in its own box.
  const double a = std::cbrt(4 / config.density);
  const Box own = domains_.box(comm.rank());
  const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  long first[3], last[3];
  for (int axis = 0; axis < 3; ++axis) {
    first[axis] = std::max(0L, static_cast<long>(std::floor(own.lo[axis] / a)) - 1);
    last[axis] = std::min(n - 1, static_cast<long>(std::ceil(own.hi[axis] / a)));
  }
  for (long k = first[2]; k <= last[2]; ++k)
    for (long j = first[1]; j <= last[1]; ++j)
      for (long i = first[0]; i <= last[0]; ++i)
        for (int b = 0; b < 4; ++b) {
          const Point p{(static_cast<double>(i) + basis[b][0]) * a, (static_cast<double>(j) + basis[b][1]) * a,
                        (static_cast<double>(k) + basis[b][2]) * a};
          if (!own.contains(p)) continue;
          x_.push_back(p);
          id_.push_back(((k * n + j) * n + i) * 4 + b + 1);  // 1-based, as LAMMPS's
        }
  // Velocities: uniform per component, then no net momentum, then scaled to
  // the temperature (3N - 3 degrees of freedom, as LAMMPS's compute temp).
  v_.resize(x_.size());
  std::array<double, 3> momentum{0, 0, 0};
  for (std::size_t i = 0; i < v_.size(); ++i)
    for (int c = 0; c < 3; ++c) {
      v_[i][c] = uniform(config.seed, id_[i], c);
      momentum[static_cast<std::size_t>(c)] += v_[i][c];
    }
  comm.allreduce_in_place(std::span<double>(momentum), MPI_SUM);
  double twice_kinetic = 0;
  for (Point& v : v_)
    for (int c = 0; c < 3; ++c) {
      v[c] -= momentum[static_cast<std::size_t>(c)] / static_cast<double>(total_);
      twice_kinetic += v[c] * v[c];
    }
  twice_kinetic = comm.allreduce(twice_kinetic, MPI_SUM);
  const double dof = 3.0 * static_cast<double>(total_) - 3.0;
  const double scale = twice_kinetic > 0 && dof > 0 ? std::sqrt(config.temperature * dof / twice_kinetic) : 0.0;
  for (Point& v : v_)
    for (int c = 0; c < 3; ++c) v[c] *= scale;
  f_.assign(x_.size(), Point{0, 0, 0});
}

System::~System() = default;

Profile::Timer System::timed(const char* phase) {
  if (config_.timer_sync) {
    auto wait = profile_.phase("Sync");
    comm_.barrier();
  }
  return profile_.phase(phase);
}

bool System::thermo_due(long n) const noexcept {
  return n == first_step_ || n == config_.steps || (config_.thermo > 0 && n % config_.thermo == 0);
}

void System::rebuild(bool migrate) {
  {
    auto timer = timed("Comm");
    if (ghosts_) ghosts_->drop_ghosts(x_, f_);
    if (migrate) {
      auto detail = profile_.phase("migrate");
      // Order does not matter here (a sort every --sort-every steps): the
      // arrivals take the leavers' places, nothing else moves.
      MigrationPlan plan(comm_, domains_, std::span<const Point>(x_), {.order = MigrationOrder::fill_holes});
      domex::migrate(plan, wrapped(x_), v_, id_);
      f_.resize(x_.size());
    }
    // The interior atoms (deeper than the ghost cutoff inside this rank's
    // box: never sent) first, the boundary ones last: an update gathers from
    // and a reverse sum adds into one run at the end of the arrays, the run
    // the force loop and the integration touched last.
    std::vector<std::uint8_t> interior;
    if (config_.boundary_last == "yes") {
      Box inner = domains_.box(comm_.rank());
      const double reach = config_.cutoff + config_.skin;
      for (int a = 0; a < 3; ++a) inner.lo[a] += reach, inner.hi[a] -= reach;
      interior.resize(x_.size());
      for (std::size_t i = 0; i < x_.size(); ++i) interior[i] = inner.contains(x_[i]) ? 1 : 0;
    }
    if (config_.sort_every > 0 && step_ >= next_sort_) {  // atom_modify sort: at the first rebuild from then on
      auto detail = profile_.phase("sort");
      auto order = spatial_order(x_, (config_.cutoff + config_.skin) / 2);
      if (!interior.empty())  // each part in bin order
        std::stable_partition(order.begin(), order.end(), [&](std::size_t i) { return interior[i] != 0; });
      permute(order, x_, v_, id_);
      if (!interior.empty()) {
        std::vector<std::uint8_t> sorted(interior.size());
        for (std::size_t k = 0; k < order.size(); ++k) sorted[k] = interior[order[k]];
        interior.swap(sorted);
      }
      next_sort_ = (step_ / config_.sort_every + 1) * config_.sort_every;
    }
    if (!interior.empty()) {  // since the last rebuild, only the atoms that crossed move
      auto detail = profile_.phase("partition");
      partition_first(interior, x_, v_, id_);
    }
    auto detail = profile_.phase("ghost build");
    if (ghosts_) ghosts_->rebuild(domains_, std::span<const Point>(x_));
    else ghosts_ = std::make_unique<GhostPlan>(comm_, domains_, std::span<const Point>(x_),
                                               GhostOptions{.cutoff = config_.cutoff + config_.skin});
    ghosts_->resize_fields(shifted(x_), f_);  // the ghosts' positions came with the build
  }
  {
    auto timer = timed("Neigh");
    list_.build(*ghosts_, std::span<const Point>(x_));
  }
  const int me = comm_.rank();
  stats_.sent = ghosts_->destination_offsets().back();
  stats_.update_bytes = stats_.reverse_bytes = 0;
  const auto destinations = ghosts_->destinations();
  const auto to = ghosts_->destination_offsets();
  for (std::size_t m = 0; m < destinations.size(); ++m)
    if (destinations[m] != me) stats_.update_bytes += (to[m + 1] - to[m]) * sizeof(Point);
  const auto sources = ghosts_->sources();
  const auto from = ghosts_->source_offsets();
  for (std::size_t s = 0; s < sources.size(); ++s)
    if (sources[s] != me) stats_.reverse_bytes += (from[s + 1] - from[s]) * sizeof(Point);
  if (config_.bound) {
    if (!bound_) bound_ = std::make_unique<Bound>(comm_);
    bound_->build(*ghosts_, me);
  }
}

void System::forces(bool update) {
  const bool energy = thermo_due(step_);
  PairSums sums;
  const std::size_t n = local_count();
  GhostPlan& ghosts = *ghosts_;
  auto pairs = [&](std::size_t begin, std::size_t end, Neighbours which) {
    lj_forces(x_.data(), f_.data(), list_, begin, end, which, config_.cutoff, energy, sums);
  };
  auto clear = [&] { std::fill(f_.begin(), f_.end(), Point{0, 0, 0}); };
  if (config_.overlap == "on") {
    // Half the owned pairs while the positions travel, the other half while
    // the ghosts' forces travel back.
    const std::size_t split = update ? n / 2 : 0;
    if (update) {
      auto timer = timed("Comm");
      auto detail = profile_.phase("update");
      ghosts.begin(shifted(x_));
    }
    {
      auto timer = timed("Pair");
      clear();
      pairs(0, split, Neighbours::owned);
    }
    if (update) {
      auto timer = timed("Comm");
      auto detail = profile_.phase("update");
      ghosts.finish();
    }
    {
      auto timer = timed("Pair");
      pairs(0, n, Neighbours::ghosts);
    }
    {
      auto timer = timed("Comm");
      auto detail = profile_.phase("reverse");
      ghosts.reverse_begin(f_);
    }
    {
      auto timer = timed("Pair");
      pairs(split, n, Neighbours::owned);
    }
    {
      auto timer = timed("Comm");
      auto detail = profile_.phase("reverse");
      ghosts.reverse_sum_finish(f_);
    }
  } else {
    if (update) {
      auto timer = timed("Comm");
      auto detail = profile_.phase("update");
      ghosts.update(shifted(x_));
    }
    {
      auto timer = timed("Pair");
      clear();
      pairs(0, n, Neighbours::all);
    }
    {
      auto timer = timed("Comm");
      auto detail = profile_.phase("reverse");
      ghosts.reverse_sum(f_);
    }
  }
  if (energy) sums_ = sums;
  if (config_.bound) measure_bound();
}

void System::measure_bound() {
  Bound& bound = *bound_;
  // Not part of the step: timed apart, after a barrier each, into phases
  // that the table leaves out of Other. Contiguous stand-ins for what the
  // operations read: the owned positions, the ghosts' forces.
  const std::size_t local = local_count();
  const auto* positions = reinterpret_cast<const std::byte*>(x_.data());
  const auto* ghost_forces = reinterpret_cast<const std::byte*>(f_.data() + local);
  const std::size_t owned_bytes = local * sizeof(Point), ghost_bytes = (f_.size() - local) * sizeof(Point);
  // A copy of n bytes (none: the buffers may be empty, and memcpy from null is undefined).
  const auto copy = [](std::byte* to, const std::byte* from, std::size_t n) {
    if (n > 0) std::memcpy(to, from, n);
  };
  comm_.barrier();
  double start = MPI_Wtime();
  copy(bound.out.data(), positions, std::min(bound.forward_bytes, owned_bytes));
  copy(bound.own.data(), positions, std::min(bound.own_bytes, owned_bytes));
  Bound::run(bound.forward);
  profile_.add("bound update", MPI_Wtime() - start);
  comm_.barrier();
  start = MPI_Wtime();
  copy(bound.out.data(), ghost_forces, std::min(bound.reverse_bytes, ghost_bytes));
  Bound::run(bound.reverse);
  copy(bound.landing.data(), bound.in.data(), bound.arrive_bytes);
  copy(bound.own.data(), ghost_forces, std::min(bound.own_bytes, ghost_bytes));
  profile_.add("bound reverse", MPI_Wtime() - start);
}

void System::setup() {
  first_step_ = step_;
  if (restored_.empty()) {
    next_sort_ = step_;
    rebuild(true);
    forces(false);
    return;
  }
  // A checkpoint of this np: the plan and lists from the positions they were
  // built from, in the same order, then the forces on the present positions:
  // the run goes on bitwise. (The next sort: as the run that wrote it.)
  next_sort_ = config_.sort_every > 0 ? (step_ / config_.sort_every + 1) * config_.sort_every : 0;
  std::vector<Point> present = std::move(x_);
  x_ = std::move(restored_);
  restored_.clear();
  ghosts_ = std::make_unique<GhostPlan>(comm_, domains_, std::span<const Point>(x_),
                                        GhostOptions{.cutoff = config_.cutoff + config_.skin});
  list_.build(*ghosts_, std::span<const Point>(x_));
  std::copy(present.begin(), present.end(), x_.begin());
  ghosts_->resize_fields(x_, f_);
  if (config_.bound) {
    bound_ = std::make_unique<Bound>(comm_);
    bound_->build(*ghosts_, comm_.rank());
  }
  forces(true);
}

void System::step() {
  ++step_;
  const double half = 0.5 * config_.dt;
  {
    auto timer = timed("Modify");
    for (std::size_t i = 0; i < local_count(); ++i)
      for (int c = 0; c < 3; ++c) {
        v_[i][c] += half * f_[i][c];
        x_[i][c] += config_.dt * v_[i][c];
      }
  }
  bool rebuild_now = step_ % config_.neigh_every == 0;
  if (rebuild_now && config_.neigh_check == "yes") {
    auto timer = timed("Neigh");
    auto detail = profile_.phase("skin check");
    rebuild_now = list_.needs_rebuild(comm_, std::span<const Point>(x_));
  }
  if (rebuild_now) {
    rebuild(true);
    ++stats_.rebuilds;
  }
  forces(!rebuild_now);
  {
    auto timer = timed("Modify");
    for (std::size_t i = 0; i < local_count(); ++i)  // (a migration changed the count)
      for (int c = 0; c < 3; ++c) v_[i][c] += half * f_[i][c];
  }
}

Thermo System::thermo() {
  auto timer = timed("Output");
  double kinetic = 0;
  for (const Point& v : v_) kinetic += v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
  std::array<double, 3> sums{0.5 * kinetic, sums_.energy, sums_.virial};
  comm_.allreduce_in_place(std::span<double>(sums), MPI_SUM);
  const double atoms = static_cast<double>(total_), dof = 3 * atoms - 3, volume = side_ * side_ * side_;
  Thermo line;
  line.step = step_;
  line.temperature = dof > 0 ? 2 * sums[0] / dof : 0;
  line.e_pair = sums[1] / atoms;
  line.total_energy = (sums[0] + sums[1]) / atoms;
  line.pressure = (2 * sums[0] + sums[2]) / (3 * volume);
  return line;
}

Atoms System::gather() const {
  const std::size_t n = local_count();
  const auto id = comm_.allgatherv(std::span<const std::int64_t>(id_.data(), n));
  const auto x = comm_.allgatherv(std::span<const Point>(x_.data(), n));
  const auto v = comm_.allgatherv(std::span<const Point>(v_.data(), n));
  std::vector<std::size_t> order(id.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return id[a] < id[b]; });
  Atoms atoms;
  for (const std::size_t k : order) {
    atoms.id.push_back(id[k]);
    atoms.x.push_back(x[k]);
    atoms.v.push_back(v[k]);
  }
  return atoms;
}

std::uint64_t System::checksum() const {
  const Atoms atoms = gather();
  std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a over the bits
  auto mix = [&](const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t k = 0; k < bytes; ++k) hash = (hash ^ p[k]) * 1099511628211ULL;
  };
  for (std::size_t k = 0; k < atoms.id.size(); ++k) {
    mix(&atoms.id[k], sizeof(std::int64_t));
    mix(&atoms.x[k], sizeof(Point));
    mix(&atoms.v[k], sizeof(Point));
  }
  return hash;
}

void System::read_checkpoint(const std::filesystem::path& path) {
  CheckpointHeader header{};
  std::vector<std::int64_t> counts;
  std::vector<Record> records;
  collectively(comm_, [&] {
    std::ifstream in(path, std::ios::binary);
    if (!in) reject(fmt::format("--restart {}: cannot open the file", path.string()));
    if (!in.read(reinterpret_cast<char*>(&header), sizeof header) ||
        std::memcmp(header.magic, checkpoint_magic, sizeof header.magic) != 0)
      reject(fmt::format("--restart {}: not a domex-md checkpoint", path.string()));
    const auto parameters = parameters_of(config_);
    for (std::size_t k = 0; k < parameters.size(); ++k)
      if (header.parameters[k] != parameters[k])
        reject(fmt::format("--restart {}: written with --{} {}, this run has {}", path.string(), parameter_names[k],
                           header.parameters[k], parameters[k]));
    if (header.count != total_ || header.step < 0 || header.ranks < 1 || header.ranks > (1 << 24))
      reject(fmt::format("--restart {}: bad header ({} atoms where this run has {}, step {}, {} ranks)", path.string(),
                         header.count, total_, header.step, header.ranks));
    counts.resize(static_cast<std::size_t>(header.ranks));
    records.resize(static_cast<std::size_t>(header.count));
    if (!in.read(reinterpret_cast<char*>(counts.data()), static_cast<std::streamsize>(counts.size() * sizeof(std::int64_t))) ||
        !in.read(reinterpret_cast<char*>(records.data()), static_cast<std::streamsize>(records.size() * sizeof(Record))))
      reject(fmt::format("--restart {}: shorter than its {} atoms", path.string(), header.count));
    if (std::accumulate(counts.begin(), counts.end(), std::int64_t{0}) != header.count)
      reject(fmt::format("--restart {}: its ranks' counts do not add up to {} atoms", path.string(), header.count));
  });
  step_ = header.step;
  x_.clear();
  v_.clear();
  id_.clear();
  restored_.clear();
  const int me = comm_.rank();
  if (header.ranks == comm_.size()) {  // each rank its own atoms, in their order
    const auto before = std::accumulate(counts.begin(), counts.begin() + me, std::int64_t{0});
    for (std::int64_t k = 0; k < counts[static_cast<std::size_t>(me)]; ++k) {
      const Record& r = records[static_cast<std::size_t>(before + k)];
      id_.push_back(r.id);
      x_.push_back(r.x);
      v_.push_back(r.v);
      restored_.push_back(r.held);
    }
  } else {  // to the owners of their positions; setup() builds everything anew
    for (const Record& r : records)
      if (domains_.owner(r.x) == me) {
        id_.push_back(r.id);
        x_.push_back(r.x);
        v_.push_back(r.v);
      }
  }
  f_.assign(x_.size(), Point{0, 0, 0});
}

void System::write_data(const std::filesystem::path& path) const {
  const Atoms atoms = gather();
  collectively(comm_, [&] {
    if (comm_.rank() != 0) return;
    std::string text = fmt::format(
        "LAMMPS data file from domex-md (in.lj: {}^3 fcc cells, density {}, step {})\n\n{} atoms\n1 atom types\n\n"
        "0 {:.17g} xlo xhi\n0 {:.17g} ylo yhi\n0 {:.17g} zlo zhi\n\nMasses\n\n1 1\n\nAtoms # atomic\n\n",
        config_.cells, config_.density, step_, atoms.id.size(), side_, side_, side_);
    for (std::size_t k = 0; k < atoms.id.size(); ++k) {
      Point p = atoms.x[k];
      long image[3];
      for (int a = 0; a < 3; ++a) {  // wrapped into [0, side), the periods crossed as image flags
        image[a] = static_cast<long>(std::floor(p[a] / side_));
        p[a] -= static_cast<double>(image[a]) * side_;
        if (p[a] >= side_) p[a] = 0, ++image[a];
      }
      text += fmt::format("{} 1 {:.17g} {:.17g} {:.17g} {} {} {}\n", atoms.id[k], p[0], p[1], p[2], image[0], image[1],
                          image[2]);
    }
    text += "\nVelocities\n\n";
    for (std::size_t k = 0; k < atoms.id.size(); ++k)
      text += fmt::format("{} {:.17g} {:.17g} {:.17g}\n", atoms.id[k], atoms.v[k][0], atoms.v[k][1], atoms.v[k][2]);
    apps::write_file(path, text);
  });
}

void System::displace(std::int64_t id, const Point& delta) {
  for (std::size_t i = 0; i < local_count(); ++i)
    if (id_[i] == id)
      for (int c = 0; c < 3; ++c) x_[i][c] += delta[c];
}

void System::write_checkpoint(const std::filesystem::path& path) const {
  const std::size_t n = local_count();
  std::vector<Record> records(n);
  const auto built = list_.build_positions();  // what the plan and the lists were built from
  for (std::size_t i = 0; i < n; ++i) records[i] = {id_[i], x_[i], v_[i], built[i]};
  const auto all = comm_.allgatherv(std::span<const Record>(records));
  const auto counts = comm_.allgather(static_cast<std::int64_t>(n));
  collectively(comm_, [&] {
    if (comm_.rank() != 0) return;
    CheckpointHeader header{};
    std::memcpy(header.magic, checkpoint_magic, sizeof header.magic);
    header.step = step_;
    header.ranks = comm_.size();
    header.count = static_cast<std::int64_t>(all.size());
    const auto parameters = parameters_of(config_);
    std::copy(parameters.begin(), parameters.end(), header.parameters);
    std::string bytes(sizeof header + counts.size() * sizeof(std::int64_t) + all.size() * sizeof(Record), '\0');
    std::memcpy(bytes.data(), &header, sizeof header);
    std::memcpy(bytes.data() + sizeof header, counts.data(), counts.size() * sizeof(std::int64_t));
    std::memcpy(bytes.data() + sizeof header + counts.size() * sizeof(std::int64_t), all.data(),
                all.size() * sizeof(Record));
    apps::write_file(path, bytes);
  });
}

}  // namespace domex::md

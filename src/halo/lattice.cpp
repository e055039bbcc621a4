// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/collective.hpp>
#include <domex/halo/lattice.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

namespace domex {

// ---------------------------------------------------------------------------
// LatticeGrid

namespace {

/// Checks the arguments (equal on all ranks, valid) and creates the 4-D
/// Cartesian communicator. One rank's bad or different input is the same
/// domex::Error on every rank, never a hang in MPI_Cart_create.
MPI_Comm create_lattice(const Comm& comm, std::array<std::size_t, 4> global, const LatticeOptions& options,
                        std::array<int, 4>& dims) {
  std::string problem;
  for (int axis = 0; axis < 4 && problem.empty(); ++axis) {
    const auto a = static_cast<std::size_t>(axis);
    if (global[a] == 0) problem = fmt::format("global_sites[{}] is 0: every axis needs at least one site", axis);
    else if (global[a] > static_cast<std::size_t>(INT_MAX))
      problem = fmt::format("global_sites[{}] = {} is too large", axis, global[a]);
    else if (options.dims[a] < 0) problem = fmt::format("dims[{}] = {} is negative", axis, options.dims[a]);
  }
  agree(comm, "LatticeGrid", problem);
  // (value, -value) reduced with MAX: all ranks agree iff min == max.
  std::array<long long, 24> extremes{};
  for (std::size_t a = 0; a < 4; ++a) {
    const long long values[3] = {static_cast<long long>(global[a]), options.dims[a], options.periodic[a] ? 1 : 0};
    for (std::size_t k = 0; k < 3; ++k) {
      extremes[6 * a + 2 * k] = values[k];
      extremes[6 * a + 2 * k + 1] = -values[k];
    }
  }
  comm.allreduce_in_place(std::span<long long>(extremes), MPI_MAX);
  for (std::size_t i = 0; i < extremes.size(); i += 2)
    if (extremes[i] != -extremes[i + 1])
      fail("LatticeGrid", fmt::format("ranks passed different {} on axis {} (from {} to {})",
                                      std::array{"global_sites", "dims", "periodic"}[(i / 2) % 3], "xyzt"[i / 6],
                                      -extremes[i + 1], extremes[i]));
  // Same arguments everywhere from here on: every check below fails on every rank alike.
  long long fixed = 1;
  for (int d : options.dims)
    if (d > 0) fixed *= d;
  if (comm.size() % fixed != 0)
    fail("LatticeGrid", fmt::format("dims {{{}, {}, {}, {}}} do not divide {} ranks", options.dims[0], options.dims[1],
                                    options.dims[2], options.dims[3], comm.size()));
  dims = options.dims;
  check_mpi(MPI_Dims_create(comm.size(), 4, dims.data()), "MPI_Dims_create");
  for (std::size_t a = 0; a < 4; ++a)
    if (static_cast<std::size_t>(dims[a]) > global[a])
      fail("LatticeGrid", fmt::format("axis {} has {} sites but {} ranks (dims {}x{}x{}x{})", "xyzt"[a], global[a],
                                      dims[a], dims[0], dims[1], dims[2], dims[3]));
  const int periods[4] = {options.periodic[0], options.periodic[1], options.periodic[2], options.periodic[3]};
  MPI_Comm cart = MPI_COMM_NULL;
  // reorder = 0: rank numbers stay those of the user's communicator.
  check_mpi(MPI_Cart_create(comm.get(), 4, dims.data(), periods, 0, &cart), "MPI_Cart_create");
  return cart;
}

}  // namespace

LatticeGrid::LatticeGrid(const Comm& comm, std::array<std::size_t, 4> global_sites, LatticeOptions options)
    : comm_(Comm::adopt(create_lattice(comm, global_sites, options, dims_))),
      periodic_(options.periodic),
      global_(global_sites) {
  int periods[4];
  check_mpi(MPI_Cart_get(comm_.get(), 4, dims_.data(), periods, coords_.data()), "MPI_Cart_get");
  for (std::size_t a = 0; a < 4; ++a) {
    const auto d = static_cast<std::size_t>(dims_[a]), c = static_cast<std::size_t>(coords_[a]);
    const std::size_t base = global_[a] / d, extra = global_[a] % d;
    offset_[a] = c * base + std::min(c, extra);
    local_[a] = base + (c < extra ? 1 : 0);
    check_mpi(MPI_Cart_shift(comm_.get(), static_cast<int>(a), 1, &neighbour_[2 * a], &neighbour_[2 * a + 1]),
              "MPI_Cart_shift");
  }
}

// ---------------------------------------------------------------------------
// LatticeHalo

const char* to_string(LatticePath path) noexcept {
  switch (path) {
    case LatticePath::pack: return "pack";
    case LatticePath::datatype: return "datatype";
    case LatticePath::contiguous: return "contiguous";
  }
  return "?";
}

LatticePath lattice_path_from_string(std::string_view name) {
  for (auto path : {LatticePath::pack, LatticePath::datatype, LatticePath::contiguous})
    if (name == to_string(path)) return path;
  fail("LatticePath", fmt::format("unknown path '{}' (pack, datatype, contiguous)", name));
}

namespace {

/// Direction d = 2 * axis + side. A face sent towards side 1 (+axis) arrives
/// in the receiver's ghost face side 0, so it travels with tag 2 * axis + 1;
/// tags by direction keep both faces apart when both neighbours are one rank.
constexpr int tag_towards(int axis, int side) { return 2 * axis + side; }

/// Fields whose persistent requests a no-copy halo keeps at once.
constexpr std::size_t max_bound = 8;

/// One face inside the owned block: `outer` runs of `run` sites, `stride`
/// sites apart, the first at site `first`.
struct FaceShape {
  std::size_t run, outer, stride, first;
};

}  // namespace

struct LatticeHalo::State {
  std::array<FaceShape, 8> send_face{};  // face sent towards direction d (its ghost side on the receiver is d ^ 1)
  std::array<int, 8> to{}, from{};       // rank sent to in direction d; rank ghost face d comes from
  MPI_Datatype site_type = MPI_DATATYPE_NULL;
  std::array<MPI_Datatype, 4> face_type{MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
  std::array<std::vector<std::byte>, 8> send_buffer, recv_buffer;  // pack path; recv_buffer also drains a failed begin
  struct Bound {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
    std::array<MPI_Request, 16> requests{};  // 8 receives, then 8 sends
  };
  std::vector<Bound> bound;  // persistent requests per field address (one for the pack path)
  Bound* active = nullptr;
  std::byte* active_data = nullptr;
  Comm comm;
  explicit State(const Comm& grid_comm) : comm(grid_comm.get()) {}
  ~State() {
    for (auto& b : bound)
      for (auto& r : b.requests)
        if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    for (auto& t : face_type)
      if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    if (site_type != MPI_DATATYPE_NULL) MPI_Type_free(&site_type);
  }
};

LatticeHalo::LatticeHalo(const LatticeGrid& grid, LatticeHaloOptions options) : grid_(&grid), options_(options) {
  const auto n = grid.local_sites();
  const std::size_t volume = grid.volume();
  std::string problem;
  if (options.site_bytes == 0) problem = "site_bytes is 0";
  else if (options.site_bytes > static_cast<std::size_t>(INT_MAX))
    problem = fmt::format("site_bytes = {} exceeds INT_MAX", options.site_bytes);
  for (std::size_t a = 0; a < 4 && problem.empty(); ++a)
    if (volume / n[a] > static_cast<std::size_t>(INT_MAX))
      problem = fmt::format("a face normal to axis {} has {} sites, more than INT_MAX", a, volume / n[a]);
  agree(grid.comm(), "LatticeHalo", problem);
  std::array<long long, 4> extremes{static_cast<long long>(options.site_bytes), -static_cast<long long>(options.site_bytes),
                                    static_cast<long long>(options.path), -static_cast<long long>(options.path)};
  grid.comm().allreduce_in_place(std::span<long long>(extremes), MPI_MAX);
  if (extremes[0] != -extremes[1] || extremes[2] != -extremes[3])
    fail("LatticeHalo", fmt::format("ranks passed different site_bytes ({} to {}) or paths", -extremes[1], extremes[0]));

  state_ = std::make_unique<State>(grid.comm());
  State& s = *state_;
  sites_ = volume;
  for (std::size_t a = 0; a < 4; ++a) {
    face_sites_[a] = volume / n[a];
    ghost_offset_[2 * a] = sites_;
    ghost_offset_[2 * a + 1] = sites_ + face_sites_[a];
    sites_ += 2 * face_sites_[a];
    std::size_t run = 1;
    for (std::size_t b = 0; b < a; ++b) run *= n[b];
    const std::size_t outer = face_sites_[a] / run, stride = run * n[a];
    s.send_face[2 * a] = {run, outer, stride, 0};                     // coordinate 0, sent towards -axis
    s.send_face[2 * a + 1] = {run, outer, stride, run * (n[a] - 1)};  // coordinate n - 1, towards +axis
    s.to[2 * a] = grid.neighbour(static_cast<int>(a), -1);
    s.to[2 * a + 1] = grid.neighbour(static_cast<int>(a), +1);
    s.from[2 * a] = s.to[2 * a];  // ghost side 0 (coordinate -1) comes from the -axis neighbour
    s.from[2 * a + 1] = s.to[2 * a + 1];
  }
  check_mpi(MPI_Type_contiguous(static_cast<int>(options.site_bytes), MPI_BYTE, &s.site_type), "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&s.site_type), "MPI_Type_commit");
  if (options.path != LatticePath::pack)
    for (std::size_t a = 0; a < 4; ++a) {
      const FaceShape& f = s.send_face[2 * a];
      // outer blocks of run sites, stride sites apart; the start is the buffer address.
      check_mpi(MPI_Type_vector(static_cast<int>(f.outer), static_cast<int>(f.run), static_cast<int>(f.stride),
                                s.site_type, &s.face_type[a]),
                "MPI_Type_vector");
      check_mpi(MPI_Type_commit(&s.face_type[a]), "MPI_Type_commit");
    }
  for (std::size_t d = 0; d < 8; ++d) s.recv_buffer[d].resize(face_sites_[d / 2] * options.site_bytes);
  if (options.path == LatticePath::pack) {
    for (std::size_t d = 0; d < 8; ++d) s.send_buffer[d].resize(face_sites_[d / 2] * options.site_bytes);
    State::Bound b;
    for (std::size_t d = 0; d < 8; ++d) {
      const int axis = static_cast<int>(d / 2), side = static_cast<int>(d % 2);
      const int count = static_cast<int>(face_sites_[d / 2]);
      // Ghost side `side` receives what the neighbour sent towards the opposite direction.
      check_mpi(MPI_Recv_init(s.recv_buffer[d].data(), count, s.site_type, s.from[d], tag_towards(axis, 1 - side),
                              s.comm.get(), &b.requests[d]),
                "MPI_Recv_init");
      check_mpi(MPI_Send_init(s.send_buffer[d].data(), count, s.site_type, s.to[d], tag_towards(axis, side),
                              s.comm.get(), &b.requests[8 + d]),
                "MPI_Send_init");
    }
    s.bound.push_back(b);
  }
}

LatticeHalo::LatticeHalo(LatticeHalo&&) noexcept = default;
LatticeHalo& LatticeHalo::operator=(LatticeHalo&&) noexcept = default;
LatticeHalo::~LatticeHalo() = default;

std::size_t LatticeHalo::ghost_index(std::size_t site, int axis, int side) const noexcept {
  const auto n = grid_->local_sites();
  const auto a = static_cast<std::size_t>(axis);
  std::size_t run = 1;
  for (std::size_t b = 0; b < a; ++b) run *= n[b];
  const std::size_t low = site % run, high = site / (run * n[a]);
  return ghost_offset_[2 * a + static_cast<std::size_t>(side)] + low + run * high;
}

std::size_t LatticeHalo::neighbour_index(std::size_t site, int axis, int step) const noexcept {
  const auto n = grid_->local_sites();
  const auto a = static_cast<std::size_t>(axis);
  std::size_t run = 1;
  for (std::size_t b = 0; b < a; ++b) run *= n[b];
  const std::size_t coordinate = (site / run) % n[a];
  if (step > 0) return coordinate + 1 < n[a] ? site + run : ghost_index(site, axis, 1);
  return coordinate > 0 ? site - run : ghost_index(site, axis, 0);
}

std::size_t LatticeHalo::messages_per_exchange() const noexcept {
  std::size_t messages = 0;
  for (std::size_t d = 0; d < 8; ++d) messages += state_->to[d] != MPI_PROC_NULL ? 1 : 0;
  return messages;
}

std::size_t LatticeHalo::bytes_per_exchange() const noexcept {
  std::size_t bytes = 0;
  for (std::size_t d = 0; d < 8; ++d)
    if (state_->to[d] != MPI_PROC_NULL) bytes += face_sites_[d / 2] * options_.site_bytes;
  return bytes;
}

void LatticeHalo::begin_bytes(std::byte* data, std::size_t bytes) {
  State& s = *state_;
  if (s.active != nullptr) fail("LatticeHalo::begin", "an exchange is already in flight: call finish() first");
  const std::size_t expected = sites_ * options_.site_bytes;
  if (bytes != expected || (data == nullptr && expected > 0)) {
    // Keep the neighbours' exchange whole: empty messages in place of our faces
    // (their finish() sees the short message and names us), drain theirs.
    std::array<MPI_Request, 16> requests{};
    for (std::size_t d = 0; d < 8; ++d) {
      const int axis = static_cast<int>(d / 2), side = static_cast<int>(d % 2);
      check_mpi(MPI_Irecv(s.recv_buffer[d].data(), static_cast<int>(face_sites_[d / 2]), s.site_type, s.from[d],
                          tag_towards(axis, 1 - side), s.comm.get(), &requests[d]),
                "MPI_Irecv");
      check_mpi(MPI_Isend(nullptr, 0, s.site_type, s.to[d], tag_towards(axis, side), s.comm.get(), &requests[8 + d]),
                "MPI_Isend");
    }
    check_mpi(MPI_Waitall(16, requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    fail("LatticeHalo::begin", fmt::format("field has {} bytes, expected {} ({} sites of {} bytes)", bytes, expected,
                                           sites_, options_.site_bytes));
  }
  State::Bound* b = nullptr;
  if (options_.path == LatticePath::pack) {
    b = &s.bound.front();
    const std::size_t sb = options_.site_bytes;
    for (std::size_t d = 0; d < 8; ++d) {
      const FaceShape& f = s.send_face[d];
      std::byte* out = s.send_buffer[d].data();
      for (std::size_t o = 0; o < f.outer; ++o, out += f.run * sb)
        std::memcpy(out, data + (f.first + o * f.stride) * sb, f.run * sb);
    }
  } else {
    for (auto& candidate : s.bound)
      if (candidate.data == data && candidate.bytes == bytes) b = &candidate;
    if (b == nullptr) {
      // A persistent request is bound to its buffer: one set per field address,
      // at most max_bound of them (a solver exchanges a handful of fields); the
      // oldest set is freed first.
      if (s.bound.size() == max_bound) {
        for (auto& r : s.bound.front().requests) check_mpi(MPI_Request_free(&r), "MPI_Request_free");
        s.bound.erase(s.bound.begin());
      }
      State::Bound fresh;
      fresh.data = data;
      fresh.bytes = bytes;
      const std::size_t sb = options_.site_bytes;
      for (std::size_t d = 0; d < 8; ++d) {
        const int axis = static_cast<int>(d / 2), side = static_cast<int>(d % 2);
        const FaceShape& f = s.send_face[d];
        const int count = static_cast<int>(face_sites_[d / 2]);
        check_mpi(MPI_Recv_init(data + ghost_offset_[d] * sb, count, s.site_type, s.from[d],
                                tag_towards(axis, 1 - side), s.comm.get(), &fresh.requests[d]),
                  "MPI_Recv_init");
        const bool contiguous = options_.path == LatticePath::contiguous && f.outer == 1;
        check_mpi(contiguous ? MPI_Send_init(data + f.first * sb, count, s.site_type, s.to[d], tag_towards(axis, side),
                                             s.comm.get(), &fresh.requests[8 + d])
                             : MPI_Send_init(data + f.first * sb, 1, s.face_type[d / 2], s.to[d],
                                             tag_towards(axis, side), s.comm.get(), &fresh.requests[8 + d]),
                  "MPI_Send_init");
      }
      s.bound.push_back(fresh);
      b = &s.bound.back();
    }
  }
  // Receives first (index 0..7) so no message arrives unexpected when avoidable.
  check_mpi(MPI_Startall(16, b->requests.data()), "MPI_Startall");
  s.active = b;
  s.active_data = data;
}

void LatticeHalo::finish() {
  State& s = *state_;
  if (s.active == nullptr) fail("LatticeHalo::finish", "no exchange in flight: call begin() first");
  State::Bound* b = std::exchange(s.active, nullptr);
  std::byte* data = std::exchange(s.active_data, nullptr);
  std::array<MPI_Status, 16> statuses{};
  check_mpi(MPI_Waitall(16, b->requests.data(), statuses.data()), "MPI_Waitall");
  std::string problem;
  for (std::size_t d = 0; d < 8; ++d) {
    if (s.from[d] == MPI_PROC_NULL) continue;
    int count = 0;
    check_mpi(MPI_Get_count(&statuses[d], s.site_type, &count), "MPI_Get_count");
    if (count != static_cast<int>(face_sites_[d / 2]) && problem.empty())
      problem = fmt::format("neighbour rank {} (direction {}{}) sent {} sites instead of {}: its begin() failed",
                            s.from[d], "xyzt"[d / 2], d % 2 ? '+' : '-', count, face_sites_[d / 2]);
  }
  if (!problem.empty()) fail("LatticeHalo::finish", problem);
  if (options_.path == LatticePath::pack) {
    const std::size_t sb = options_.site_bytes;
    for (std::size_t d = 0; d < 8; ++d)
      if (s.from[d] != MPI_PROC_NULL)
        std::memcpy(data + ghost_offset_[d] * sb, s.recv_buffer[d].data(), face_sites_[d / 2] * sb);
  }
}

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/collective.hpp>
#include <domex/exchange/cost_model.hpp>
#include <domex/halo/halo.hpp>

#include <fmt/format.h>

#include <cstdint>

#include <algorithm>
#include <any>
#include <climits>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

namespace domex {

const char* to_string(Stencil stencil) noexcept { return stencil == Stencil::full ? "full" : "faces"; }

const char* to_string(HaloMethod method) noexcept {
  switch (method) {
    case HaloMethod::plan: return "plan";
    case HaloMethod::neighbor_alltoallv: return "neighbor_alltoallv";
    case HaloMethod::naive: return "naive";
  }
  return "?";
}

namespace {

using Direction = std::array<int, 3>;

/// Directions numbered 0..25 in lexicographic (dz, dy, dx) order without
/// (0, 0, 0), so that the opposite of direction d is 25 - d: the tag of a
/// message is the sender's direction, and the receiver expects 25 - its own.
constexpr int direction_index(Direction d) noexcept {
  const int full = (d[2] + 1) * 9 + (d[1] + 1) * 3 + (d[0] + 1);
  return full < 13 ? full : full - 1;
}

/// Cells [begin, end) per axis, in local coordinates (owned cells at [0, n)).
struct Region {
  std::array<long, 3> begin{}, end{};
  [[nodiscard]] std::size_t cells() const noexcept {
    std::size_t count = 1;
    for (int a = 0; a < 3; ++a) count *= static_cast<std::size_t>(end[a] - begin[a]);
    return count;
  }
};

/// One direction of one round: what goes to the neighbour there, and where
/// the ghosts that neighbour sends back land.
struct Transfer {
  Direction direction{};
  int rank = -1;  ///< neighbour in `direction`, -1: none (non-periodic boundary)
  Region send, recv;
  std::size_t send_offset = 0, recv_offset = 0;  ///< bytes into the round's buffers
  [[nodiscard]] int send_tag() const noexcept { return direction_index(direction); }
  [[nodiscard]] int recv_tag() const noexcept { return 25 - direction_index(direction); }
};

struct Round {
  std::vector<Transfer> transfers;
};

/// The transfers of a plan. full: one round of 26 directions, regions span
/// the owned range on the axes a direction does not cross. faces: rounds x,
/// y, z of 2 directions each; a round's regions include the ghosts of the
/// earlier rounds' axes (on sides that have neighbours), which relays edges
/// and corners.
std::vector<Round> build_rounds(const CartesianGrid& grid, int depth, Stencil stencil) {
  const auto n = grid.local_cells();
  const long d = depth;
  std::array<bool, 3> low{}, high{};  // a neighbour below / above on this axis
  for (int a = 0; a < 3; ++a) {
    Direction down{}, up{};
    down[a] = -1;
    up[a] = 1;
    low[a] = grid.neighbour(down) >= 0;
    high[a] = grid.neighbour(up) >= 0;
  }
  auto make = [&](Direction dir, int round_axis) {
    Transfer t;
    t.direction = dir;
    t.rank = grid.neighbour(dir);
    for (int a = 0; a < 3; ++a) {
      const long size = static_cast<long>(n[a]);
      if (dir[a] < 0) {
        t.send.begin[a] = 0, t.send.end[a] = d;
        t.recv.begin[a] = -d, t.recv.end[a] = 0;
      } else if (dir[a] > 0) {
        t.send.begin[a] = size - d, t.send.end[a] = size;
        t.recv.begin[a] = size, t.recv.end[a] = size + d;
      } else {
        // Axes done in an earlier round (faces only) carry their ghosts along.
        const bool relayed = a < round_axis;
        t.send.begin[a] = t.recv.begin[a] = relayed && low[a] ? -d : 0;
        t.send.end[a] = t.recv.end[a] = relayed && high[a] ? size + d : size;
      }
    }
    return t;
  };
  std::vector<Round> rounds;
  if (stencil == Stencil::full) {
    Round round;
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
          if (dx || dy || dz) round.transfers.push_back(make({dx, dy, dz}, 0));
    rounds.push_back(std::move(round));
  } else {
    for (int a = 0; a < 3; ++a) {
      Round round;
      Direction down{}, up{};
      down[a] = -1;
      up[a] = 1;
      round.transfers.push_back(make(down, a));
      round.transfers.push_back(make(up, a));
      rounds.push_back(std::move(round));
    }
  }
  return rounds;
}

/// An element of `Bytes` bytes, copied as one unit (compiles to moves).
template <std::size_t Bytes>
struct Word {
  std::byte bytes[Bytes];
};

/// The cells of a region inside a field: the index of its first cell, the
/// strides of a row (y) and a plane (z) in elements, and its size per axis.
struct Block {
  std::size_t first = 0, row = 0, plane = 0;
  std::size_t run = 0, rows = 0, planes = 0;  ///< cells along x, y, z
};

Block block_of(const HaloPlan& plan, const Region& region) noexcept {
  const auto extent = plan.extent();
  return {plan.index(region.begin[0], region.begin[1], region.begin[2]),
          extent[0],
          extent[0] * extent[1],
          static_cast<std::size_t>(region.end[0] - region.begin[0]),
          static_cast<std::size_t>(region.end[1] - region.begin[1]),
          static_cast<std::size_t>(region.end[2] - region.begin[2])};
}

/// Moves the cells of one block between a field and a packed buffer (Pack:
/// field -> buffer) with elements of W: one pass, row pointers advanced by
/// the strides, and a strided loop for the one-cell rows of x faces (a
/// memcpy call per row would cost more than the copy).
template <bool Pack, class W>
std::byte* copy_block(std::byte* data, const Block& b, std::byte* packed) noexcept {
  constexpr std::size_t w = sizeof(W);
  // Rows of one cell: a constant-size copy (a few moves, no call).
  const auto rows = [&](auto bytes) {
    std::byte* plane = data + b.first * w;
    for (std::size_t k = 0; k < b.planes; ++k, plane += b.plane * w) {
      std::byte* cells = plane;
      for (std::size_t j = 0; j < b.rows; ++j, cells += b.row * w, packed += bytes) {
        if constexpr (Pack) std::memcpy(packed, cells, bytes);
        else std::memcpy(cells, packed, bytes);
      }
    }
    return packed;
  };
  return b.run == 1 ? rows(std::integral_constant<std::size_t, w>{}) : rows(b.run * w);
}

/// Copies one block of a field onto another of the same shape in the same
/// field (a periodic neighbour that is this rank: no buffer, no message).
template <class W>
void move_block(std::byte* data, const Block& from, std::size_t to_first) noexcept {
  constexpr std::size_t w = sizeof(W);
  const std::byte* source = data + from.first * w;
  std::byte* target = data + to_first * w;
  const std::size_t run = from.run * w;
  for (std::size_t k = 0; k < from.planes; ++k)
    for (std::size_t j = 0; j < from.rows; ++j) {
      const std::size_t offset = (k * from.plane + j * from.row) * w;
      if (from.run == 1) std::memcpy(target + offset, source + offset, w);
      else std::memcpy(target + offset, source + offset, run);
    }
}

/// Calls f.template operator()<W>() with W the word type of `element_size`
/// bytes (the sizes of common scalars and small fixed arrays of them), or
/// Word<1> with the block widened to bytes otherwise.
template <class F>
decltype(auto) with_word(std::size_t element_size, F&& f) {
  switch (element_size) {
    case 1: return f.template operator()<Word<1>>();
    case 2: return f.template operator()<Word<2>>();
    case 4: return f.template operator()<Word<4>>();
    case 8: return f.template operator()<Word<8>>();
    case 12: return f.template operator()<Word<12>>();
    case 16: return f.template operator()<Word<16>>();
    case 24: return f.template operator()<Word<24>>();
    case 32: return f.template operator()<Word<32>>();
    case 48: return f.template operator()<Word<48>>();
    case 64: return f.template operator()<Word<64>>();
    default: return f.template operator()<void>();
  }
}

/// A block in bytes: elements of other sizes copied as runs of bytes.
Block in_bytes(Block b, std::size_t element_size) noexcept {
  b.first *= element_size;
  b.row *= element_size;
  b.plane *= element_size;
  b.run *= element_size;
  return b;
}

/// Copies the cells of `region` of one field between the array and a packed
/// buffer; returns the end of what was packed or unpacked.
template <bool Pack>
std::byte* copy_region(const HaloPlan& plan, const HaloPlan::FieldView& field, const Region& region,
                       std::byte* packed) {
  const Block b = block_of(plan, region);
  return with_word(field.element_size, [&]<class W>() {
    if constexpr (std::is_void_v<W>) return copy_block<Pack, Word<1>>(field.data, in_bytes(b, field.element_size), packed);
    else return copy_block<Pack, W>(field.data, b, packed);
  });
}

/// Folds the packed ghosts of `region` into the cells of one field with the
/// field's combine function, one call per plane; returns the end of what was read.
const std::byte* combine_region(const HaloPlan& plan, const HaloPlan::ReverseView& view, const Region& region,
                                const std::byte* packed) {
  const Block b = block_of(plan, region);
  const std::size_t size = view.field.element_size;
  std::byte* plane = view.field.data + b.first * size;
  const std::size_t plane_bytes = b.rows * b.run * size;
  for (std::size_t k = 0; k < b.planes; ++k, plane += b.plane * size, packed += plane_bytes)
    view.combine(view.op, plane, packed, b.rows, b.run, b.row);
  return packed;
}

/// The ghost cells of `region` (cells outside [0, n) on some axis) as boxes:
/// each axis split into its part below 0, inside and above n.
void append_ghost_boxes(const Region& region, const std::array<std::size_t, 3>& n, std::vector<Region>& boxes) {
  std::array<std::vector<std::pair<long, long>>, 3> parts;
  std::array<std::vector<bool>, 3> outside;
  for (int a = 0; a < 3; ++a) {
    const long size = static_cast<long>(n[a]);
    const long cuts[4] = {region.begin[a], std::clamp(0L, region.begin[a], region.end[a]),
                          std::clamp(size, region.begin[a], region.end[a]), region.end[a]};
    for (int p = 0; p < 3; ++p)
      if (cuts[p] < cuts[p + 1]) {
        parts[a].emplace_back(cuts[p], cuts[p + 1]);
        outside[a].push_back(p != 1);
      }
  }
  for (std::size_t k = 0; k < parts[2].size(); ++k)
    for (std::size_t j = 0; j < parts[1].size(); ++j)
      for (std::size_t i = 0; i < parts[0].size(); ++i) {
        if (!outside[0][i] && !outside[1][j] && !outside[2][k]) continue;
        Region box;
        box.begin = {parts[0][i].first, parts[1][j].first, parts[2][k].first};
        box.end = {parts[0][i].second, parts[1][j].second, parts[2][k].second};
        boxes.push_back(box);
      }
}

/// Tag of round r's messages: forward r, reverse reverse_tag_base + r (an
/// exchange never matches a reverse's messages).
constexpr int reverse_tag_base = 8;

/// Copies the cells of region `from` of one field onto its region `to`.
void copy_within(const HaloPlan& plan, const HaloPlan::FieldView& field, const Region& from, const Region& to) {
  const Block b = block_of(plan, from);
  const std::size_t target = plan.index(to.begin[0], to.begin[1], to.begin[2]);
  with_word(field.element_size, [&]<class W>() {
    if constexpr (std::is_void_v<W>) move_block<Word<1>>(field.data, in_bytes(b, field.element_size), target * field.element_size);
    else move_block<W>(field.data, b, target);
  });
}

}  // namespace

struct HaloPlan::State {
  explicit State(const Comm& grid_comm) : comm(grid_comm.get()) {}

  Comm comm;  ///< our own duplicate: plans never match each other's messages
  std::vector<Round> rounds;
  /// plan: per round, the pairs (send transfer, receive transfer) whose
  /// neighbour is this rank (periodic axes with one rank): copied within each
  /// field, no buffer and no message.
  std::vector<std::vector<std::pair<const Transfer*, const Transfer*>>> self_copies;
  /// plan: per round, one message each way per distinct neighbour rank
  /// carrying all its transfers (a rank that is the neighbour in several
  /// directions, as on small or periodic grids, gets one message, not up
  /// to 26). Both sides order them by tag: the sender's send tags are the
  /// receiver's receive tags, so the layouts agree.
  struct Peer {
    int rank = -1;
    std::vector<const Transfer*> sends, receives;  ///< by send tag, by receive tag
    std::size_t send_offset = 0, recv_offset = 0;  ///< bytes into the round's buffers
    std::size_t send_bytes = 0, recv_bytes = 0;    ///< of the current fields
  };
  std::vector<std::vector<Peer>> peers;
  std::vector<Comm> graphs;  ///< neighbor_alltoallv: one graph communicator per round
  /// The reverse's layout per peer: ghosts out (its transfers' receive
  /// regions, by send tag), contributions in (their send regions, by receive
  /// tag): the forward messages with the regions swapped.
  struct ReversePeer {
    std::size_t send_offset = 0, recv_offset = 0, send_bytes = 0, recv_bytes = 0;
  };
  std::vector<std::vector<ReversePeer>> reverse_peers;
  /// Per round: the buffers and persistent requests of the current fields.
  struct Buffers {
    std::vector<std::byte> send, recv;
    std::vector<MPI_Request> requests;
  };
  std::vector<Buffers> buffers;
  std::vector<std::size_t> signature;  ///< element sizes the buffers are laid out for
  std::vector<FieldView> fields;       ///< of the exchange in progress
  /// Reverse (plan only): per round, buffers (recv: the peers'
  /// contributions, then this rank's own ghosts of periodic self-neighbours)
  /// and persistent requests, laid out for reverse_signature.
  std::vector<Buffers> reverse_buffers;
  std::vector<std::size_t> reverse_signature;
  /// Per round and transfer (round.transfers order): byte offset of the
  /// contributions its send region receives in reverse_buffers[r].recv, or
  /// npos where it has no neighbour.
  std::vector<std::vector<std::size_t>> reverse_slots;
  std::vector<ReverseView> reverse_fields;  ///< of the reverse in progress
  std::any operation;                       ///< reverse_begin(op, ...)'s op
  /// Stencil::faces: the ghost cells that relay partial sums (the ghost part
  /// of rounds y and z's targets), saved by reverse_begin and restored after.
  std::vector<Region> relays;
  std::vector<std::byte> relay_saved;
  bool active = false;
  bool reversing = false;              ///< the operation in progress (active) is a reverse
  std::size_t bytes_per_cell = 0;      ///< of the exchange in progress
  /// A neighbour whose input was invalid sent empty messages instead of its
  /// ghosts: its rank (-1: none). From then on this rank sends empty
  /// messages too (later rounds relay the news), unpacks nothing, and
  /// finish() throws.
  int poisoned_by = -1;
  std::vector<MPI_Request> empty_sends;
  std::vector<MPI_Status> statuses;
  std::vector<int> completed;

  void free_requests() noexcept {
    for (auto& round : buffers) free_requests(round);
  }
  static void free_requests(Buffers& round) noexcept {
    for (auto& request : round.requests)
      if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
    round.requests.clear();
  }
  ~State() {
    free_requests();
    for (auto& round : reverse_buffers) free_requests(round);
  }
};

HaloPlan::HaloPlan(const CartesianGrid& grid, HaloOptions options)
    : grid_(&grid), options_(options), state_(std::make_unique<State>(grid.comm())) {
  const auto n = grid.local_cells();
  // Checked on every rank and agreed on, so a bad depth throws everywhere
  // instead of leaving the other ranks waiting for messages.
  std::string problem;
  if (options.depth < 1) problem = fmt::format("depth {} < 1", options.depth);
  for (int a = 0; a < 3 && problem.empty(); ++a) {
    Direction down{}, up{};
    down[a] = -1;
    up[a] = 1;
    const bool has_neighbour = grid.neighbour(down) >= 0 || grid.neighbour(up) >= 0;
    if (has_neighbour && n[a] < static_cast<std::size_t>(options.depth))
      problem = fmt::format("depth {} exceeds the {} cells this rank owns on axis {}", options.depth, n[a], "xyz"[a]);
  }
  agree(grid.comm(), "HaloPlan", problem);
  for (int a = 0; a < 3; ++a) extent_[a] = n[a] + 2 * static_cast<std::size_t>(options.depth);
  state_->rounds = build_rounds(grid, options.depth, options.stencil);
  state_->buffers.resize(state_->rounds.size());
  if (options.method == HaloMethod::plan) {
    const int self = grid.comm().rank();
    for (const Round& round : state_->rounds) {
      auto& copies = state_->self_copies.emplace_back();
      auto& peers = state_->peers.emplace_back();
      for (const Transfer& t : round.transfers) {
        if (t.rank == self) {
          for (const Transfer& o : round.transfers)
            if (o.recv_tag() == t.send_tag()) copies.emplace_back(&t, &o);
        } else if (t.rank >= 0) {
          auto peer = std::find_if(peers.begin(), peers.end(), [&](const State::Peer& p) { return p.rank == t.rank; });
          if (peer == peers.end()) {
            peer = peers.insert(peers.end(), State::Peer{});
            peer->rank = t.rank;
          }
          peer->sends.push_back(&t);
          peer->receives.push_back(&t);
        }
      }
      for (auto& peer : peers) {
        std::sort(peer.sends.begin(), peer.sends.end(),
                  [](const Transfer* x, const Transfer* y) { return x->send_tag() < y->send_tag(); });
        std::sort(peer.receives.begin(), peer.receives.end(),
                  [](const Transfer* x, const Transfer* y) { return x->recv_tag() < y->recv_tag(); });
      }
      state_->reverse_peers.emplace_back(peers.size());
      state_->reverse_slots.emplace_back(round.transfers.size(), std::numeric_limits<std::size_t>::max());
    }
    state_->reverse_buffers.resize(state_->rounds.size());
    // Rounds y and z of the reverse add into the ghost layers of the earlier
    // axes (the relay); those cells are restored afterwards.
    for (std::size_t r = 1; r < state_->rounds.size(); ++r)
      for (const Transfer& t : state_->rounds[r].transfers)
        if (t.rank >= 0) append_ghost_boxes(t.send, n, state_->relays);
  }

  if (options.method == HaloMethod::neighbor_alltoallv) {
    for (const Round& round : state_->rounds) {
      // Sources in order of the tag they send with: between one pair of
      // ranks the k-th block sent matches the k-th edge received.
      std::vector<const Transfer*> receives;
      std::vector<int> destinations;
      for (const Transfer& t : round.transfers)
        if (t.rank >= 0) {
          destinations.push_back(t.rank);
          receives.push_back(&t);
        }
      std::sort(receives.begin(), receives.end(),
                [](const Transfer* x, const Transfer* y) { return x->recv_tag() < y->recv_tag(); });
      std::vector<int> sources;
      for (const Transfer* t : receives) sources.push_back(t->rank);
      MPI_Comm graph = MPI_COMM_NULL;
      check_mpi(MPI_Dist_graph_create_adjacent(state_->comm.get(), static_cast<int>(sources.size()), sources.data(),
                                               MPI_UNWEIGHTED, static_cast<int>(destinations.size()),
                                               destinations.data(), MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph),
                "MPI_Dist_graph_create_adjacent");
      state_->graphs.push_back(Comm::adopt(graph));
    }
  }
}

HaloPlan::HaloPlan(HaloPlan&&) noexcept = default;
HaloPlan& HaloPlan::operator=(HaloPlan&&) noexcept = default;
HaloPlan::~HaloPlan() = default;

std::size_t HaloPlan::messages_per_exchange(std::size_t fields) const noexcept {
  std::size_t messages = 0;
  for (const Round& round : state_->rounds)
    for (const Transfer& t : round.transfers) messages += t.rank >= 0 ? 1 : 0;
  return options_.method == HaloMethod::naive ? messages * fields : messages;
}

std::size_t HaloPlan::mpi_messages_per_exchange(std::size_t fields) const noexcept {
  if (options_.method != HaloMethod::plan) return messages_per_exchange(fields);
  std::size_t messages = 0;
  for (const auto& peers : state_->peers) messages += peers.size();
  return messages;
}

std::size_t HaloPlan::bytes_per_exchange(std::size_t bytes_per_cell) const noexcept {
  std::size_t cells = 0;
  for (const Round& round : state_->rounds)
    for (const Transfer& t : round.transfers) cells += t.rank >= 0 ? t.send.cells() : 0;
  return cells * bytes_per_cell;
}

std::size_t HaloPlan::neighbour_ranks() const noexcept {
  std::vector<int> ranks;
  for (const Round& round : state_->rounds)
    for (const Transfer& t : round.transfers)
      if (t.rank >= 0) ranks.push_back(t.rank);
  std::sort(ranks.begin(), ranks.end());
  return static_cast<std::size_t>(std::unique(ranks.begin(), ranks.end()) - ranks.begin());
}

namespace {

/// Lays out the round's buffers for fields of `bytes_per_cell` bytes per
/// cell: one block per transfer (the baselines).
void lay_out(Round& round, std::size_t bytes_per_cell, std::size_t& send_bytes, std::size_t& recv_bytes) {
  send_bytes = recv_bytes = 0;
  for (Transfer& t : round.transfers) {
    if (t.rank < 0) continue;
    t.send_offset = send_bytes;
    t.recv_offset = recv_bytes;
    send_bytes += t.send.cells() * bytes_per_cell;
    recv_bytes += t.recv.cells() * bytes_per_cell;
  }
}

int checked_int(std::size_t bytes, const char* what) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    fail("HaloPlan", fmt::format("{} of {} bytes exceeds INT_MAX: use fewer fields or a smaller depth", what, bytes));
  return static_cast<int>(bytes);
}

}  // namespace

void HaloPlan::begin_views(std::span<const FieldView> fields) {
  State& s = *state_;
  if (s.active)
    fail("HaloPlan::begin", s.reversing ? "a reverse is in progress: call reverse_finish() first"
                                        : "an exchange is already in progress: call finish() first");
  std::vector<std::size_t> signature;
  std::size_t bytes_per_cell = 0;
  std::string problem;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (fields[f].elements != cells() && problem.empty())
      problem = fmt::format("field {} has {} elements, the plan needs cells() = {}", f, fields[f].elements, cells());
    signature.push_back(fields[f].element_size);
    bytes_per_cell += fields[f].element_size;
  }
  if (options_.method != HaloMethod::plan) {
    // The baselines agree with one allreduce per exchange.
    agree(s.comm, "HaloPlan::begin", problem);
  } else if (!problem.empty()) {
    // No allreduce on the plan's path: this rank sends empty messages where
    // its ghosts would go, so its neighbours notice and throw in finish().
    send_empty_exchange(false);
    fail("HaloPlan::begin", problem);
  }
  s.fields.assign(fields.begin(), fields.end());
  s.bytes_per_cell = bytes_per_cell;
  s.poisoned_by = -1;

  if (signature != s.signature) {
    // New field types: new buffers and, for the plan, new persistent requests
    // (reused by every later exchange of the same kinds of fields).
    s.free_requests();
    for (std::size_t r = 0; r < s.rounds.size(); ++r) {
      auto& buffers = s.buffers[r];
      buffers.requests.clear();
      std::size_t send_bytes = 0, recv_bytes = 0;
      if (options_.method != HaloMethod::plan) {
        lay_out(s.rounds[r], bytes_per_cell, send_bytes, recv_bytes);
        buffers.send.assign(send_bytes, std::byte{});
        buffers.recv.assign(recv_bytes, std::byte{});
        continue;
      }
      // One message per peer: receives first, then sends (tag: the round).
      for (auto& peer : s.peers[r]) {
        peer.send_offset = send_bytes;
        peer.recv_offset = recv_bytes;
        peer.send_bytes = peer.recv_bytes = 0;
        for (const Transfer* t : peer.sends) peer.send_bytes += t->send.cells() * bytes_per_cell;
        for (const Transfer* t : peer.receives) peer.recv_bytes += t->recv.cells() * bytes_per_cell;
        send_bytes += peer.send_bytes;
        recv_bytes += peer.recv_bytes;
      }
      buffers.send.assign(send_bytes, std::byte{});
      buffers.recv.assign(recv_bytes, std::byte{});
      const int tag = static_cast<int>(r);
      for (const auto& peer : s.peers[r]) {
        MPI_Request request = MPI_REQUEST_NULL;
        check_mpi(MPI_Recv_init(buffers.recv.data() + peer.recv_offset, checked_int(peer.recv_bytes, "a message"),
                                MPI_BYTE, peer.rank, tag, s.comm.get(), &request),
                  "MPI_Recv_init");
        buffers.requests.push_back(request);
      }
      for (const auto& peer : s.peers[r]) {
        MPI_Request request = MPI_REQUEST_NULL;
        check_mpi(MPI_Send_init(buffers.send.data() + peer.send_offset, checked_int(peer.send_bytes, "a message"),
                                MPI_BYTE, peer.rank, tag, s.comm.get(), &request),
                  "MPI_Send_init");
        buffers.requests.push_back(request);
      }
    }
    s.signature = std::move(signature);
  }
  s.active = true;
  start_round(0);
}

void HaloPlan::start_round(std::size_t r) {
  State& s = *state_;
  Round& round = s.rounds[r];
  auto& buffers = s.buffers[r];
  if (options_.method == HaloMethod::naive) {
    // One blocking MPI_Sendrecv per field per direction: sends towards d,
    // receives what the neighbour at -d sends towards d.
    std::vector<std::byte> send, recv;
    for (const FieldView& field : s.fields)
      for (const Transfer& t : round.transfers) {
        const Transfer* opposite = nullptr;
        for (const Transfer& o : round.transfers)
          if (o.send_tag() == t.recv_tag()) opposite = &o;
        const bool sends = t.rank >= 0, receives = opposite->rank >= 0;
        if (!sends && !receives) continue;
        send.resize(sends ? t.send.cells() * field.element_size : 0);
        recv.resize(receives ? opposite->recv.cells() * field.element_size : 0);
        if (sends) copy_region<true>(*this, field, t.send, send.data());
        check_mpi(MPI_Sendrecv(send.data(), checked_int(send.size(), "a message"), MPI_BYTE,
                               sends ? t.rank : MPI_PROC_NULL, t.send_tag(), recv.data(),
                               checked_int(recv.size(), "a message"), MPI_BYTE,
                               receives ? opposite->rank : MPI_PROC_NULL, t.send_tag(), s.comm.get(),
                               MPI_STATUS_IGNORE),
                  "MPI_Sendrecv");
        if (receives) copy_region<false>(*this, field, opposite->recv, recv.data());
      }
    return;
  }
  if (options_.method == HaloMethod::plan) {
    // Receives first, then each peer's message sent as soon as it is packed,
    // then the copies to this rank itself while the messages travel.
    const auto& peers = s.peers[r];
    const int tag = static_cast<int>(r);
    if (!peers.empty())
      check_mpi(MPI_Startall(static_cast<int>(peers.size()), buffers.requests.data()), "MPI_Startall");
    if (s.poisoned_by >= 0) {
      // Empty messages instead of the sends; ghosts (own copies too) unchanged.
      for (const auto& peer : peers) {
        MPI_Request request;
        check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, peer.rank, tag, s.comm.get(), &request), "MPI_Isend");
        s.empty_sends.push_back(request);
      }
      return;
    }
    for (std::size_t p = 0; p < peers.size(); ++p) {
      std::byte* packed = buffers.send.data() + peers[p].send_offset;
      for (const Transfer* t : peers[p].sends)
        for (const FieldView& field : s.fields) packed = copy_region<true>(*this, field, t->send, packed);
      check_mpi(MPI_Start(&buffers.requests[peers.size() + p]), "MPI_Start");
    }
    for (const auto& [from, to] : s.self_copies[r])
      for (const FieldView& field : s.fields) copy_within(*this, field, from->send, to->recv);
    return;
  }
  for (const Transfer& t : round.transfers) {
    if (t.rank < 0) continue;
    std::byte* packed = buffers.send.data() + t.send_offset;
    for (const FieldView& field : s.fields) packed = copy_region<true>(*this, field, t.send, packed);
  }
  // neighbor_alltoallv: blocks in the destinations' order, receives in the
  // order of the tags they were sent with (see the constructor).
  const std::size_t bytes_per_cell = [&] {
    std::size_t bytes = 0;
    for (const FieldView& field : s.fields) bytes += field.element_size;
    return bytes;
  }();
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
  std::vector<const Transfer*> receives;
  for (const Transfer& t : round.transfers) {
    if (t.rank < 0) continue;
    send_counts.push_back(checked_int(t.send.cells() * bytes_per_cell, "a message"));
    send_displs.push_back(checked_int(t.send_offset, "a displacement"));
    receives.push_back(&t);
  }
  std::sort(receives.begin(), receives.end(),
            [](const Transfer* x, const Transfer* y) { return x->recv_tag() < y->recv_tag(); });
  for (const Transfer* t : receives) {
    recv_counts.push_back(checked_int(t->recv.cells() * bytes_per_cell, "a message"));
    recv_displs.push_back(checked_int(t->recv_offset, "a displacement"));
  }
  check_mpi(MPI_Neighbor_alltoallv(buffers.send.data(), send_counts.data(), send_displs.data(), MPI_BYTE,
                                   buffers.recv.data(), recv_counts.data(), recv_displs.data(), MPI_BYTE,
                                   s.graphs[r].get()),
            "MPI_Neighbor_alltoallv");
}

void HaloPlan::complete_round(std::size_t r) {
  State& s = *state_;
  if (options_.method == HaloMethod::naive) return;  // unpacked as received
  auto& buffers = s.buffers[r];
  const Round& round = s.rounds[r];
  if (options_.method == HaloMethod::plan) {
    // Each message unpacked as it arrives. One shorter than the ghosts it
    // carries is a neighbour's news that its input was invalid (see
    // send_empty_exchange()): from then on nothing more is unpacked.
    const auto& peers = s.peers[r];
    const int receives = static_cast<int>(peers.size());
    s.statuses.resize(peers.size());
    s.completed.resize(peers.size());
    for (int left = receives; left > 0;) {
      int done = 0;
      check_mpi(MPI_Waitsome(receives, buffers.requests.data(), &done, s.completed.data(), s.statuses.data()),
                "MPI_Waitsome");
      if (done == MPI_UNDEFINED) break;
      left -= done;
      for (int i = 0; i < done; ++i) {
        const auto& peer = peers[static_cast<std::size_t>(s.completed[static_cast<std::size_t>(i)])];
        int count = 0;
        check_mpi(MPI_Get_count(&s.statuses[static_cast<std::size_t>(i)], MPI_BYTE, &count), "MPI_Get_count");
        if (static_cast<std::size_t>(count) != peer.recv_bytes && s.poisoned_by < 0) s.poisoned_by = peer.rank;
        if (s.poisoned_by >= 0) continue;
        std::byte* packed = buffers.recv.data() + peer.recv_offset;
        for (const Transfer* t : peer.receives)
          for (const FieldView& field : s.fields) packed = copy_region<false>(*this, field, t->recv, packed);
      }
    }
    if (receives > 0)  // not started (inactive) where this round sent empty messages instead
      check_mpi(MPI_Waitall(receives, buffers.requests.data() + receives, MPI_STATUSES_IGNORE), "MPI_Waitall");
    wait_empty_sends();
    return;
  }
  for (const Transfer& t : round.transfers) {
    if (t.rank < 0) continue;
    std::byte* packed = buffers.recv.data() + t.recv_offset;
    for (const FieldView& field : s.fields) packed = copy_region<false>(*this, field, t.recv, packed);
  }
}

void HaloPlan::finish() {
  State& s = *state_;
  if (!s.active) fail("HaloPlan::finish", "no exchange in progress: call begin() first");
  if (s.reversing) fail("HaloPlan::finish", "a reverse is in progress: call reverse_finish(), not finish()");
  s.active = false;
  complete_round(0);
  for (std::size_t r = 1; r < s.rounds.size(); ++r) {
    start_round(r);
    complete_round(r);
  }
  if (s.poisoned_by >= 0)
    fail("HaloPlan::finish",
         fmt::format("neighbour rank {} sent no ghosts because the input of a rank to begin() was invalid (that "
                     "rank or, with Stencil::faces, one whose ghosts it relays; its own error names it); ghosts "
                     "not received before the news were left unchanged",
                     s.poisoned_by));
}

void HaloPlan::wait_empty_sends() {
  State& s = *state_;
  if (!s.empty_sends.empty())
    check_mpi(MPI_Waitall(static_cast<int>(s.empty_sends.size()), s.empty_sends.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall");
  s.empty_sends.clear();
}

void HaloPlan::send_empty_exchange(bool reverse) {
  // Every round in order (a reverse: z, y, x), as a valid rank would run it:
  // empty messages to the neighbours, and their messages received (of
  // whatever size) and dropped, so that nothing is left unmatched on the
  // plan's communicator.
  State& s = *state_;
  std::vector<std::byte> dropped;
  for (std::size_t step = 0; step < s.peers.size(); ++step) {
    const std::size_t r = reverse ? s.peers.size() - 1 - step : step;
    const int tag = static_cast<int>(r) + (reverse ? reverse_tag_base : 0);
    for (const auto& peer : s.peers[r]) {
      MPI_Request request;
      check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, peer.rank, tag, s.comm.get(), &request), "MPI_Isend");
      s.empty_sends.push_back(request);
    }
    for (const auto& peer : s.peers[r]) {
      MPI_Status status;
      check_mpi(MPI_Probe(peer.rank, tag, s.comm.get(), &status), "MPI_Probe");
      int count = 0;
      check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
      dropped.resize(static_cast<std::size_t>(count));
      check_mpi(MPI_Recv(dropped.data(), count, MPI_BYTE, peer.rank, tag, s.comm.get(), MPI_STATUS_IGNORE),
                "MPI_Recv");
    }
    wait_empty_sends();
  }
}

std::any& HaloPlan::idle_operation_slot() {
  State& s = *state_;
  if (s.active)
    fail("HaloPlan::reverse_begin", s.reversing ? "a reverse is already in progress: call reverse_finish() first"
                                                : "an exchange is in progress: call finish() first");
  return s.operation;
}

void HaloPlan::reverse_begin_views(std::span<const ReverseView> fields) {
  State& s = *state_;
  if (s.active)
    fail("HaloPlan::reverse_begin", s.reversing ? "a reverse is already in progress: call reverse_finish() first"
                                                : "an exchange is in progress: call finish() first");
  // Every rank has the same method: this fails everywhere, before any message.
  if (options_.method != HaloMethod::plan)
    fail("HaloPlan::reverse_begin",
         fmt::format("HaloMethod::{} has no reverse (only HaloMethod::plan has)", to_string(options_.method)));
  std::vector<std::size_t> signature;
  std::size_t bytes_per_cell = 0;
  std::string problem;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (fields[f].field.elements != cells() && problem.empty())
      problem =
          fmt::format("field {} has {} elements, the plan needs cells() = {}", f, fields[f].field.elements, cells());
    if (fields[f].combine == nullptr && problem.empty()) problem = fmt::format("field {} has no combine function", f);
    signature.push_back(fields[f].field.element_size);
    bytes_per_cell += fields[f].field.element_size;
  }
  if (!problem.empty()) {
    // As begin(): empty messages in place of the ghosts tell the neighbours.
    send_empty_exchange(true);
    fail("HaloPlan::reverse_begin", problem);
  }
  s.reverse_fields.assign(fields.begin(), fields.end());
  s.poisoned_by = -1;

  if (signature != s.reverse_signature) {
    // The forward messages with the regions swapped: ghosts (receive regions)
    // out, contributions to the send regions in; then a slot per transfer
    // whose neighbour is this rank, for its own ghosts.
    for (std::size_t r = 0; r < s.rounds.size(); ++r) {
      auto& buffers = s.reverse_buffers[r];
      State::free_requests(buffers);
      const Round& round = s.rounds[r];
      auto& slots = s.reverse_slots[r];
      std::size_t send_bytes = 0, recv_bytes = 0;
      for (std::size_t p = 0; p < s.peers[r].size(); ++p) {
        const auto& peer = s.peers[r][p];
        auto& layout = s.reverse_peers[r][p];
        layout.send_offset = send_bytes;
        layout.recv_offset = recv_bytes;
        layout.send_bytes = layout.recv_bytes = 0;
        for (const Transfer* t : peer.sends) layout.send_bytes += t->recv.cells() * bytes_per_cell;
        for (const Transfer* t : peer.receives) {
          slots[static_cast<std::size_t>(t - round.transfers.data())] = recv_bytes + layout.recv_bytes;
          layout.recv_bytes += t->send.cells() * bytes_per_cell;
        }
        send_bytes += layout.send_bytes;
        recv_bytes += layout.recv_bytes;
      }
      for (const auto& [owner, ghost] : s.self_copies[r]) {
        slots[static_cast<std::size_t>(owner - round.transfers.data())] = recv_bytes;
        recv_bytes += owner->send.cells() * bytes_per_cell;
      }
      buffers.send.assign(send_bytes, std::byte{});
      buffers.recv.assign(recv_bytes, std::byte{});
      const int tag = reverse_tag_base + static_cast<int>(r);
      for (std::size_t p = 0; p < s.peers[r].size(); ++p) {
        const auto& layout = s.reverse_peers[r][p];
        MPI_Request request = MPI_REQUEST_NULL;
        check_mpi(MPI_Recv_init(buffers.recv.data() + layout.recv_offset, checked_int(layout.recv_bytes, "a message"),
                                MPI_BYTE, s.peers[r][p].rank, tag, s.comm.get(), &request),
                  "MPI_Recv_init");
        buffers.requests.push_back(request);
      }
      for (std::size_t p = 0; p < s.peers[r].size(); ++p) {
        const auto& layout = s.reverse_peers[r][p];
        MPI_Request request = MPI_REQUEST_NULL;
        check_mpi(MPI_Send_init(buffers.send.data() + layout.send_offset, checked_int(layout.send_bytes, "a message"),
                                MPI_BYTE, s.peers[r][p].rank, tag, s.comm.get(), &request),
                  "MPI_Send_init");
        buffers.requests.push_back(request);
      }
    }
    s.reverse_signature = std::move(signature);
  }
  // Relayed partial sums land in ghost cells: keep what they held.
  std::size_t relay_bytes = 0;
  for (const Region& region : s.relays) relay_bytes += region.cells() * bytes_per_cell;
  s.relay_saved.resize(relay_bytes);
  std::byte* saved = s.relay_saved.data();
  for (const Region& region : s.relays)
    for (const ReverseView& view : s.reverse_fields) saved = copy_region<true>(*this, view.field, region, saved);
  s.active = true;
  s.reversing = true;
  start_reverse_round(s.rounds.size() - 1);
}

void HaloPlan::start_reverse_round(std::size_t r) {
  State& s = *state_;
  const Round& round = s.rounds[r];
  auto& buffers = s.reverse_buffers[r];
  const auto& peers = s.peers[r];
  const int tag = reverse_tag_base + static_cast<int>(r);
  if (!peers.empty()) check_mpi(MPI_Startall(static_cast<int>(peers.size()), buffers.requests.data()), "MPI_Startall");
  if (s.poisoned_by >= 0) {
    for (const auto& peer : peers) {
      MPI_Request request;
      check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, peer.rank, tag, s.comm.get(), &request), "MPI_Isend");
      s.empty_sends.push_back(request);
    }
    return;
  }
  for (std::size_t p = 0; p < peers.size(); ++p) {
    std::byte* packed = buffers.send.data() + s.reverse_peers[r][p].send_offset;
    for (const Transfer* t : peers[p].sends)
      for (const ReverseView& view : s.reverse_fields) packed = copy_region<true>(*this, view.field, t->recv, packed);
    check_mpi(MPI_Start(&buffers.requests[peers.size() + p]), "MPI_Start");
  }
  // This rank's own ghosts (periodic self-neighbours) packed like a message,
  // so that they are combined in the same order as any other.
  for (const auto& [owner, ghost] : s.self_copies[r]) {
    std::byte* packed =
        buffers.recv.data() + s.reverse_slots[r][static_cast<std::size_t>(owner - round.transfers.data())];
    for (const ReverseView& view : s.reverse_fields) packed = copy_region<true>(*this, view.field, ghost->recv, packed);
  }
}

void HaloPlan::complete_reverse_round(std::size_t r) {
  State& s = *state_;
  const Round& round = s.rounds[r];
  auto& buffers = s.reverse_buffers[r];
  const auto& peers = s.peers[r];
  const int receives = static_cast<int>(peers.size());
  s.statuses.resize(peers.size());
  if (receives > 0) {
    check_mpi(MPI_Waitall(receives, buffers.requests.data(), s.statuses.data()), "MPI_Waitall");
    // A message shorter than the contributions it carries: a neighbour's
    // news that an input was invalid.
    for (std::size_t p = 0; p < peers.size(); ++p) {
      int count = 0;
      check_mpi(MPI_Get_count(&s.statuses[p], MPI_BYTE, &count), "MPI_Get_count");
      if (static_cast<std::size_t>(count) != s.reverse_peers[r][p].recv_bytes && s.poisoned_by < 0)
        s.poisoned_by = peers[p].rank;
    }
    check_mpi(MPI_Waitall(receives, buffers.requests.data() + receives, MPI_STATUSES_IGNORE), "MPI_Waitall");
  }
  wait_empty_sends();
  if (s.poisoned_by >= 0) return;  // all of a round or none of it
  // The fixed order: transfers by ascending direction index, whatever rank
  // holds the ghosts and whenever they arrived.
  for (std::size_t i = 0; i < round.transfers.size(); ++i) {
    const std::size_t slot = s.reverse_slots[r][i];
    if (slot == std::numeric_limits<std::size_t>::max()) continue;
    const std::byte* packed = buffers.recv.data() + slot;
    for (const ReverseView& view : s.reverse_fields)
      packed = combine_region(*this, view, round.transfers[i].send, packed);
  }
}

void HaloPlan::reverse_finish() {
  State& s = *state_;
  if (!s.active) fail("HaloPlan::reverse_finish", "no reverse in progress: call reverse_begin() first");
  if (!s.reversing) fail("HaloPlan::reverse_finish", "an exchange is in progress: call finish(), not reverse_finish()");
  s.active = false;
  s.reversing = false;
  complete_reverse_round(s.rounds.size() - 1);
  for (std::size_t r = s.rounds.size() - 1; r-- > 0;) {
    start_reverse_round(r);
    complete_reverse_round(r);
  }
  std::byte* saved = s.relay_saved.data();
  for (const Region& region : s.relays)
    for (const ReverseView& view : s.reverse_fields) saved = copy_region<false>(*this, view.field, region, saved);
  if (s.poisoned_by >= 0)
    fail("HaloPlan::reverse_finish",
         fmt::format("neighbour rank {} sent no ghosts because the input of a rank to reverse_begin() was invalid "
                     "(that rank or, with Stencil::faces, one whose ghosts it relays; its own error names it); "
                     "owned cells hold the rounds combined before the news (Stencil::full: unchanged), ghosts are "
                     "unchanged",
                     s.poisoned_by));
}

int choose_depth(const CartesianGrid& grid, Stencil stencil, const DepthModel& model) {
  const auto& cost = CostModel::of_this_machine(grid.comm())[Algorithm::sendrecv_reduce];
  const double alpha = model.seconds_per_message > 0 ? model.seconds_per_message : cost.per_message;
  const double beta = model.seconds_per_byte > 0 ? model.seconds_per_byte : cost.per_byte;
  const auto n = grid.local_cells();
  std::array<int, 3> sides{};  // sides with a neighbour per axis: 0, 1 or 2
  int max_depth = std::max(model.max_depth, 1);
  for (int a = 0; a < 3; ++a) {
    Direction down{}, up{};
    down[a] = -1;
    up[a] = 1;
    sides[a] = (grid.neighbour(down) >= 0 ? 1 : 0) + (grid.neighbour(up) >= 0 ? 1 : 0);
    if (sides[a]) max_depth = std::min(max_depth, static_cast<int>(n[a]));
  }
  // Modelled time of every depth on this rank (infinite where the rank owns
  // too few cells), then the slowest rank's time per depth: one allreduce,
  // so every rank picks the same k even where their neighbour counts differ.
  const int depths = std::max(model.max_depth, 1);
  std::vector<double> times(static_cast<std::size_t>(depths), std::numeric_limits<double>::infinity());
  for (int k = 1; k <= max_depth; ++k) {
    double messages = 0, bytes = 0;
    for (const Round& round : build_rounds(grid, k, stencil))
      for (const Transfer& t : round.transfers)
        if (t.rank >= 0) {
          messages += 1;
          bytes += static_cast<double>(t.send.cells() * model.bytes_per_cell);
        }
    double updated = 0;  // cells updated over the k steps between exchanges
    for (int s = 1; s <= k; ++s) {
      double cells = 1;
      for (int a = 0; a < 3; ++a) cells *= static_cast<double>(n[a]) + sides[a] * (k - s);
      updated += cells;
    }
    times[static_cast<std::size_t>(k - 1)] =
        (alpha * messages + beta * bytes) / k + model.seconds_per_cell_update * updated / k;
  }
  grid.comm().allreduce_in_place(std::span<double>(times), MPI_MAX);
  int best = 1;
  double best_time = std::numeric_limits<double>::infinity();
  for (int k = 1; k <= depths; ++k)
    if (times[static_cast<std::size_t>(k - 1)] < best_time * (1 - 1e-12)) {
      best_time = times[static_cast<std::size_t>(k - 1)];
      best = k;
    }
  return best;
}

}  // namespace domex

// SPDX-License-Identifier: BSD-3-Clause
#include <domex/halo/halo.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using domex::HaloMethod;
using domex::Stencil;

/// A field of another element type, to check that fields of different types
/// travel together.
struct Tagged {
  float value;
  std::int16_t axis_sum;
};

/// Global id of a cell, or -1 where the cell lies outside a non-periodic
/// boundary (no owner: the exchange must leave it alone).
long long global_id(const domex::CartesianGrid& grid, long i, long j, long k) {
  const std::array<long, 3> local{i, j, k};
  long long id = 0;
  for (int a = 2; a >= 0; --a) {
    const auto size = static_cast<long>(grid.global_cells()[a]);
    long g = static_cast<long>(grid.offset()[a]) + local[a];
    if (g < 0 || g >= size) {
      if (!grid.periodic()[a]) return -1;
      g = (g % size + size) % size;
    }
    id = id * size + g;
  }
  return id;
}

struct Fields {
  std::vector<double> id;
  std::vector<std::int64_t> twice;
  std::vector<Tagged> tagged;
};

constexpr double untouched = -7.0;

Fields filled(const domex::HaloPlan& plan) {
  Fields f{std::vector<double>(plan.cells(), untouched), std::vector<std::int64_t>(plan.cells(), -7),
           std::vector<Tagged>(plan.cells(), Tagged{-7.0f, -7})};
  const auto n = plan.grid().local_cells();
  for (long k = 0; k < static_cast<long>(n[2]); ++k)
    for (long j = 0; j < static_cast<long>(n[1]); ++j)
      for (long i = 0; i < static_cast<long>(n[0]); ++i) {
        const auto id = global_id(plan.grid(), i, j, k);
        const auto at = plan.index(i, j, k);
        f.id[at] = static_cast<double>(id);
        f.twice[at] = 2 * id;
        f.tagged[at] = {static_cast<float>(id % 1000), static_cast<std::int16_t>(id % 7)};
      }
  return f;
}

/// Number of cells whose value differs from the owner's (or, outside a
/// non-periodic boundary, from the untouched marker).
long long wrong_cells(const domex::HaloPlan& plan, const Fields& f) {
  long long wrong = 0;
  const long d = plan.depth();
  const auto n = plan.grid().local_cells();
  for (long k = -d; k < static_cast<long>(n[2]) + d; ++k)
    for (long j = -d; j < static_cast<long>(n[1]) + d; ++j)
      for (long i = -d; i < static_cast<long>(n[0]) + d; ++i) {
        const auto id = global_id(plan.grid(), i, j, k);
        const auto at = plan.index(i, j, k);
        const bool ok = id < 0 ? f.id[at] == untouched && f.twice[at] == -7 && f.tagged[at].axis_sum == -7
                               : f.id[at] == static_cast<double>(id) && f.twice[at] == 2 * id &&
                                     f.tagged[at].value == static_cast<float>(id % 1000) &&
                                     f.tagged[at].axis_sum == id % 7;
        wrong += ok ? 0 : 1;
      }
  return wrong;
}

TEST(HaloPlan, EveryGhostCellHoldsItsOwnersValue) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto p = static_cast<std::size_t>(comm.size());
  const std::array<bool, 3> periodic_cases[] = {{false, false, false}, {true, true, true}, {true, false, true}};
  int cases = 0;
  for (std::array<int, 3> dims : {std::array<int, 3>{0, 0, 0}, {comm.size(), 1, 1}, {1, 1, comm.size()}})
    for (const auto& periodic : periodic_cases) {
      // At least 3 cells per rank on every axis, uneven blocks.
      const std::array<std::size_t, 3> cells{dims[0] == comm.size() ? 3 * p + 1 : 11,
                                             10, dims[2] == comm.size() ? 3 * p + 2 : 9};
      domex::CartesianGrid grid(comm, cells, {.dims = dims, .periodic = periodic});
      for (Stencil stencil : {Stencil::full, Stencil::faces})
        for (HaloMethod method : {HaloMethod::plan, HaloMethod::neighbor_alltoallv, HaloMethod::naive})
          for (int depth = 1; depth <= 3; ++depth) {
            domex::HaloPlan plan(grid, {.depth = depth, .stencil = stencil, .method = method});
            Fields f = filled(plan);
            plan.exchange(f.id, f.twice, f.tagged);
            const long long wrong = wrong_cells(plan, f);
            EXPECT_EQ(wrong, 0) << "stencil " << domex::to_string(stencil) << ", method " << domex::to_string(method)
                                << ", depth " << depth << ", dims " << grid.dims()[0] << "x" << grid.dims()[1] << "x"
                                << grid.dims()[2] << ", periodic " << periodic[0] << periodic[1] << periodic[2];
            // Twice more with the same plan (persistent requests reused), then
            // with one field only (new buffers).
            for (int again = 0; again < 2; ++again) {
              f = filled(plan);
              plan.exchange(f.id, f.twice, f.tagged);
              EXPECT_EQ(wrong_cells(plan, f), 0);
            }
            Fields g = filled(plan);
            plan.exchange(g.id);
            g.twice = f.twice;
            g.tagged = f.tagged;
            EXPECT_EQ(wrong_cells(plan, g), 0);
            ++cases;
          }
    }
  EXPECT_EQ(cases, 3 * 3 * 2 * 3 * 3);
}

/// A field of N-byte elements whose every byte is derived from the cell's id.
template <std::size_t N>
using Bytes = std::array<std::uint8_t, N>;

template <std::size_t N>
Bytes<N> bytes_of(long long id) {
  Bytes<N> b{};
  for (std::size_t i = 0; i < N; ++i) b[i] = static_cast<std::uint8_t>(id < 0 ? 0xA5 : (id * 31 + 7 * i) % 251);
  return b;
}

template <std::size_t N>
std::vector<Bytes<N>> filled_bytes(const domex::HaloPlan& plan) {
  std::vector<Bytes<N>> field(plan.cells(), bytes_of<N>(-1));
  const auto n = plan.grid().local_cells();
  for (long k = 0; k < static_cast<long>(n[2]); ++k)
    for (long j = 0; j < static_cast<long>(n[1]); ++j)
      for (long i = 0; i < static_cast<long>(n[0]); ++i)
        field[plan.index(i, j, k)] = bytes_of<N>(global_id(plan.grid(), i, j, k));
  return field;
}

template <std::size_t N>
long long wrong_bytes(const domex::HaloPlan& plan, const std::vector<Bytes<N>>& field) {
  long long wrong = 0;
  const long d = plan.depth();
  const auto n = plan.grid().local_cells();
  for (long k = -d; k < static_cast<long>(n[2]) + d; ++k)
    for (long j = -d; j < static_cast<long>(n[1]) + d; ++j)
      for (long i = -d; i < static_cast<long>(n[0]) + d; ++i)
        wrong += field[plan.index(i, j, k)] == bytes_of<N>(global_id(plan.grid(), i, j, k)) ? 0 : 1;
  return wrong;
}

TEST(HaloPlan, FieldsOfEveryElementSizeTravelTogether) {
  // 1, 3, 12, 24, 40 and 64 bytes per element: the word-copy sizes and the
  // byte-run fallback, one-cell rows (x faces) and long ones, messages and
  // copies to this rank itself (a periodic axis with one rank).
  domex::Comm comm{MPI_COMM_WORLD};
  for (std::array<int, 3> dims : {std::array<int, 3>{0, 0, 0}, {comm.size(), 1, 1}})
    for (Stencil stencil : {Stencil::full, Stencil::faces})
      for (int depth : {1, 2}) {
        domex::CartesianGrid grid(comm, {static_cast<std::size_t>(2 * comm.size() + 3), 7, 6},
                                  {.dims = dims, .periodic = {true, true, false}});
        domex::HaloPlan plan(grid, {.depth = depth, .stencil = stencil});
        auto b1 = filled_bytes<1>(plan);
        auto b3 = filled_bytes<3>(plan);
        auto b12 = filled_bytes<12>(plan);
        auto b24 = filled_bytes<24>(plan);
        auto b40 = filled_bytes<40>(plan);
        auto b64 = filled_bytes<64>(plan);
        for (int again = 0; again < 2; ++again) plan.exchange(b1, b3, b12, b24, b40, b64);
        const std::string where = fmt::format("stencil {}, depth {}, dims {}x{}x{}", domex::to_string(stencil), depth,
                                              grid.dims()[0], grid.dims()[1], grid.dims()[2]);
        EXPECT_EQ(wrong_bytes(plan, b1), 0) << where;
        EXPECT_EQ(wrong_bytes(plan, b3), 0) << where;
        EXPECT_EQ(wrong_bytes(plan, b12), 0) << where;
        EXPECT_EQ(wrong_bytes(plan, b24), 0) << where;
        EXPECT_EQ(wrong_bytes(plan, b40), 0) << where;
        EXPECT_EQ(wrong_bytes(plan, b64), 0) << where;
      }
}

TEST(HaloPlan, BeginAndFinishOverlapComputation) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::CartesianGrid grid(comm, {12, 11, 10}, {.periodic = {true, true, true}});
  for (Stencil stencil : {Stencil::full, Stencil::faces}) {
    domex::HaloPlan plan(grid, {.depth = 2, .stencil = stencil});
    Fields f = filled(plan);
    plan.begin(f.id, f.twice, f.tagged);
    double interior_sum = 0;  // "computation" on owned cells meanwhile
    for (long k = 0; k < static_cast<long>(grid.local_cells()[2]); ++k) interior_sum += f.id[plan.index(0, 0, k)];
    plan.finish();
    EXPECT_EQ(wrong_cells(plan, f), 0);
    EXPECT_GE(interior_sum, 0);
  }
}

TEST(HaloPlan, OneMessagePerNeighbourWhateverTheNumberOfFields) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::CartesianGrid grid(comm, {12, 12, 12}, {.periodic = {true, true, true}});
  const auto n = grid.local_cells();
  for (int depth = 1; depth <= 2; ++depth) {
    domex::HaloPlan full(grid, {.depth = depth});
    domex::HaloPlan faces(grid, {.depth = depth, .stencil = Stencil::faces});
    domex::HaloPlan naive(grid, {.depth = depth, .method = HaloMethod::naive});
    EXPECT_EQ(full.messages_per_exchange(8), 26u);  // not 8 * 26 = 208
    EXPECT_EQ(faces.messages_per_exchange(8), 6u);
    EXPECT_EQ(naive.messages_per_exchange(8), 208u);
    // MPI messages: one per distinct other rank (one round), none to itself
    // (a neighbour on every periodic axis with one rank).
    const auto& dims = grid.dims();
    const bool self_neighbour = dims[0] == 1 || dims[1] == 1 || dims[2] == 1;
    EXPECT_EQ(full.mpi_messages_per_exchange(8), full.neighbour_ranks() - (self_neighbour ? 1u : 0u));
    EXPECT_EQ(naive.mpi_messages_per_exchange(8), 208u);
    // Bytes: the shell of `depth` layers around the owned box, per field.
    const std::size_t d = static_cast<std::size_t>(depth);
    const std::size_t shell = (n[0] + 2 * d) * (n[1] + 2 * d) * (n[2] + 2 * d) - n[0] * n[1] * n[2];
    EXPECT_EQ(full.bytes_per_exchange(64), shell * 64);
    EXPECT_EQ(faces.bytes_per_exchange(64), shell * 64);
  }
  // A non-periodic single rank has no neighbours at all.
  domex::Comm self{MPI_COMM_SELF};
  domex::CartesianGrid alone(self, {5, 5, 5});
  domex::HaloPlan plan(alone, {});
  EXPECT_EQ(plan.messages_per_exchange(3), 0u);
  EXPECT_EQ(plan.neighbour_ranks(), 0u);
}

TEST(HaloPlan, BadUseIsAClearError) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::CartesianGrid grid(comm, {4 * static_cast<std::size_t>(comm.size()), 4, 4},
                            {.dims = {comm.size(), 1, 1}, .periodic = {true, false, false}});
  // Depth beyond the owned cells fails on every rank (nobody waits).
  try {
    domex::HaloPlan plan(grid, {.depth = 5});
    ADD_FAILURE() << "no error for depth 5 with 4 cells per rank";
  } catch (const domex::Error& error) {
    EXPECT_NE(std::string(error.what()).find("depth 5"), std::string::npos) << error.what();
  }
  EXPECT_THROW(domex::HaloPlan(grid, {.depth = 0}), domex::Error);
  domex::HaloPlan plan(grid, {.depth = 1});
  std::vector<double> short_field(plan.cells() - 1);
  try {
    plan.exchange(short_field);
    ADD_FAILURE() << "no error for a field of the wrong size";
  } catch (const domex::Error& error) {
    EXPECT_NE(std::string(error.what()).find("field 0"), std::string::npos) << error.what();
  }
  EXPECT_THROW(plan.finish(), domex::Error);
  // The plan still works after the errors.
  Fields f = filled(plan);
  plan.exchange(f.id, f.twice, f.tagged);
  EXPECT_EQ(wrong_cells(plan, f), 0);
}

TEST(HaloPlan, OneRanksBadFieldIsAnErrorOnItAndOnEveryRankThatNeedsItsGhosts) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto p = static_cast<std::size_t>(comm.size());
  for (const bool periodic : {true, false})
    for (Stencil stencil : {Stencil::full, Stencil::faces})
      for (HaloMethod method : {HaloMethod::plan, HaloMethod::neighbor_alltoallv, HaloMethod::naive}) {
        domex::CartesianGrid grid(comm, {3 * p + 1, 5, 6}, {.periodic = {periodic, periodic, periodic}});
        domex::HaloPlan plan(grid, {.depth = 1, .stencil = stencil, .method = method});
        for (int bad : {0, comm.size() - 1, comm.size() / 2}) {
          SCOPED_TRACE(std::string("stencil ") + domex::to_string(stencil) + ", method " + domex::to_string(method) +
                       ", periodic " + std::to_string(periodic) + ", bad rank " + std::to_string(bad));
          Fields f = filled(plan);
          const Fields before = f;
          std::vector<double> short_field(plan.cells() - 1);
          std::string error;
          try {
            if (comm.rank() == bad) plan.exchange(f.id, short_field);
            else plan.exchange(f.id, f.twice);
          } catch (const domex::Error& e) {
            error = e.what();
          }
          // The same exchange with valid fields everywhere (collective: every rank).
          Fields correct = filled(plan);
          plan.exchange(correct.id, correct.twice);
          if (comm.rank() == bad) {
            EXPECT_NE(error.find("field 1"), std::string::npos) << error;
          } else if (!error.empty()) {
            // A rank whose ghosts depend on the bad rank: told so, and every
            // cell holds its owner's value or is unchanged.
            if (method != HaloMethod::plan) {  // the baselines agree: the bad rank's own error
              EXPECT_NE(error.find("rank " + std::to_string(bad) + ": HaloPlan::begin: field 1"), std::string::npos)
                  << error;
            } else {
              if (stencil == Stencil::full) {
                EXPECT_NE(error.find("neighbour rank " + std::to_string(bad)), std::string::npos) << error;
              }
              EXPECT_NE(error.find("invalid"), std::string::npos) << error;
            }
            for (std::size_t at = 0; at < f.id.size(); ++at)
              ASSERT_TRUE(f.id[at] == before.id[at] || f.id[at] == correct.id[at]) << "cell " << at;
          } else {
            // Not a neighbour (plan only): its ghosts are all correct.
            EXPECT_EQ(method, HaloMethod::plan);
            EXPECT_EQ(f.id, correct.id);
            EXPECT_EQ(f.twice, correct.twice);
          }
          // Every rank whose ghosts come from the bad rank knows: with 26
          // neighbours on a periodic grid that is every rank.
          const int errors = comm.allreduce(error.empty() ? 0 : 1, MPI_SUM);
          if (periodic && stencil == Stencil::full && grid.dims() == std::array<int, 3>{2, 2, 2}) {
            EXPECT_EQ(errors, comm.size());
          }
          // The plan still works afterwards, on every rank.
          Fields g = filled(plan);
          plan.exchange(g.id, g.twice, g.tagged);
          EXPECT_EQ(wrong_cells(plan, g), 0);
        }
      }
}

// ---- reverse: ghosts -> owners ------------------------------------------
//
// The references below hold the arrays of every rank of the decomposition in
// this one process and fold the ghosts in serially, from the grid's shape
// alone (CartesianGrid::block), never from the plan.

using Cell = std::array<long, 3>;

/// One rank's box: its coordinates, first global cell and cells per axis.
struct RankBox {
  std::array<int, 3> coords{};
  Cell first{}, size{};
};

struct World {
  const domex::CartesianGrid* grid = nullptr;
  long depth = 1;
  std::vector<RankBox> boxes;  ///< by linear coordinates (x fastest), not by MPI rank
  std::array<int, 3> dims{};
  [[nodiscard]] std::size_t extent(const RankBox& b, int a) const {
    return static_cast<std::size_t>(b.size[a] + 2 * depth);
  }
  [[nodiscard]] std::size_t cells(const RankBox& b) const { return extent(b, 0) * extent(b, 1) * extent(b, 2); }
  [[nodiscard]] std::size_t index(const RankBox& b, Cell c) const {
    return static_cast<std::size_t>(c[0] + depth) +
           extent(b, 0) *
               (static_cast<std::size_t>(c[1] + depth) + extent(b, 1) * static_cast<std::size_t>(c[2] + depth));
  }
  /// The box at coords + direction (wrapped on periodic axes), or -1.
  [[nodiscard]] long neighbour(const RankBox& b, std::array<int, 3> direction) const {
    std::array<int, 3> c{};
    for (int a = 0; a < 3; ++a) {
      c[a] = b.coords[a] + direction[a];
      if (c[a] < 0 || c[a] >= dims[a]) {
        if (!grid->periodic()[a]) return -1;
        c[a] = (c[a] + dims[a]) % dims[a];
      }
    }
    return c[0] + dims[0] * (c[1] + dims[1] * c[2]);
  }
  [[nodiscard]] const RankBox& mine() const {
    const auto c = grid->coords();
    return boxes[static_cast<std::size_t>(c[0] + dims[0] * (c[1] + dims[1] * c[2]))];
  }
};

World world_of(const domex::CartesianGrid& grid, int depth) {
  World w{&grid, depth, {}, grid.dims()};
  for (int z = 0; z < w.dims[2]; ++z)
    for (int y = 0; y < w.dims[1]; ++y)
      for (int x = 0; x < w.dims[0]; ++x) {
        RankBox b{{x, y, z}, {}, {}};
        for (int a = 0; a < 3; ++a) {
          const auto [first, count] = domex::CartesianGrid::block(grid.global_cells()[a], w.dims[a], b.coords[a]);
          b.first[a] = static_cast<long>(first);
          b.size[a] = static_cast<long>(count);
        }
        w.boxes.push_back(b);
      }
  return w;
}

/// Calls f(cell, direction) for every cell of a box with ghosts; direction:
/// per axis -1 / 1 below / above the owned cells, 0 inside.
template <class F>
void for_each_cell(const World& w, const RankBox& b, F&& f) {
  for (long k = -w.depth; k < b.size[2] + w.depth; ++k)
    for (long j = -w.depth; j < b.size[1] + w.depth; ++j)
      for (long i = -w.depth; i < b.size[0] + w.depth; ++i) {
        const Cell c{i, j, k};
        std::array<int, 3> direction{};
        for (int a = 0; a < 3; ++a) direction[a] = c[a] < 0 ? -1 : c[a] >= b.size[a] ? 1 : 0;
        f(c, direction);
      }
}

/// The global cell of local cell c of box b, wrapped; false where it lies
/// outside a non-periodic boundary (no owner). `crossing`: per axis whether
/// the unwrapped cell is outside the global grid.
bool global_cell(const World& w, const RankBox& b, Cell c, Cell& global, std::array<bool, 3>& crossing) {
  for (int a = 0; a < 3; ++a) {
    const auto size = static_cast<long>(w.grid->global_cells()[a]);
    long g = b.first[a] + c[a];
    crossing[a] = g < 0 || g >= size;
    if (crossing[a]) {
      if (!w.grid->periodic()[a]) return false;
      g = (g % size + size) % size;
    }
    global[a] = g;
  }
  return true;
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A value of one (global cell, ghost direction, field, component):
/// integer-valued, or any double of a wide range of magnitudes (so that the
/// order of a sum shows in its bits).
double value_of(const World& w, Cell global, std::array<int, 3> direction, int field, bool integers) {
  const auto& n = w.grid->global_cells();
  const auto id = static_cast<std::uint64_t>(global[0] + static_cast<long>(n[0]) *
                                                             (global[1] + static_cast<long>(n[1]) * global[2]));
  const auto d = static_cast<std::uint64_t>((direction[2] + 1) * 9 + (direction[1] + 1) * 3 + direction[0] + 1);
  const std::uint64_t h = mix(id * 64 + d + 4096 * static_cast<std::uint64_t>(field) + 20261125);
  if (integers) return static_cast<double>(static_cast<long>(h % 2001) - 1000);
  const double mantissa = 1.0 + static_cast<double>(h % 1000003) / 1000003.0;
  const double sign = (h >> 40) & 1 ? -1.0 : 1.0;
  return sign * std::ldexp(mantissa, static_cast<int>((h >> 20) % 40) - 20);
}

constexpr double no_owner = -12345.0;  ///< cells outside a non-periodic boundary

using Triple = std::array<double, 3>;

template <class T>
T element_of(const World& w, Cell global, std::array<int, 3> direction, int field, bool integers) {
  if constexpr (std::is_same_v<T, Triple>) {
    return {value_of(w, global, direction, 3 * field, integers),
            value_of(w, global, direction, 3 * field + 1, integers),
            value_of(w, global, direction, 3 * field + 2, integers)};
  } else {
    return static_cast<T>(value_of(w, global, direction, field, integers));
  }
}

template <class T>
T no_owner_value() {
  if constexpr (std::is_same_v<T, Triple>)
    return {no_owner, no_owner, no_owner};
  else
    return static_cast<T>(no_owner);
}

/// Every cell of box b: its global cell's value for its direction (owned
/// cells: direction 0), no_owner outside a non-periodic boundary. With
/// `internal_zero`, ghosts at internal rank boundaries (outside the box on an
/// axis where they are inside the global grid) hold 0.
template <class T>
std::vector<T> filled_box(const World& w, const RankBox& b, int field, bool integers, bool internal_zero = false) {
  std::vector<T> values(w.cells(b));
  for_each_cell(w, b, [&](Cell c, std::array<int, 3> direction) {
    Cell global{};
    std::array<bool, 3> crossing{};
    T& v = values[w.index(b, c)];
    if (!global_cell(w, b, c, global, crossing)) {
      v = no_owner_value<T>();
      return;
    }
    bool internal = false;
    for (int a = 0; a < 3; ++a) internal = internal || (direction[a] != 0 && !crossing[a]);
    v = internal_zero && internal ? T{} : element_of<T>(w, global, direction, field, integers);
  });
  return values;
}

/// The promised order, run serially over every rank's array: Stencil::full,
/// one round of the 26 directions in ascending index (descending: the wrong
/// order, to show the test would see it); Stencil::faces, rounds z, y, x of
/// (lower, upper), each adding into the ghost layers of the earlier axes.
template <class T, class Op>
std::vector<std::vector<T>> reference_reverse(const World& w, std::vector<std::vector<T>> arrays, Stencil stencil,
                                              const Op& op, bool descending = false) {
  std::vector<std::pair<int, std::vector<std::array<int, 3>>>> rounds;  // (relayed axes below, directions)
  if (stencil == Stencil::full) {
    std::vector<std::array<int, 3>> directions;
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
          if (dx || dy || dz) directions.push_back({dx, dy, dz});
    if (descending) std::reverse(directions.begin(), directions.end());
    rounds.emplace_back(0, directions);
  } else {
    for (int a = 2; a >= 0; --a) {
      std::array<int, 3> down{}, up{};
      down[a] = -1;
      up[a] = 1;
      rounds.emplace_back(a, std::vector<std::array<int, 3>>{down, up});
    }
  }
  for (const auto& [relayed_below, directions] : rounds)
    for (const RankBox& q : w.boxes)
      for (const auto& d : directions) {
        const long p = w.neighbour(q, d);
        if (p < 0) continue;
        const RankBox& from = w.boxes[static_cast<std::size_t>(p)];
        Cell begin{}, end{};
        for (int a = 0; a < 3; ++a) {
          if (d[a] < 0)
            begin[a] = 0, end[a] = w.depth;
          else if (d[a] > 0)
            begin[a] = q.size[a] - w.depth, end[a] = q.size[a];
          else {
            std::array<int, 3> low{}, high{};
            low[a] = -1;
            high[a] = 1;
            const bool relayed = stencil == Stencil::faces && a < relayed_below;
            begin[a] = relayed && w.neighbour(q, low) >= 0 ? -w.depth : 0;
            end[a] = relayed && w.neighbour(q, high) >= 0 ? q.size[a] + w.depth : q.size[a];
          }
        }
        auto& target = arrays[static_cast<std::size_t>(&q - w.boxes.data())];
        const auto& source = arrays[static_cast<std::size_t>(p)];
        for (long k = begin[2]; k < end[2]; ++k)
          for (long j = begin[1]; j < end[1]; ++j)
            for (long i = begin[0]; i < end[0]; ++i) {
              const Cell c{i, j, k};
              Cell image = c;
              for (int a = 0; a < 3; ++a)
                if (d[a] > 0)
                  image[a] = c[a] - q.size[a];
                else if (d[a] < 0)
                  image[a] = c[a] + from.size[a];
              op(target[w.index(q, c)], source[w.index(from, image)]);
            }
      }
  return arrays;
}

/// Cells of this rank's array that differ from `expected` (owned cells) or
/// from `before` (ghosts: a reverse leaves them unchanged), bitwise.
template <class T>
long long wrong_after_reverse(const World& w, const std::vector<T>& field, const std::vector<T>& expected,
                              const std::vector<T>& before) {
  long long wrong = 0;
  const RankBox& b = w.mine();
  for_each_cell(w, b, [&](Cell c, std::array<int, 3> direction) {
    const std::size_t at = w.index(b, c);
    const bool owned = direction == std::array<int, 3>{0, 0, 0};
    wrong += std::memcmp(&field[at], owned ? &expected[at] : &before[at], sizeof(T)) == 0 ? 0 : 1;
  });
  return wrong;
}

template <class T>
std::vector<std::vector<T>> filled_world(const World& w, int field, bool integers, bool internal_zero = false) {
  std::vector<std::vector<T>> arrays;
  for (const RankBox& b : w.boxes) arrays.push_back(filled_box<T>(w, b, field, integers, internal_zero));
  return arrays;
}

std::size_t my_box(const World& w) { return static_cast<std::size_t>(&w.mine() - w.boxes.data()); }

/// reverse_sum() of a double, a float and a std::array<double, 3> field
/// (and, with integers, an int32 one) against the serial reference, bitwise,
/// ghosts unchanged; with integers also against an order-free brute force
/// over the global grid. Returns the cells where the wrong order (Stencil::full,
/// any doubles) would give other bits.
long long check_reverse_sum(const domex::CartesianGrid& grid, Stencil stencil, int depth, bool integers) {
  const domex::detail::GhostSum sum;
  const auto cells = grid.global_cells();
  domex::HaloPlan plan(grid, {.depth = depth, .stencil = stencil});
  const World w = world_of(grid, depth);
  EXPECT_EQ(w.cells(w.mine()), plan.cells());
  if (w.cells(w.mine()) != plan.cells()) return 0;
  const auto d0 = filled_world<double>(w, 0, integers);
  const auto f0 = filled_world<float>(w, 1, integers);
  const auto t0 = filled_world<Triple>(w, 2, integers);
  const auto i0 = filled_world<std::int32_t>(w, 4, true);
  const std::size_t me = my_box(w);
  auto d = d0[me];
  auto f = f0[me];
  auto t = t0[me];
  auto i = i0[me];
  if (integers) plan.reverse_sum(d, f, t, i);
  else plan.reverse_sum(d, f, t);
  EXPECT_EQ(wrong_after_reverse(w, d, reference_reverse(w, d0, stencil, sum)[me], d0[me]), 0);
  EXPECT_EQ(wrong_after_reverse(w, f, reference_reverse(w, f0, stencil, sum)[me], f0[me]), 0);
  EXPECT_EQ(wrong_after_reverse(w, t, reference_reverse(w, t0, stencil, sum)[me], t0[me]), 0);
  long long order_visible = 0;
  if (integers) {
    EXPECT_EQ(wrong_after_reverse(w, i, reference_reverse(w, i0, stencil, sum)[me], i0[me]), 0);
    // Exact sums: whatever the order, every owned cell is its value plus
    // every ghost of it on every rank (brute force over the global grid),
    // for both stencils alike.
    const auto global_index = [&](Cell g) {
      return static_cast<std::size_t>(g[0]) +
             cells[0] * (static_cast<std::size_t>(g[1]) + cells[1] * static_cast<std::size_t>(g[2]));
    };
    std::vector<double> total(cells[0] * cells[1] * cells[2], 0.0);
    for (const RankBox& b : w.boxes)
      for_each_cell(w, b, [&](Cell c, std::array<int, 3>) {
        Cell g{};
        std::array<bool, 3> crossing{};
        if (global_cell(w, b, c, g, crossing))
          total[global_index(g)] += d0[static_cast<std::size_t>(&b - w.boxes.data())][w.index(b, c)];
      });
    long long right = 0;
    const RankBox& b = w.mine();
    for_each_cell(w, b, [&](Cell c, std::array<int, 3> direction) {
      if (direction != std::array<int, 3>{0, 0, 0}) return;
      right += d[w.index(b, c)] == total[global_index({b.first[0] + c[0], b.first[1] + c[1], b.first[2] + c[2]})];
    });
    EXPECT_EQ(right, static_cast<long long>(grid.owned_cells())) << "against the order-free brute force";
  } else if (stencil == Stencil::full) {
    order_visible = wrong_after_reverse(w, d, reference_reverse(w, d0, stencil, sum, true)[me], d0[me]);
  }
  // Again with the same plan (persistent requests reused): the same bits.
  auto again = d0[me];
  plan.reverse_sum(again);
  EXPECT_EQ(std::memcmp(again.data(), d.data(), d.size() * sizeof(double)), 0);
  return order_visible;
}

TEST(HaloPlanReverse, SumIsTheSerialSumInTheFixedOrder) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto p = static_cast<std::size_t>(comm.size());
  const std::array<bool, 3> periodic_cases[] = {{false, false, false}, {true, true, true}, {true, false, true}};
  long long order_visible = 0;  // cells where the wrong order gives other bits
  int cases = 0;
  for (std::array<int, 3> dims : {std::array<int, 3>{0, 0, 0}, {comm.size(), 1, 1}, {1, 1, comm.size()}})
    for (const auto& periodic : periodic_cases) {
      const std::array<std::size_t, 3> cells{dims[0] == comm.size() ? 3 * p + 1 : 11, 10,
                                             dims[2] == comm.size() ? 3 * p + 2 : 9};
      domex::CartesianGrid grid(comm, cells, {.dims = dims, .periodic = periodic});
      for (Stencil stencil : {Stencil::full, Stencil::faces})
        for (int depth : {1, 2})
          for (bool integers : {false, true}) {
            SCOPED_TRACE(fmt::format("stencil {}, depth {}, dims {}x{}x{}, periodic {}{}{}, {}",
                                     domex::to_string(stencil), depth, grid.dims()[0], grid.dims()[1], grid.dims()[2],
                                     periodic[0], periodic[1], periodic[2], integers ? "integers" : "any doubles"));
            order_visible += check_reverse_sum(grid, stencil, depth, integers);
            ++cases;
          }
    }
  EXPECT_EQ(cases, 3 * 3 * 2 * 2 * 2);
  // The order is observable in these values: had the plan summed in another
  // order, the test above would have seen it.
  EXPECT_GT(comm.allreduce(order_visible, MPI_SUM), 0);
}

TEST(HaloPlanReverse, BlocksOfDepthCellsWhereACellIsNearBothSides) {
  // Each rank owns exactly `depth` cells on x and y: every owned cell gets
  // ghosts from both sides of those axes (and, periodic with one rank, from
  // itself twice).
  domex::Comm comm{MPI_COMM_WORLD};
  for (int depth : {1, 2})
    for (const std::array<bool, 3> periodic : {std::array<bool, 3>{true, true, true}, {false, false, false},
                                               {true, false, true}}) {
      const auto d = static_cast<std::size_t>(depth);
      domex::CartesianGrid grid(comm, {d * static_cast<std::size_t>(comm.size()), d, 3},
                                {.dims = {comm.size(), 1, 1}, .periodic = periodic});
      for (Stencil stencil : {Stencil::full, Stencil::faces})
        for (bool integers : {false, true}) {
          SCOPED_TRACE(fmt::format("stencil {}, depth {}, periodic {}{}{}, {}", domex::to_string(stencil), depth,
                                   periodic[0], periodic[1], periodic[2], integers ? "integers" : "any doubles"));
          check_reverse_sum(grid, stencil, depth, integers);
        }
    }
}

TEST(HaloPlanReverse, AnOperationIsAppliedInTheFixedOrder) {
  // op(owner, ghost) = owner * 1000003 + ghost (mod 2^64) is neither
  // commutative nor associative: only the promised order gives these bits.
  domex::Comm comm{MPI_COMM_WORLD};
  const auto hash = [](auto& owner, const auto& ghost) {
    using T = std::remove_cvref_t<decltype(owner)>;
    if constexpr (std::is_same_v<T, std::uint64_t>)
      owner = owner * 1000003u + ghost;
    else
      owner = std::max(owner, ghost);
  };
  for (const bool periodic : {true, false})
    for (Stencil stencil : {Stencil::full, Stencil::faces})
      for (int depth : {1, 2}) {
        SCOPED_TRACE(fmt::format("stencil {}, depth {}, periodic {}", domex::to_string(stencil), depth, periodic));
        domex::CartesianGrid grid(comm, {9, 8, static_cast<std::size_t>(2 * comm.size() + 3)},
                                  {.periodic = {periodic, true, periodic}});
        domex::HaloPlan plan(grid, {.depth = depth, .stencil = stencil});
        const World w = world_of(grid, depth);
        const std::size_t me = my_box(w);
        auto h0 = filled_world<double>(w, 5, false);
        std::vector<std::vector<std::uint64_t>> u0;
        for (const auto& array : h0) {
          auto& bits = u0.emplace_back(array.size());
          std::memcpy(bits.data(), array.data(), array.size() * sizeof(double));
        }
        auto m0 = filled_world<double>(w, 6, false);
        auto u = u0[me];
        auto m = m0[me];
        plan.reverse(hash, u, m);
        EXPECT_EQ(wrong_after_reverse(w, u, reference_reverse(w, u0, stencil, hash)[me], u0[me]), 0);
        EXPECT_EQ(wrong_after_reverse(w, m, reference_reverse(w, m0, stencil, hash)[me], m0[me]), 0);
        // reverse_begin / reverse_finish with computation between: the same bits.
        auto v = u0[me];
        plan.reverse_begin(hash, v);
        std::uint64_t interior = 0;
        for (std::size_t at = 0; at < v.size(); at += 7) interior ^= u0[me][at];
        plan.reverse_finish();
        EXPECT_EQ(v, u);
        EXPECT_NE(interior, 1u);
      }
}

TEST(HaloPlanReverse, BeginAndFinishGiveTheBitsOfReverseSum) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::CartesianGrid grid(comm, {12, 11, 10}, {.periodic = {true, true, true}});
  for (Stencil stencil : {Stencil::full, Stencil::faces}) {
    domex::HaloPlan plan(grid, {.depth = 2, .stencil = stencil});
    const World w = world_of(grid, 2);
    const auto d0 = filled_box<double>(w, w.mine(), 0, false);
    const auto t0 = filled_box<Triple>(w, w.mine(), 1, false);
    auto d = d0;
    auto t = t0;
    plan.reverse_sum(d, t);
    for (int run = 0; run < 3; ++run) {
      auto e = d0;
      auto s = t0;
      plan.reverse_begin(e, s);
      double interior = 0;  // "computation" on owned cells the reverse does not touch
      const auto n = grid.local_cells();
      for (long k = 2; k + 2 < static_cast<long>(n[2]); ++k)
        for (long j = 2; j + 2 < static_cast<long>(n[1]); ++j)
          for (long i = 2; i + 2 < static_cast<long>(n[0]); ++i) interior += e[plan.index(i, j, k)];
      plan.reverse_finish();
      EXPECT_EQ(std::memcmp(e.data(), d.data(), d.size() * sizeof(double)), 0) << domex::to_string(stencil);
      EXPECT_EQ(std::memcmp(s.data(), t.data(), t.size() * sizeof(Triple)), 0) << domex::to_string(stencil);
      EXPECT_TRUE(std::isfinite(interior));
    }
  }
}

TEST(HaloPlanReverse, OneRankAndAnyDecompositionAgreeBitwiseWhenInternalGhostsHoldZero) {
  // The same global grid on one rank (every periodic neighbour is itself)
  // and on all ranks: wrapped ghosts carry the same values from the same
  // directions, ghosts at internal rank boundaries hold 0 (adding 0 is
  // exact), so the owned cells agree bit for bit, with any doubles.
  domex::Comm comm{MPI_COMM_WORLD};
  domex::Comm self{MPI_COMM_SELF};
  const auto p = static_cast<std::size_t>(comm.size());
  const std::array<bool, 3> periodic_cases[] = {{true, true, true}, {true, false, true}};
  for (std::array<int, 3> dims : {std::array<int, 3>{0, 0, 0}, {comm.size(), 1, 1}})
    for (const auto& periodic : periodic_cases)
      for (Stencil stencil : {Stencil::full, Stencil::faces})
        for (int depth : {1, 2}) {
          const std::array<std::size_t, 3> cells{dims[0] == comm.size() ? 3 * p + 1 : 11, 10, 9};
          domex::CartesianGrid grid(comm, cells, {.dims = dims, .periodic = periodic});
          domex::CartesianGrid alone(self, cells, {.periodic = periodic});
          SCOPED_TRACE(fmt::format("stencil {}, depth {}, dims {}x{}x{}, periodic {}{}{}", domex::to_string(stencil),
                                   depth, grid.dims()[0], grid.dims()[1], grid.dims()[2], periodic[0], periodic[1],
                                   periodic[2]));
          domex::HaloPlan plan(grid, {.depth = depth, .stencil = stencil});
          domex::HaloPlan serial(alone, {.depth = depth, .stencil = stencil});
          const World w = world_of(grid, depth);
          const World one = world_of(alone, depth);
          auto d = filled_box<double>(w, w.mine(), 0, false, true);
          auto f = filled_box<float>(w, w.mine(), 1, false, true);
          auto all_d = filled_box<double>(one, one.mine(), 0, false, true);
          auto all_f = filled_box<float>(one, one.mine(), 1, false, true);
          plan.reverse_sum(d, f);
          serial.reverse_sum(all_d, all_f);
          long long wrong = 0;
          const RankBox& b = w.mine();
          for_each_cell(w, b, [&](Cell c, std::array<int, 3> direction) {
            if (direction != std::array<int, 3>{0, 0, 0}) return;
            const std::size_t at = w.index(b, c);
            const std::size_t global = one.index(one.mine(), {b.first[0] + c[0], b.first[1] + c[1], b.first[2] + c[2]});
            wrong += std::memcmp(&d[at], &all_d[global], sizeof(double)) == 0 &&
                             std::memcmp(&f[at], &all_f[global], sizeof(float)) == 0
                         ? 0
                         : 1;
          });
          EXPECT_EQ(wrong, 0);
        }
}

TEST(HaloPlanReverse, OneRanksBadFieldIsAnErrorAndThePlanStaysUsable) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto p = static_cast<std::size_t>(comm.size());
  const domex::detail::GhostSum sum;
  for (const bool periodic : {true, false})
    for (Stencil stencil : {Stencil::full, Stencil::faces}) {
      domex::CartesianGrid grid(comm, {3 * p + 1, 5, 6}, {.periodic = {periodic, periodic, periodic}});
      domex::HaloPlan plan(grid, {.depth = 1, .stencil = stencil});
      const World w = world_of(grid, 1);
      const std::size_t me = my_box(w);
      const auto d0 = filled_world<double>(w, 0, true);
      for (int bad : {0, comm.size() - 1, comm.size() / 2}) {
        SCOPED_TRACE(fmt::format("stencil {}, periodic {}, bad rank {}", domex::to_string(stencil), periodic, bad));
        auto d = d0[me];
        std::vector<double> other(plan.cells(), 1.0), short_field(plan.cells() - 1, 1.0);
        std::string error;
        try {
          if (comm.rank() == bad)
            plan.reverse_sum(d, short_field);
          else
            plan.reverse_sum(d, other);
        } catch (const domex::Error& e) {
          error = e.what();
        }
        if (comm.rank() == bad) {
          EXPECT_NE(error.find("field 1"), std::string::npos) << error;
          EXPECT_EQ(d, d0[me]);  // nothing touched
        } else if (!error.empty()) {
          EXPECT_NE(error.find("invalid"), std::string::npos) << error;
          if (stencil == Stencil::full) {
            EXPECT_NE(error.find("neighbour rank " + std::to_string(bad)), std::string::npos) << error;
            EXPECT_EQ(d, d0[me]);  // one round: all of it or none
          }
          // Ghosts unchanged in any case.
          long long ghosts_changed = 0;
          for_each_cell(w, w.mine(), [&](Cell c, std::array<int, 3> direction) {
            const std::size_t at = w.index(w.mine(), c);
            if (direction != std::array<int, 3>{0, 0, 0}) ghosts_changed += d[at] == d0[me][at] ? 0 : 1;
          });
          EXPECT_EQ(ghosts_changed, 0);
        } else {
          EXPECT_EQ(wrong_after_reverse(w, d, reference_reverse(w, d0, stencil, sum)[me], d0[me]), 0);
        }
        const int errors = comm.allreduce(error.empty() ? 0 : 1, MPI_SUM);
        if (periodic && stencil == Stencil::full && grid.dims() == std::array<int, 3>{2, 2, 2}) {
          EXPECT_EQ(errors, comm.size());
        }
        EXPECT_GE(errors, 1);
        // The plan still works afterwards, both ways, on every rank.
        auto again = d0[me];
        plan.reverse_sum(again);
        EXPECT_EQ(wrong_after_reverse(w, again, reference_reverse(w, d0, stencil, sum)[me], d0[me]), 0);
        Fields g = filled(plan);
        plan.exchange(g.id, g.twice, g.tagged);
        EXPECT_EQ(wrong_cells(plan, g), 0);
      }
    }
}

TEST(HaloPlanReverse, MisuseIsAClearError) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::CartesianGrid grid(comm, {8, 8, 8}, {.periodic = {true, true, true}});
  const World w = world_of(grid, 1);
  const std::size_t me = my_box(w);
  const auto d0 = filled_world<double>(w, 0, false);
  domex::HaloPlan plan(grid, {});
  EXPECT_THROW(plan.reverse_finish(), domex::Error);
  auto d = d0[me];
  plan.reverse_begin(d);
  EXPECT_THROW(plan.finish(), domex::Error);  // a reverse is in progress
  EXPECT_THROW(plan.reverse_begin(d), domex::Error);
  EXPECT_THROW(plan.begin(d), domex::Error);
  plan.reverse_finish();  // still completes it
  EXPECT_EQ(wrong_after_reverse(w, d, reference_reverse(w, d0, Stencil::full, domex::detail::GhostSum{})[me], d0[me]),
            0);
  Fields f = filled(plan);
  plan.begin(f.id);
  EXPECT_THROW(plan.reverse_finish(), domex::Error);  // an exchange is in progress
  plan.finish();
  // The baselines have no reverse: an error on every rank, nothing sent.
  for (HaloMethod method : {HaloMethod::naive, HaloMethod::neighbor_alltoallv}) {
    domex::HaloPlan baseline(grid, {.method = method});
    try {
      baseline.reverse_sum(d);
      ADD_FAILURE() << "no error from the reverse of " << domex::to_string(method);
    } catch (const domex::Error& error) {
      EXPECT_NE(std::string(error.what()).find("no reverse"), std::string::npos) << error.what();
    }
    baseline.exchange(f.id);
  }
}

TEST(ChooseDepth, FollowsTheCostBalance) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::CartesianGrid grid(comm, {40, 40, 40}, {.periodic = {true, true, true}});
  // Messages cost everything: exchange as rarely as allowed.
  EXPECT_EQ(domex::choose_depth(grid, Stencil::full,
                                {.seconds_per_cell_update = 1e-12, .seconds_per_message = 1.0, .seconds_per_byte = 1e-15,
                                 .max_depth = 3}),
            3);
  // Computation costs everything: redundant ghost work never pays.
  EXPECT_EQ(domex::choose_depth(grid, Stencil::full,
                                {.seconds_per_cell_update = 1.0, .seconds_per_message = 1e-15, .seconds_per_byte = 1e-15}),
            1);
}

}  // namespace

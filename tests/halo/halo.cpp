// SPDX-License-Identifier: BSD-3-Clause
#include <domex/halo/halo.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

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

// SPDX-License-Identifier: BSD-3-Clause
#include <domex/halo/lattice.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using domex::LatticePath;

/// A site's global coordinates: what every ghost must hold after an exchange.
struct Site {
  double g[4];
};

/// Process grids for P ranks with 1 to 3 split axes (4 split axes need 16 ranks).
std::vector<std::array<int, 4>> process_grids(int ranks) {
  std::vector<std::array<int, 4>> grids{{0, 0, 0, 0}};
  for (int axis = 0; axis < 4; ++axis) {
    std::array<int, 4> one{1, 1, 1, 1};
    one[static_cast<std::size_t>(axis)] = ranks;
    grids.push_back(one);
  }
  if (ranks == 4) grids.insert(grids.end(), {{2, 2, 1, 1}, {1, 1, 2, 2}, {2, 1, 1, 2}});
  if (ranks == 8) grids.insert(grids.end(), {{2, 2, 2, 1}, {1, 2, 2, 2}, {2, 1, 2, 2}, {4, 1, 1, 2}});
  return grids;
}

constexpr std::array<std::size_t, 4> lattice{9, 8, 10, 8};  // uneven blocks at 3 and 4 ranks

Site owner_value(const domex::LatticeGrid& grid, std::array<long, 4> local) {
  Site s{};
  for (std::size_t a = 0; a < 4; ++a) {
    const auto size = static_cast<long>(grid.global_sites()[a]);
    const long g = static_cast<long>(grid.offset()[a]) + local[a];
    s.g[a] = static_cast<double>((g % size + size) % size);
  }
  return s;
}

class LatticeHaloTest : public testing::TestWithParam<LatticePath> {};

TEST_P(LatticeHaloTest, EveryGhostHoldsItsOwnersValue) {
  domex::Comm comm{MPI_COMM_WORLD};
  for (const auto& dims : process_grids(comm.size())) {
    SCOPED_TRACE(testing::Message() << "dims " << dims[0] << "x" << dims[1] << "x" << dims[2] << "x" << dims[3]);
    domex::LatticeGrid grid(comm, lattice, {.dims = dims});
    domex::LatticeHalo halo(grid, {.site_bytes = sizeof(Site), .path = GetParam()});
    const auto n = grid.local_sites();
    std::vector<Site> field(halo.sites(), Site{{-1, -1, -1, -1}});
    std::size_t site = 0;
    for (long t = 0; t < static_cast<long>(n[3]); ++t)
      for (long z = 0; z < static_cast<long>(n[2]); ++z)
        for (long y = 0; y < static_cast<long>(n[1]); ++y)
          for (long x = 0; x < static_cast<long>(n[0]); ++x) field[site++] = owner_value(grid, {x, y, z, t});
    ASSERT_EQ(site, grid.volume());
    for (int round = 0; round < 3; ++round) halo.exchange(field);  // reuse of the persistent requests
    // A second field at another address: its own persistent requests.
    std::vector<Site> copy = field;
    halo.exchange(copy);
    // More fields than the halo keeps persistent requests for: the first one's
    // set is freed and built again; its ghosts are wiped first to prove it.
    std::vector<std::vector<Site>> more(9, field);
    for (auto& f : more) halo.exchange(f);
    std::fill(field.begin() + static_cast<long>(grid.volume()), field.end(), Site{{-1, -1, -1, -1}});
    halo.exchange(field);
    EXPECT_EQ(halo.messages_per_exchange(), 8u);
    std::size_t checked = 0;
    site = 0;
    for (long t = 0; t < static_cast<long>(n[3]); ++t)
      for (long z = 0; z < static_cast<long>(n[2]); ++z)
        for (long y = 0; y < static_cast<long>(n[1]); ++y)
          for (long x = 0; x < static_cast<long>(n[0]); ++x, ++site) {
            const std::array<long, 4> c{x, y, z, t};
            for (int axis = 0; axis < 4; ++axis)
              for (int step : {-1, +1}) {
                auto moved = c;
                moved[static_cast<std::size_t>(axis)] += step;
                const Site want = owner_value(grid, moved);
                const std::size_t at = halo.neighbour_index(site, axis, step);
                for (const auto* f : {&field, &copy})
                  for (int k = 0; k < 4; ++k) ASSERT_EQ((*f)[at].g[k], want.g[k]) << "site " << site << " axis " << axis << " step " << step;
                checked += at >= grid.volume() ? 1 : 0;
              }
          }
    std::size_t faces = 0;
    for (int axis = 0; axis < 4; ++axis) faces += 2 * halo.face_sites(axis);
    EXPECT_EQ(checked, faces);  // every ghost site was looked at
    EXPECT_EQ(halo.sites(), grid.volume() + faces);
    EXPECT_EQ(halo.bytes_per_exchange(), faces * sizeof(Site));
  }
}

TEST_P(LatticeHaloTest, WrongFieldSizeIsAnErrorOnEveryRankConcerned) {
  domex::Comm comm{MPI_COMM_WORLD};
  domex::LatticeGrid grid(comm, lattice);
  domex::LatticeHalo halo(grid, {.site_bytes = sizeof(Site), .path = GetParam()});
  const int bad = comm.size() - 1;
  bool concerned = comm.rank() == bad;
  for (int axis = 0; axis < 4; ++axis)
    for (int step : {-1, 1}) concerned = concerned || grid.neighbour(axis, step) == bad;
  std::vector<Site> field(halo.sites() - (comm.rank() == bad ? 1 : 0));
  bool threw = false;
  try {
    halo.begin(field);
    halo.finish();
  } catch (const domex::Error& error) {
    threw = true;
    const std::string text = error.what();
    if (comm.rank() == bad) EXPECT_NE(text.find("expected"), std::string::npos) << text;
    else EXPECT_NE(text.find("rank " + std::to_string(bad)), std::string::npos) << text;
  }
  EXPECT_EQ(threw, concerned);
  // The halo stays usable.
  field.resize(halo.sites());
  EXPECT_NO_THROW(halo.exchange(field));
}

INSTANTIATE_TEST_SUITE_P(Paths, LatticeHaloTest,
                         testing::Values(LatticePath::pack, LatticePath::datatype, LatticePath::contiguous),
                         [](const auto& info) { return std::string(domex::to_string(info.param)); });

TEST(LatticeGrid, DifferentArgumentsAreAnErrorOnEveryRank) {
  domex::Comm comm{MPI_COMM_WORLD};
  std::array<std::size_t, 4> sites{8, 8, 8, 8};
  if (comm.rank() == comm.size() - 1) sites[2] = 0;
  EXPECT_THROW(domex::LatticeGrid(comm, sites), domex::Error);
  EXPECT_THROW(domex::LatticeGrid(comm, {8, 8, 8, 8}, {.dims = {comm.size() + 1, 1, 1, 1}}), domex::Error);
}

}  // namespace

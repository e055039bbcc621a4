// SPDX-License-Identifier: BSD-3-Clause
// Tests of domex-md: forces, energy and virial of a displaced lattice against
// a direct sum over all atoms and their periodic images; the thermo of the
// perfect in.lj lattice at step 0 (LAMMPS's printed line); trajectories at np
// 2..8 against np 1 over 100 steps; energy drift; a checkpoint restarted at
// the same np is bitwise the uninterrupted run, at another np within the
// trajectory bound; configuration errors name the value.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "config.hpp"
#include "md.hpp"

namespace {

namespace fs = std::filesystem;
using namespace domex::md;
using domex::Point;

Config small(long cells, long steps) {
  Config config;
  config.cells = cells;
  config.steps = steps;
  config.output = "";
  config.thermo = 10;
  return config;
}

/// Every atom moved by up to `amplitude` per axis (a hash of its id: the same at any np).
void displace_all(System& system, double amplitude, std::uint64_t seed) {
  const std::vector<std::int64_t> ids(system.ids().begin(), system.ids().begin() + system.local_count());
  for (const std::int64_t id : ids) {
    std::mt19937_64 random(seed ^ static_cast<std::uint64_t>(id) * 0x9e3779b97f4a7c15ULL);
    std::uniform_real_distribution<double> u(-amplitude, amplitude);
    system.displace(id, {u(random), u(random), u(random)});
  }
}

TEST(DomexMd, ForcesEnergyAndVirialEqualADirectSum) {
  domex::Comm comm{MPI_COMM_WORLD};
  for (const std::string overlap : {"on", "off"}) {
    Config config = small(4, 0);  // 256 atoms, side 6.72 > 2 (cutoff + skin)
    config.overlap = overlap;
    System system(comm, config);
    displace_all(system, 0.25, 11);
    system.setup();
    const Thermo thermo = system.thermo();
    const auto atoms = system.gather();
    const double side = system.side();
    // Direct sum: every pair once, the nearest image (the cutoff is below half the side).
    const std::size_t n = atoms.id.size();
    std::vector<Point> force(n, Point{0, 0, 0});
    double energy = 0, virial = 0;
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = a + 1; b < n; ++b) {
        double d[3], r2 = 0;
        for (int c = 0; c < 3; ++c) {
          d[c] = atoms.x[a][c] - atoms.x[b][c];
          d[c] -= side * std::round(d[c] / side);
          r2 += d[c] * d[c];
        }
        if (r2 >= config.cutoff * config.cutoff) continue;
        const double r6inv = 1 / (r2 * r2 * r2);
        const double fpair = r6inv * (48 * r6inv - 24) / r2;
        for (int c = 0; c < 3; ++c) {
          force[a][c] += d[c] * fpair;
          force[b][c] -= d[c] * fpair;
        }
        energy += 4 * r6inv * (r6inv - 1);
        virial += r2 * fpair;
      }
    // This rank's owned forces, by id.
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < system.local_count(); ++i) {
      const auto k = static_cast<std::size_t>(
          std::lower_bound(atoms.id.begin(), atoms.id.end(), system.ids()[i]) - atoms.id.begin());
      for (int c = 0; c < 3; ++c) {
        worst = std::max(worst, std::abs(system.forces()[i][c] - force[k][c]));
        scale = std::max(scale, std::abs(force[k][c]));
      }
    }
    EXPECT_LT(worst, 1e-11 * scale) << "overlap " << overlap << ", np " << comm.size() << ", largest force " << scale;
    const double atoms_count = static_cast<double>(n), volume = side * side * side;
    EXPECT_NEAR(thermo.e_pair, energy / atoms_count, 1e-12 * std::abs(energy / atoms_count));
    double kinetic = 0;
    for (const Point& v : atoms.v) kinetic += 0.5 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    EXPECT_NEAR(thermo.pressure, (2 * kinetic + virial) / (3 * volume), 1e-11 * std::abs(virial / volume));
  }
}

TEST(DomexMd, ThePerfectInLjLatticePrintsLammpsStepZero) {
  // LAMMPS's in.lj at step 0 (20^3 cells, 32,000 atoms), as LAMMPS prints
  // it: Temp 1.44, E_pair -6.7733681, TotEng -4.6134356, Press -5.0197073
  // (a perfect lattice: E_pair and the virial do not depend on velocities).
  domex::Comm comm{MPI_COMM_WORLD};
  System system(comm, small(20, 0));
  system.setup();
  const Thermo t = system.thermo();
  EXPECT_EQ(fmt::format("{:.8g} {:.8g} {:.8g} {:.8g}", t.temperature, t.e_pair, t.total_energy, t.pressure),
            "1.44 -6.7733681 -4.6134356 -5.0197073");
  EXPECT_EQ(system.atoms(), 32000);
  const double total = comm.allreduce(static_cast<double>(system.local_count()), MPI_SUM);
  EXPECT_EQ(total, 32000.0);
}

/// Atoms after `steps` steps of a 5^3-cell melt (500 atoms), optionally checkpointed.
domex::md::Atoms trajectory(domex::Comm& comm, long steps, const std::string& check = "no") {
  Config config = small(5, steps);
  config.neigh_check = check;
  config.neigh_every = check == "yes" ? 1 : 10;
  System system(comm, config);
  system.setup();
  while (system.steps() < steps) system.step();
  return system.gather();
}

TEST(DomexMd, TrajectoriesAgreeWithOneRankOver100Steps) {
  domex::Comm comm{MPI_COMM_WORLD};
  const auto here = trajectory(comm, 100);
  // One rank alone, on a communicator of its own (every rank computes it).
  MPI_Comm self_mpi;
  MPI_Comm_split(MPI_COMM_WORLD, comm.rank(), 0, &self_mpi);
  domex::md::Atoms alone;
  {
    domex::Comm self{self_mpi};
    alone = trajectory(self, 100);
  }
  MPI_Comm_free(&self_mpi);
  ASSERT_EQ(here.id, alone.id);
  double worst = 0;
  for (std::size_t k = 0; k < here.id.size(); ++k)
    for (int c = 0; c < 3; ++c) {
      worst = std::max(worst, std::abs(here.x[k][c] - alone.x[k][c]));
      worst = std::max(worst, std::abs(here.v[k][c] - alone.v[k][c]));
    }
  // The stated bound: 1e-9 in positions and velocities after 100 steps
  // (only summation orders differ; measured ~1e-13).
  EXPECT_LT(worst, 1e-9) << "np " << comm.size();
}

TEST(DomexMd, EnergyDriftStaysWithinItsBound) {
  // NVE with lists rebuilt whenever an atom moved half the skin. in.lj's
  // potential is cut without a shift, so the total energy jumps by V(r_c)
  // whenever a pair crosses the cutoff (LAMMPS's in.lj log drifts from
  // -4.6134 to -4.6224 per atom in 100 steps, as this run does); the energy
  // with the shifted potential, E - (pairs inside r_c) V(r_c), has no such
  // jumps: its change per atom over 200 steps stays within 5e-4 (measured
  // 1.4e-4 at np 1 and 2, Zen 4; the unshifted total moved 7.9e-3).
  domex::Comm comm{MPI_COMM_WORLD};
  Config config = small(5, 200);
  config.neigh_check = "yes";
  config.neigh_every = 1;
  config.thermo = 200;
  System system(comm, config);
  const double rc6 = std::pow(config.cutoff, -6), at_cutoff = 4 * rc6 * (rc6 - 1);
  auto shifted = [&] {
    const double total = system.thermo().total_energy;
    const double inside = comm.allreduce(system.pair_sums().inside, MPI_SUM);
    return total - inside * at_cutoff / static_cast<double>(system.atoms());
  };
  system.setup();
  const double first = shifted();
  while (system.steps() < config.steps) system.step();
  const double last = shifted();
  EXPECT_LT(std::abs(last - first), 5e-4) << "from " << first << " to " << last;
}

TEST(DomexMd, RestartIsBitwiseAtTheSameNpAndWithinTheBoundAtAnother) {
  domex::Comm comm{MPI_COMM_WORLD};
  char name[] = "/tmp/domex-md-test-XXXXXX";
  std::string folder;
  if (comm.rank() == 0) folder = mkdtemp(name);
  int length = static_cast<int>(folder.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  folder.resize(static_cast<std::size_t>(length));
  MPI_Bcast(folder.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  const fs::path checkpoint = fs::path(folder) / "checkpoint.dmx";
  Config config = small(5, 60);
  config.neigh_every = 7;  // the checkpoint (step 30) falls between two rebuilds
  std::uint64_t full_sum = 0;
  {
    System system(comm, config);
    system.setup();
    while (system.steps() < 30) system.step();
    system.write_checkpoint(checkpoint);
    while (system.steps() < 60) system.step();
    full_sum = system.checksum();
  }
  {
    System restarted(comm, config, false);
    restarted.read_checkpoint(checkpoint);
    EXPECT_EQ(restarted.steps(), 30);
    restarted.setup();
    while (restarted.steps() < 60) restarted.step();
    EXPECT_EQ(restarted.checksum(), full_sum) << "np " << comm.size();
  }
  // Another np: the first rank alone goes on from the same checkpoint.
  MPI_Comm self_mpi;
  MPI_Comm_split(MPI_COMM_WORLD, comm.rank(), 0, &self_mpi);
  {
    domex::Comm self{self_mpi};
    System restarted(self, config, false);
    restarted.read_checkpoint(checkpoint);
    restarted.setup();
    while (restarted.steps() < 60) restarted.step();
    System straight(self, config);
    straight.setup();
    while (straight.steps() < 60) straight.step();
    const auto a = restarted.gather(), b = straight.gather();
    double worst = 0;
    for (std::size_t k = 0; k < a.id.size(); ++k)
      for (int c = 0; c < 3; ++c) worst = std::max(worst, std::abs(a.x[k][c] - b.x[k][c]));
    EXPECT_LT(worst, 1e-9);
  }
  MPI_Comm_free(&self_mpi);
  comm.barrier();
  if (comm.rank() == 0) fs::remove_all(folder);
}

TEST(DomexMd, BadConfigurationsNameTheValue) {
  domex::Comm comm{MPI_COMM_WORLD};
  auto message = [&](Config config) {
    try {
      validate(config, comm);
    } catch (const domex::Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  Config good = small(5, 10);
  EXPECT_EQ(message(good), "");
  Config c = good;
  c.cells = 2;  // side 3.4 < 2 (2.5 + 0.3)
  EXPECT_NE(message(c).find("--cells 2"), std::string::npos);
  c = good;
  c.density = -1;
  EXPECT_NE(message(c).find("--density -1"), std::string::npos);
  c = good;
  c.neigh_check = "maybe";
  EXPECT_NE(message(c).find("--neigh-check maybe"), std::string::npos);
  c = good;
  c.overlap = "sometimes";
  EXPECT_NE(message(c).find("--overlap sometimes"), std::string::npos);
  c = good;
  c.dt = 0;
  EXPECT_NE(message(c).find("--dt 0"), std::string::npos);
}

}  // namespace

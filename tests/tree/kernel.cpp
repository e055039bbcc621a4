// SPDX-License-Identifier: BSD-3-Clause
#include <domex/tree/kernel.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

TEST(Kernel, GravityMatchesFp64DirectSum) {
  std::printf("kernel target %s\n", domex::gravity_kernel_target().c_str());
  std::mt19937_64 random(29);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (std::size_t targets : {1ul, 7ul, 16ul, 45ul, 64ul}) {  // whole blocks of 4 targets and remainders
    const std::size_t sources = 777;
    const double eps = 1.0 / 32;
    std::vector<double> tx(targets), ty(targets), tz(targets), sx(sources), sy(sources), sz(sources), sm(sources);
    for (std::size_t i = 0; i < targets; ++i) tx[i] = 0.1 * u(random), ty[i] = 0.1 * u(random), tz[i] = 0.1 * u(random);
    for (std::size_t j = 0; j < sources; ++j)
      sx[j] = u(random), sy[j] = u(random), sz[j] = u(random), sm[j] = 1.0 + u(random);
    // One source on top of target 0 and eps = 0 in a second pass: no NaN.
    sx[0] = tx[0], sy[0] = ty[0], sz[0] = tz[0];
    for (double softening : {eps, 0.0}) {
      std::vector<float> fx(tx.begin(), tx.end()), fy(ty.begin(), ty.end()), fz(tz.begin(), tz.end());
      std::vector<float> gx(sx.begin(), sx.end()), gy(sy.begin(), sy.end()), gz(sz.begin(), sz.end()),
          gm(sm.begin(), sm.end());
      std::vector<float> ax(targets, 0), ay(targets, 0), az(targets, 0);
      domex::gravity_kernel({fx, fy, fz, ax, ay, az}, {gx, gy, gz, gm}, static_cast<float>(softening * softening));
      for (std::size_t i = 0; i < targets; ++i) {
        double rx = 0, ry = 0, rz = 0;
        for (std::size_t j = 0; j < sources; ++j) {
          // The reference uses the fp32-rounded inputs: this checks the kernel's arithmetic.
          const double dx = double(gx[j]) - fx[i], dy = double(gy[j]) - fy[i], dz = double(gz[j]) - fz[i];
          const double r2 = dx * dx + dy * dy + dz * dz + double(float(softening * softening));
          if (r2 == 0) continue;
          const double f = double(gm[j]) / (r2 * std::sqrt(r2));
          rx += f * dx, ry += f * dy, rz += f * dz;
        }
        const double norm = std::sqrt(rx * rx + ry * ry + rz * rz);
        const double error = std::sqrt((ax[i] - rx) * (ax[i] - rx) + (ay[i] - ry) * (ay[i] - ry) + (az[i] - rz) * (az[i] - rz));
        ASSERT_TRUE(std::isfinite(ax[i]) && std::isfinite(ay[i]) && std::isfinite(az[i]));
        EXPECT_LT(error / norm, 2e-5) << "target " << i << " of " << targets << " eps " << softening;
      }
    }
  }
}

TEST(Kernel, QuadrupoleTermReducesTheErrorOfADistantCluster) {
  std::mt19937_64 random(31);
  std::uniform_real_distribution<double> u(-0.05, 0.05);
  std::vector<domex::Point> cluster(200);
  std::vector<double> masses(200);
  domex::Moments moments;
  domex::Point weighted{0, 0, 0};
  for (std::size_t j = 0; j < cluster.size(); ++j) {
    cluster[j] = {u(random) * 2, u(random), u(random) * 0.5};  // elongated: a strong quadrupole
    masses[j] = 1.0 + 10 * u(random);
    moments.mass += masses[j];
    for (int a = 0; a < 3; ++a) weighted[a] += masses[j] * cluster[j][a];
  }
  for (int a = 0; a < 3; ++a) moments.centre[a] = weighted[a] / moments.mass;
  for (std::size_t j = 0; j < cluster.size(); ++j) {
    domex::Point d;
    for (int a = 0; a < 3; ++a) d[a] = cluster[j][a] - moments.centre[a];
    const double m = masses[j];
    auto& q = moments.quadrupole;
    q[0] += m * d[0] * d[0], q[1] += m * d[1] * d[1], q[2] += m * d[2] * d[2];
    q[3] += m * d[0] * d[1], q[4] += m * d[0] * d[2], q[5] += m * d[1] * d[2];
  }
  const std::vector<domex::Point> targets{{0.6, 0.1, -0.2}, {-0.3, 0.5, 0.4}, {0.2, -0.1, 0.7}};
  for (double eps2 : {0.0, 0.04}) {
  std::vector<domex::Point> quadrupole(targets.size(), {0, 0, 0});
  domex::quadrupole_kernel(targets, quadrupole, std::span<const domex::Moments>(&moments, 1), eps2);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    domex::Point exact{0, 0, 0}, monopole{0, 0, 0};
    for (std::size_t j = 0; j < cluster.size(); ++j) {
      domex::Point d;
      for (int a = 0; a < 3; ++a) d[a] = cluster[j][a] - targets[i][a];
      const double r = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2);
      for (int a = 0; a < 3; ++a) exact[a] += masses[j] * d[a] / (r * r * r);
    }
    domex::Point d;
    for (int a = 0; a < 3; ++a) d[a] = moments.centre[a] - targets[i][a];
    const double r = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2);
    double monopole_error = 0, quadrupole_error = 0, norm = 0;
    for (int a = 0; a < 3; ++a) {
      monopole[a] = moments.mass * d[a] / (r * r * r);
      monopole_error += (monopole[a] - exact[a]) * (monopole[a] - exact[a]);
      quadrupole_error += (monopole[a] + quadrupole[i][a] - exact[a]) * (monopole[a] + quadrupole[i][a] - exact[a]);
      norm += exact[a] * exact[a];
    }
    EXPECT_LT(std::sqrt(quadrupole_error), 0.1 * std::sqrt(monopole_error)) << "target " << i << " eps2 " << eps2;
    EXPECT_GT(std::sqrt(monopole_error / norm), 1e-4);  // the test would be empty otherwise
  }
  }
}

}  // namespace

// SPDX-License-Identifier: BSD-3-Clause
#include "wilson.hpp"

#include <domex/comm/reduce.hpp>

#include <mpi.h>

#include <cmath>

namespace domex::lattice {
namespace {

/// Complex product without the C99 Annex G inf/nan fix-ups of operator*.
inline Complex mul(Complex a, Complex b) noexcept {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}
inline Complex conj_mul(Complex a, Complex b) noexcept {  // conj(a) * b
  return {a.real() * b.real() + a.imag() * b.imag(), a.real() * b.imag() - a.imag() * b.real()};
}

/// gamma_mu in the DeGrand-Rossi basis: (gamma chi)_s = phase[s] * chi[column[s]].
struct Gamma {
  int column[4];
  Complex phase[4];
};
const Gamma gammas[4] = {
    {{3, 2, 1, 0}, {{0, 1}, {0, 1}, {0, -1}, {0, -1}}},  // gamma_x
    {{3, 2, 1, 0}, {{-1, 0}, {1, 0}, {1, 0}, {-1, 0}}},  // gamma_y
    {{2, 3, 0, 1}, {{0, 1}, {0, -1}, {0, -1}, {0, 1}}},  // gamma_z
    {{2, 3, 0, 1}, {{1, 0}, {1, 0}, {1, 0}, {1, 0}}},    // gamma_t
};

/// SplitMix64 (Steele et al. 2014): a counter-based stream per (seed, key).
struct SplitMix {
  std::uint64_t state;
  std::uint64_t next() noexcept {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53 * 2.0 - 1.0; }  // [-1, 1)
};

SplitMix stream(std::uint64_t seed, std::uint64_t key) {
  SplitMix mix{seed};
  mix.state ^= SplitMix{key * 0x632be59bd9b4e019ull}.next();
  return mix;
}

/// A random SU(3) matrix: random rows, Gram-Schmidt, third row = conj(row0 x row1).
Su3 random_su3(SplitMix& random) {
  Su3 u{};
  for (auto& row : u.m)
    for (auto& z : row) z = {random.uniform(), random.uniform()};
  const auto normalise = [](Complex* row) {
    double norm = 0;
    for (int c = 0; c < 3; ++c) norm += std::norm(row[c]);
    norm = 1.0 / std::sqrt(norm);
    for (int c = 0; c < 3; ++c) row[c] *= norm;
  };
  normalise(u.m[0]);
  Complex projection{};
  for (int c = 0; c < 3; ++c) projection += conj_mul(u.m[0][c], u.m[1][c]);
  for (int c = 0; c < 3; ++c) u.m[1][c] -= mul(projection, u.m[0][c]);
  normalise(u.m[1]);
  for (int c = 0; c < 3; ++c) {
    const int a = (c + 1) % 3, b = (c + 2) % 3;
    u.m[2][c] = std::conj(mul(u.m[0][a], u.m[1][b]) - mul(u.m[0][b], u.m[1][a]));
  }
  return u;
}

void timed(double& total, double start) { total += MPI_Wtime() - start; }

}  // namespace

Wilson::Wilson(const LatticeGrid& grid, double kappa, std::uint64_t seed, LatticePath path)
    : grid_(&grid), kappa_(kappa), halo_(grid, {.site_bytes = sizeof(Spinor), .path = path}) {
  const std::size_t volume = grid.volume();
  LatticeHalo link_halo(grid, {.site_bytes = sizeof(Links), .path = path});
  links_.resize(link_halo.sites());
  for (std::size_t site = 0; site < volume; ++site) {
    auto random = stream(seed, global_index(site));
    for (auto& u : links_[site].u) u = random_su3(random);
  }
  link_halo.exchange(links_);  // once: U_mu(x - mu) of the boundary sites lives on the neighbour
  hops_.resize(8 * volume);
  for (std::size_t site = 0; site < volume; ++site) {
    bool interior = true;
    for (int mu = 0; mu < 4; ++mu)
      for (int side = 0; side < 2; ++side) {
        const std::size_t at = halo_.neighbour_index(site, mu, side == 0 ? +1 : -1);
        hops_[8 * site + static_cast<std::size_t>(2 * mu + side)] = static_cast<std::uint32_t>(at);
        interior = interior && at < volume;
      }
    (interior ? interior_ : boundary_).push_back(static_cast<std::uint32_t>(site));
  }
}

std::uint64_t Wilson::global_index(std::size_t site) const noexcept {
  const auto n = grid_->local_sites(), offset = grid_->offset(), global = grid_->global_sites();
  std::uint64_t index = 0;
  std::array<std::size_t, 4> c{};
  for (std::size_t a = 0; a < 4; ++a) {
    c[a] = site % n[a] + offset[a];
    site /= n[a];
  }
  for (std::size_t a = 4; a-- > 0;) index = index * global[a] + c[a];
  return index;
}

std::vector<Spinor> Wilson::random_field(std::uint64_t seed) const {
  std::vector<Spinor> field(halo_.sites());
  for (std::size_t site = 0; site < volume(); ++site) {
    auto random = stream(seed ^ 0x5eed5eed5eedull, global_index(site));
    for (auto& spin : field[site].c)
      for (auto& z : spin) z = {random.uniform(), random.uniform()};
  }
  return field;
}

namespace {

/// sum += (1 -+ gamma) U psi (forward: U_mu(x), minus) or (1 + gamma) U^dagger psi (backward).
template <bool forward>
inline void add_hop(Spinor& sum, const Su3& u, const Spinor& psi, const Gamma& g) noexcept {
  Spinor chi;
  for (int s = 0; s < 4; ++s)
    for (int a = 0; a < 3; ++a) {
      Complex z{};
      for (int b = 0; b < 3; ++b) z += forward ? mul(u.m[a][b], psi.c[s][b]) : conj_mul(u.m[b][a], psi.c[s][b]);
      chi.c[s][a] = z;
    }
  constexpr double sign = forward ? -1.0 : 1.0;
  for (int s = 0; s < 4; ++s)
    for (int a = 0; a < 3; ++a) sum.c[s][a] += chi.c[s][a] + sign * mul(g.phase[s], chi.c[g.column[s]][a]);
}

}  // namespace

void Wilson::apply_sites(const std::vector<Spinor>& in, std::vector<Spinor>& out,
                         std::span<const std::uint32_t> sites) const {
  // The same operations in the same order for every site, wherever its
  // neighbours live: the result is bitwise independent of the decomposition.
  for (const std::uint32_t site : sites) {
    Spinor sum{};
    const std::uint32_t* hop = &hops_[8 * static_cast<std::size_t>(site)];
    for (int mu = 0; mu < 4; ++mu) {
      add_hop<true>(sum, links_[site].u[mu], in[hop[2 * mu]], gammas[mu]);
      add_hop<false>(sum, links_[hop[2 * mu + 1]].u[mu], in[hop[2 * mu + 1]], gammas[mu]);
    }
    Spinor& result = out[site];
    const Spinor& self = in[site];
    for (int s = 0; s < 4; ++s)
      for (int a = 0; a < 3; ++a) result.c[s][a] = self.c[s][a] - kappa_ * sum.c[s][a];
  }
}

void Wilson::apply(std::vector<Spinor>& in, std::vector<Spinor>& out) {
  double start = MPI_Wtime();
  halo_.begin(in);
  timed(timers_.halo, start);
  start = MPI_Wtime();
  apply_sites(in, out, interior_);
  timed(timers_.compute, start);
  start = MPI_Wtime();
  halo_.finish();
  timed(timers_.halo, start);
  start = MPI_Wtime();
  apply_sites(in, out, boundary_);
  timed(timers_.compute, start);
  timers_.flops += flops_per_site * static_cast<double>(volume());
}

void Wilson::apply_normal(std::vector<Spinor>& in, std::vector<Spinor>& out, std::vector<Spinor>& scratch) {
  // D^dagger D = gamma_5 D gamma_5 D, gamma_5 = diag(1, 1, -1, -1).
  const auto gamma5 = [&](std::vector<Spinor>& field) {
    for (std::size_t site = 0; site < volume(); ++site)
      for (int s = 2; s < 4; ++s)
        for (auto& z : field[site].c[s]) z = -z;
  };
  apply(in, scratch);
  gamma5(scratch);
  apply(scratch, out);
  gamma5(out);
}

Complex local_dot(std::span<const Spinor> a, std::span<const Spinor> b) noexcept {
  Complex sum{};
  for (std::size_t site = 0; site < a.size(); ++site)
    for (int s = 0; s < 4; ++s)
      for (int c = 0; c < 3; ++c) sum += conj_mul(a[site].c[s][c], b[site].c[s][c]);
  return sum;
}

CgResult cg(Wilson& op, const std::vector<Spinor>& b, std::vector<Spinor>& x, CgOptions options) {
  const std::size_t volume = op.volume(), sites = op.field_sites();
  const Comm& comm = op.grid().comm();
  Timers& timers = op.timers();
  const auto owned = [&](const std::vector<Spinor>& f) { return std::span<const Spinor>(f.data(), volume); };
  const auto vector_flops = [&](double per_complex) { timers.flops += per_complex * 12.0 * static_cast<double>(volume); };
  const auto blocking_sum = [&](std::span<Complex> values) {
    const double start = MPI_Wtime();
    allreduce(comm, values);
    timed(timers.allreduce, start);
  };

  x.assign(sites, Spinor{});
  std::vector<Spinor> r = b, p = b, ap(sites), scratch(sites);
  std::array<Complex, 2> sums{local_dot(owned(b), owned(b)), {}};
  blocking_sum(std::span(sums).first(1));
  const double bb = sums[0].real();
  double rr = bb;
  CgResult result;
  result.residuals.push_back(1.0);
  if (bb == 0) {
    result.converged = true;
    return result;
  }
  while (result.iterations < options.max_iterations) {
    op.apply_normal(p, ap, scratch);
    double start = MPI_Wtime();
    sums[0] = local_dot(owned(p), owned(ap));
    vector_flops(8);
    timed(timers.compute, start);
    blocking_sum(std::span(sums).first(1));
    const double alpha = rr / sums[0].real();
    start = MPI_Wtime();
    for (std::size_t site = 0; site < volume; ++site)
      for (int s = 0; s < 4; ++s)
        for (int c = 0; c < 3; ++c) r[site].c[s][c] -= alpha * ap[site].c[s][c];
    sums[1] = local_dot(owned(r), owned(r));
    vector_flops(4 + 8);
    timed(timers.compute, start);
    // |r|^2 in flight while x is updated (the overlap a solver can have).
    AllreduceRequest pending;
    start = MPI_Wtime();
    if (options.overlap) pending = iallreduce(comm, std::span(sums).subspan(1, 1));
    else allreduce(comm, std::span(sums).subspan(1, 1));
    timed(timers.allreduce, start);
    start = MPI_Wtime();
    for (std::size_t site = 0; site < volume; ++site)
      for (int s = 0; s < 4; ++s)
        for (int c = 0; c < 3; ++c) x[site].c[s][c] += alpha * p[site].c[s][c];
    vector_flops(4);
    timed(timers.compute, start);
    start = MPI_Wtime();
    pending.wait();
    timed(timers.allreduce, start);
    const double rr_new = sums[1].real();
    ++result.iterations;
    result.residuals.push_back(std::sqrt(rr_new / bb));
    if (result.residuals.back() <= options.tolerance) {
      result.converged = true;
      break;
    }
    const double beta = rr_new / rr;
    rr = rr_new;
    start = MPI_Wtime();
    for (std::size_t site = 0; site < volume; ++site)
      for (int s = 0; s < 4; ++s)
        for (int c = 0; c < 3; ++c) p[site].c[s][c] = r[site].c[s][c] + beta * p[site].c[s][c];
    vector_flops(4);
    timed(timers.compute, start);
  }
  // The true residual, so a drifting recurrence cannot claim convergence.
  op.apply_normal(x, ap, scratch);
  std::array<Complex, 1> rest{};
  for (std::size_t site = 0; site < volume; ++site)
    for (int s = 0; s < 4; ++s)
      for (int c = 0; c < 3; ++c) rest[0] += std::norm(b[site].c[s][c] - ap[site].c[s][c]);
  blocking_sum(rest);
  result.true_residual = std::sqrt(rest[0].real() / bb);
  return result;
}

}  // namespace domex::lattice

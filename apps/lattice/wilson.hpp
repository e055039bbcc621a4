// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The Wilson-Dirac operator on a 4-D lattice with SU(3) links, distributed
// with domex::LatticeHalo, and the conjugate-gradient solve of
// (D^dagger D) x = b (CGNR), the communication pattern of lattice QCD.
//
//   D psi(x) = psi(x) - kappa * sum_mu [ (1 - gamma_mu) U_mu(x) psi(x + mu)
//                                      + (1 + gamma_mu) U_mu(x - mu)^dagger psi(x - mu) ]
//
// Gamma matrices in the DeGrand-Rossi (chiral) basis, gamma_5 = diag(1, 1, -1, -1),
// so D^dagger = gamma_5 D gamma_5. Periodic boundaries in all four directions.

#include <domex/comm/comm.hpp>
#include <domex/halo/lattice.hpp>

#include <array>
#include <complex>
#include <cstdint>
#include <span>
#include <vector>

namespace domex::lattice {

using Complex = std::complex<double>;

/// A 3x3 complex matrix (an SU(3) link).
struct Su3 {
  Complex m[3][3];
};
/// 4 spins x 3 colours: 192 bytes.
struct Spinor {
  Complex c[4][3];
};
/// The 4 links leaving one site.
struct Links {
  Su3 u[4];
};

/// Floating-point operations of one site of D as implemented: per hop
/// 4 SU(3) mat-vecs (4 * 66) + the (1 -+ gamma) combination (24) + the
/// accumulation (24) = 312, eight hops, and psi - kappa * sum (48). The gamma
/// phases (+-1, +-i) are counted as free. (Codes with spin projection do 1320.)
inline constexpr double flops_per_site = 8 * 312 + 48;

/// Where the time of the solve goes (seconds, this rank).
struct Timers {
  double compute = 0;    ///< operator arithmetic and vector updates
  double halo = 0;       ///< begin() + finish() of the spinor exchanges
  double allreduce = 0;  ///< blocking waits of the dot-product sums
  double flops = 0;      ///< floating-point operations done (operator and vectors)
};

/// A random SU(3) gauge field (fixed seed, the same for any decomposition:
/// each link comes from a counter-based generator of its global site and
/// direction, reunitarised by Gram-Schmidt) and the operator D on it.
class Wilson {
 public:
  /// Collective over the grid's communicator.
  Wilson(const LatticeGrid& grid, double kappa, std::uint64_t seed, LatticePath path);

  [[nodiscard]] const LatticeGrid& grid() const noexcept { return *grid_; }
  [[nodiscard]] LatticeHalo& halo() noexcept { return halo_; }
  [[nodiscard]] std::size_t volume() const noexcept { return grid_->volume(); }
  /// Elements every spinor field needs (owned sites, then the ghost faces).
  [[nodiscard]] std::size_t field_sites() const noexcept { return halo_.sites(); }
  [[nodiscard]] Timers& timers() noexcept { return timers_; }

  /// out = D in on the owned sites. Exchanges in's ghosts, overlapped with
  /// the interior sites: begin(), interior, finish(), boundary. Every site's
  /// arithmetic is in a fixed order, so the result is bitwise independent of
  /// the decomposition and the path.
  void apply(std::vector<Spinor>& in, std::vector<Spinor>& out);
  /// out = D^dagger D in (two exchanges); `scratch` is a field of field_sites().
  void apply_normal(std::vector<Spinor>& in, std::vector<Spinor>& out, std::vector<Spinor>& scratch);
  /// Only the arithmetic of D on the given owned sites (ghosts must be current).
  void apply_sites(const std::vector<Spinor>& in, std::vector<Spinor>& out, std::span<const std::uint32_t> sites) const;
  [[nodiscard]] std::span<const std::uint32_t> interior_sites() const noexcept { return interior_; }
  [[nodiscard]] std::span<const std::uint32_t> boundary_sites() const noexcept { return boundary_; }

  /// A random spinor field (the source b), the same for any decomposition.
  [[nodiscard]] std::vector<Spinor> random_field(std::uint64_t seed) const;
  /// Global lexicographic index (x fastest) of owned site `site`.
  [[nodiscard]] std::uint64_t global_index(std::size_t site) const noexcept;

 private:
  const LatticeGrid* grid_;
  double kappa_;
  LatticeHalo halo_;
  std::vector<Links> links_;         // owned sites and ghosts (for U(x - mu) on the boundary)
  std::vector<std::uint32_t> hops_;  // 8 per owned site: x + mu, x - mu for mu = 0..3
  std::vector<std::uint32_t> interior_, boundary_;
  Timers timers_;
};

/// Result of cg().
struct CgResult {
  int iterations = 0;
  bool converged = false;
  std::vector<double> residuals;  ///< |r_k| / |b|, k = 0 .. iterations
  double true_residual = 0;       ///< |b - A x| / |b| recomputed at the end
};

struct CgOptions {
  double tolerance = 1e-10;  ///< stop when |r| / |b| <= tolerance
  int max_iterations = 1000;
  /// Overlap the |r|^2 sum (MPI_Iallreduce) with the update of x; false: blocking.
  bool overlap = true;
};

/// Solves (D^dagger D) x = b by conjugate gradients from x = 0. Collective.
/// Dot products are summed locally in site order, then over ranks.
CgResult cg(Wilson& op, const std::vector<Spinor>& b, std::vector<Spinor>& x, CgOptions options = {});

/// <a, b> = sum conj(a) b over the owned sites of this rank (site order).
[[nodiscard]] Complex local_dot(std::span<const Spinor> a, std::span<const Spinor> b) noexcept;

}  // namespace domex::lattice

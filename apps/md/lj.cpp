// SPDX-License-Identifier: BSD-3-Clause
// The LJ pair loop in vectors of neighbours (Google Highway, dispatched at
// run time to the widest instruction set of the CPU: AVX-512, AVX2, ...):
// per particle, its neighbours' positions gathered a vector at a time, the
// forces on them subtracted lane by lane; the particle's own force summed in
// lanes and reduced at the end of its list.
// The list's last partial vector is copied, padded with the particle itself
// and masked off.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "apps/md/lj.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>

#include "lj.hpp"

HWY_BEFORE_NAMESPACE();
namespace domex::md {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <bool Energy>
void Pass(const double* HWY_RESTRICT x, double* HWY_RESTRICT f, const std::size_t* HWY_RESTRICT offsets,
          const std::size_t* HWY_RESTRICT ghost_begin, const std::uint32_t* HWY_RESTRICT neighbours, std::size_t begin,
          std::size_t end, int which, double cutoff2, double* sums) {
  const hn::ScalableTag<double> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::RebindToUnsigned<decltype(d)> d64;
  const hn::Rebind<std::uint32_t, decltype(d)> du;
  const std::size_t lanes = hn::Lanes(d);
  const auto cut2 = hn::Set(d, cutoff2);
  const auto one = hn::Set(d, 1.0);
  const auto c48 = hn::Set(d, 48.0);
  const auto c24 = hn::Set(d, 24.0);
  const auto c4 = hn::Set(d, 4.0);
  auto energy = hn::Zero(d), virial = hn::Zero(d), inside_count = hn::Zero(d);
  HWY_ALIGN std::uint32_t tail[64];  // a vector's lanes (at most 32 doubles)
  HWY_ALIGN double px[32], py[32], pz[32];
  HWY_ALIGN std::int64_t pj[32];
  for (std::size_t i = begin; i < end; ++i) {
    const std::size_t from = which == 2 ? ghost_begin[i] : offsets[i];
    const std::size_t to = which == 1 ? ghost_begin[i] : offsets[i + 1];
    if (from == to) continue;
    const auto xi = hn::Set(d, x[3 * i]), yi = hn::Set(d, x[3 * i + 1]), zi = hn::Set(d, x[3 * i + 2]);
    auto fx = hn::Zero(d), fy = hn::Zero(d), fz = hn::Zero(d);
    auto body = [&](auto index32, auto valid) HWY_ATTR {
      const auto j = hn::BitCast(di, hn::PromoteTo(d64, index32));
      const auto j3 = hn::Add(hn::Add(j, j), j);
      const auto dx = hn::Sub(xi, hn::GatherIndex(d, x, j3));
      const auto dy = hn::Sub(yi, hn::GatherIndex(d, x + 1, j3));
      const auto dz = hn::Sub(zi, hn::GatherIndex(d, x + 2, j3));
      const auto r2 = hn::MulAdd(dx, dx, hn::MulAdd(dy, dy, hn::Mul(dz, dz)));
      const auto inside = hn::And(valid, hn::Lt(r2, cut2));
      const auto r2inv = hn::Div(one, r2);
      const auto r6inv = hn::Mul(hn::Mul(r2inv, r2inv), r2inv);
      const auto forcelj = hn::Mul(r6inv, hn::MulSub(c48, r6inv, c24));
      const auto fpair = hn::IfThenElseZero(inside, hn::Mul(forcelj, r2inv));
      fx = hn::MulAdd(dx, fpair, fx);
      fy = hn::MulAdd(dy, fpair, fy);
      fz = hn::MulAdd(dz, fpair, fz);
      // The neighbours' forces in scalar read-modify-writes: a vector gather
      // of entries just scattered for the previous particle (sorted particles
      // share most neighbours) waits for those stores to retire (Zen 4, np 2,
      // 16,000 atoms per rank: Pair 12 % slower with gather and scatter).
      hn::Store(hn::Mul(dx, fpair), d, px);
      hn::Store(hn::Mul(dy, fpair), d, py);
      hn::Store(hn::Mul(dz, fpair), d, pz);
      hn::Store(j3, di, pj);
      for (std::size_t l = 0; l < lanes; ++l) {
        double* fj = f + pj[l];
        fj[0] -= px[l];
        fj[1] -= py[l];
        fj[2] -= pz[l];
      }
      if constexpr (Energy) {
        energy = hn::Add(energy, hn::IfThenElseZero(inside, hn::Mul(r6inv, hn::MulSub(c4, r6inv, c4))));
        virial = hn::MulAdd(r2, fpair, virial);
        inside_count = hn::Add(inside_count, hn::IfThenElseZero(inside, one));
      }
    };
    std::size_t k = from;
    const auto all = hn::FirstN(d, lanes);
    for (; k + lanes <= to; k += lanes) body(hn::LoadU(du, neighbours + k), all);
    if (k < to) {
      const std::size_t rest = to - k;
      for (std::size_t l = 0; l < lanes; ++l) tail[l] = l < rest ? neighbours[k + l] : static_cast<std::uint32_t>(i);
      body(hn::Load(du, tail), hn::FirstN(d, rest));
    }
    f[3 * i] += hn::GetLane(hn::SumOfLanes(d, fx));
    f[3 * i + 1] += hn::GetLane(hn::SumOfLanes(d, fy));
    f[3 * i + 2] += hn::GetLane(hn::SumOfLanes(d, fz));
  }
  if constexpr (Energy) {
    sums[0] += hn::GetLane(hn::SumOfLanes(d, energy));
    sums[1] += hn::GetLane(hn::SumOfLanes(d, virial));
    sums[2] += hn::GetLane(hn::SumOfLanes(d, inside_count));
  }
}

void Forces(const double* x, double* f, const std::size_t* offsets, const std::size_t* ghost_begin,
            const std::uint32_t* neighbours, std::size_t begin, std::size_t end, int which, double cutoff2,
            bool energy, double* sums) {
  if (energy) Pass<true>(x, f, offsets, ghost_begin, neighbours, begin, end, which, cutoff2, sums);
  else Pass<false>(x, f, offsets, ghost_begin, neighbours, begin, end, which, cutoff2, sums);
}

}  // namespace HWY_NAMESPACE
}  // namespace domex::md
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace domex::md {
HWY_EXPORT(Forces);

void lj_forces(const Point* x, Point* f, const NeighborList& list, std::size_t begin, std::size_t end, Neighbours which,
               double cutoff, bool energy, PairSums& sums) {
  double totals[3] = {0, 0, 0};
  const int part = which == Neighbours::all ? 0 : which == Neighbours::owned ? 1 : 2;
  HWY_DYNAMIC_DISPATCH(Forces)(reinterpret_cast<const double*>(x), reinterpret_cast<double*>(f), list.offsets().data(), list.ghost_begin().data(),
                               list.neighbors().data(), begin, end, part, cutoff * cutoff, energy, totals);
  sums.energy += totals[0];
  sums.virial += totals[1];
  sums.inside += totals[2];
}

}  // namespace domex::md
#endif  // HWY_ONCE

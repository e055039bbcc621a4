// SPDX-License-Identifier: BSD-3-Clause
// Gravity kernel: Highway per-target code (compiled once per instruction set
// by foreach_target.h) and the dynamic dispatch to the best one at run time.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/tree/kernel.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <domex/tree/morton.hpp>
#include <domex/tree/sort.hpp>

#include "simd.hpp"

HWY_BEFORE_NAMESPACE();
namespace domex::kernel_detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Twice 1/sqrt(r2): the estimate y0 refined by one Newton step written as
// y0 (3 - r2 y0^2), one multiplication fewer than y0 (1.5 - 0.5 r2 y0^2).
// Unsoftened, a pair at zero distance (r2 = 0) gives 0, not infinity.
// `three` and `zero` are the caller's constants (kept in registers).
template <bool Softened, class V>
HWY_INLINE V TwiceInverseDistance(V r2, V three, V zero) {
  V y = hn::ApproximateReciprocalSqrt(r2);
  y = hn::Mul(y, hn::NegMulAdd(hn::Mul(r2, y), y, three));
  if constexpr (Softened) {
    return y;
  } else {
    return hn::IfThenElseZero(hn::Gt(r2, zero), y);
  }
}

// Sources in vectors, targets broadcast four at a time (each source vector
// loaded once for four targets), lane sums reduced at the end of the list:
// no target padding is computed, so a group of any size costs its own
// interactions only. The list's last partial vector is copied, padded with
// massless sources, so any source count works.
template <bool Softened>
void GravitySources(const float* HWY_RESTRICT tx, const float* HWY_RESTRICT ty, const float* HWY_RESTRICT tz,
                    float* HWY_RESTRICT ax, float* HWY_RESTRICT ay, float* HWY_RESTRICT az, std::size_t target_count,
                    const float* HWY_RESTRICT sx, const float* HWY_RESTRICT sy, const float* HWY_RESTRICT sz,
                    const float* HWY_RESTRICT sm, std::size_t source_count, float eps2) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  const auto softening = hn::Set(d, eps2);
  const auto three = hn::Set(d, 3.0f);
  const auto zero = hn::Zero(d);
  // Twice 1/sqrt(r2) (TwiceInverseDistance); the factor 2^3 of the cube is
  // taken out of the sums at the end (exactly, barring overflow of m y^3 at
  // 1/8 of the old threshold).
  // The last partial vector of sources, padded with zero masses.
  const std::size_t full = source_count / lanes * lanes;
  HWY_ALIGN float tail[4][hn::MaxLanes(d)] = {};
  for (std::size_t j = full; j < source_count; ++j) {
    tail[0][j - full] = sx[j];
    tail[1][j - full] = sy[j];
    tail[2][j - full] = sz[j];
    tail[3][j - full] = sm[j];
  }
  constexpr std::size_t block = 4;
  std::size_t i = 0;
  const auto targets = [&](std::size_t first, auto count_tag) HWY_ATTR {
    constexpr std::size_t count = decltype(count_tag)::value;
    hn::Vec<decltype(d)> x[count], y[count], z[count], sum_x[count], sum_y[count], sum_z[count];
    for (std::size_t t = 0; t < count; ++t) {
      x[t] = hn::Set(d, tx[first + t]), y[t] = hn::Set(d, ty[first + t]), z[t] = hn::Set(d, tz[first + t]);
      sum_x[t] = sum_y[t] = sum_z[t] = zero;
    }
    const auto interact = [&](const float* px, const float* py, const float* pz, const float* pm) HWY_ATTR {
      const auto xj = hn::LoadU(d, px), yj = hn::LoadU(d, py), zj = hn::LoadU(d, pz), mj = hn::LoadU(d, pm);
      for (std::size_t t = 0; t < count; ++t) {
        const auto dx = hn::Sub(xj, x[t]), dy = hn::Sub(yj, y[t]), dz = hn::Sub(zj, z[t]);
        const auto r2 = hn::MulAdd(dz, dz, hn::MulAdd(dy, dy, hn::MulAdd(dx, dx, softening)));
        const auto q = TwiceInverseDistance<Softened>(r2, three, zero);
        const auto f = hn::Mul(hn::Mul(mj, q), hn::Mul(q, q));
        sum_x[t] = hn::MulAdd(f, dx, sum_x[t]);
        sum_y[t] = hn::MulAdd(f, dy, sum_y[t]);
        sum_z[t] = hn::MulAdd(f, dz, sum_z[t]);
      }
    };
    for (std::size_t j = 0; j < full; j += lanes) interact(sx + j, sy + j, sz + j, sm + j);
    if (full < source_count) interact(tail[0], tail[1], tail[2], tail[3]);
    for (std::size_t t = 0; t < count; ++t) {
      ax[first + t] += 0.125f * hn::GetLane(hn::SumOfLanes(d, sum_x[t]));
      ay[first + t] += 0.125f * hn::GetLane(hn::SumOfLanes(d, sum_y[t]));
      az[first + t] += 0.125f * hn::GetLane(hn::SumOfLanes(d, sum_z[t]));
    }
  };
  for (; i + block <= target_count; i += block) targets(i, std::integral_constant<std::size_t, block>{});
  for (; i < target_count; ++i) targets(i, std::integral_constant<std::size_t, 1>{});
}

void Gravity(const float* HWY_RESTRICT tx, const float* HWY_RESTRICT ty, const float* HWY_RESTRICT tz,
             float* HWY_RESTRICT ax, float* HWY_RESTRICT ay, float* HWY_RESTRICT az, std::size_t target_count,
             const float* HWY_RESTRICT sx, const float* HWY_RESTRICT sy, const float* HWY_RESTRICT sz,
             const float* HWY_RESTRICT sm, std::size_t source_count, float eps2) {
  if (eps2 > 0)
    GravitySources<true>(tx, ty, tz, ax, ay, az, target_count, sx, sy, sz, sm, source_count, eps2);
  else
    GravitySources<false>(tx, ty, tz, ax, ay, az, target_count, sx, sy, sz, sm, source_count, eps2);
}

void RelativeFp32(const double* HWY_RESTRICT values, std::size_t count, double origin, float* HWY_RESTRICT out) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const std::size_t lanes = hn::Lanes(dd);
  const auto o = hn::Set(dd, origin);
  std::size_t i = 0;
  for (; i + lanes <= count; i += lanes) hn::StoreU(hn::DemoteTo(df, hn::Sub(hn::LoadU(dd, values + i), o)), df, out + i);
  for (; i < count; ++i) out[i] = static_cast<float>(values[i] - origin);
}

// The opening test of a block of cells (the children of one cell), lanes at
// a time; rows are `width` >= lanes long, and bits past count are cleared.
std::uint64_t FarCells(const double* HWY_RESTRICT block, std::size_t width, std::uint32_t count,
                       const double* HWY_RESTRICT target, double search2, tree_detail::FarCellList* out) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<float, decltype(d)> df;
  const hn::Rebind<std::uint32_t, decltype(d)> du;
  const std::size_t lanes = hn::Lanes(d);
  const auto tlx = hn::Set(d, target[0]), tly = hn::Set(d, target[1]), tlz = hn::Set(d, target[2]);
  const auto thx = hn::Set(d, target[3]), thy = hn::Set(d, target[4]), thz = hn::Set(d, target[5]);
  const auto zero = hn::Zero(d), gap_limit = hn::Set(d, search2);
  const auto outside = [&](auto t_lo, auto t_hi, auto v) HWY_ATTR {  // distance of v outside [t_lo, t_hi]
    return hn::Max(hn::Max(hn::Sub(t_lo, v), hn::Sub(v, t_hi)), zero);
  };
  std::uint64_t result = 0;
  for (std::size_t j = 0; j < count; j += lanes) {
    const auto load = [&](std::size_t row) HWY_ATTR { return hn::LoadU(d, block + row * width + j); };
    const auto cx = load(0), cy = load(1), cz = load(2);
    const auto lx = load(3), ly = load(4), lz = load(5), hx = load(6), hy = load(7), hz = load(8);
    const auto apart = hn::Or(hn::Or(hn::Or(hn::Lt(thx, lx), hn::Lt(hx, tlx)), hn::Or(hn::Lt(thy, ly), hn::Lt(hy, tly))),
                              hn::Or(hn::Lt(thz, lz), hn::Lt(hz, tlz)));
    const auto dx = outside(tlx, thx, cx), dy = outside(tly, thy, cy), dz = outside(tlz, thz, cz);
    const auto d2 = hn::MulAdd(dz, dz, hn::MulAdd(dy, dy, hn::Mul(dx, dx)));
    auto far = hn::And(apart, hn::Gt(d2, load(9)));
    if (search2 > 0) {
      const auto gx = hn::Max(hn::Max(hn::Sub(tlx, hx), hn::Sub(lx, thx)), zero);
      const auto gy = hn::Max(hn::Max(hn::Sub(tly, hy), hn::Sub(ly, thy)), zero);
      const auto gz = hn::Max(hn::Max(hn::Sub(tlz, hz), hn::Sub(lz, thz)), zero);
      far = hn::And(far, hn::Gt(hn::MulAdd(gz, gz, hn::MulAdd(gy, gy, hn::Mul(gx, gx))), gap_limit));
    }
    if (j + lanes > count) far = hn::And(far, hn::FirstN(d, count - j));
    std::uint8_t bits[8] = {};
    hn::StoreMaskBits(d, far, bits);
    std::uint64_t lane_bits = 0;
    for (std::size_t byte = 0; byte < (lanes + 7) / 8 && byte < 8; ++byte)
      lane_bits |= static_cast<std::uint64_t>(bits[byte]) << (8 * byte);
    if (out != nullptr && lane_bits != 0) {  // the far cells, compressed, at the list's end
      const std::size_t slot = out->count;
      // Compress in a register, then a whole-vector store (the caller's
      // room): the compressing store to memory is microcoded on AMD Zen 4.
      hn::StoreU(hn::Compress(hn::Iota(du, static_cast<std::uint32_t>(out->first_index + j)), hn::LoadMaskBits(du, bits)),
                 du, out->index + slot);
      if (out->x != nullptr) {
        const auto keep = hn::LoadMaskBits(df, bits);
        const auto put = [&](auto v, float* to) HWY_ATTR { hn::StoreU(hn::Compress(hn::DemoteTo(df, v), keep), df, to + slot); };
        put(hn::Sub(cx, hn::Set(d, out->origin[0])), out->x);
        put(hn::Sub(cy, hn::Set(d, out->origin[1])), out->y);
        put(hn::Sub(cz, hn::Set(d, out->origin[2])), out->z);
        put(load(tree_detail::WalkGeometry::mass), out->mass);
      }
      out->count += static_cast<std::size_t>(std::popcount(lane_bits));
    }
    if (j < 64) result |= lane_bits << j;
  }
  return count >= 64 ? result : result & ((std::uint64_t{1} << count) - 1);
}

// Particle runs from interleaved (x, y, z, mass) records: whole vectors
// only, so each run's last vector reads records past its end (the array has
// a vector of slack) and writes past its end (the next run, or the caller's
// slack, takes those slots).
void GatherParticleRuns(const double* HWY_RESTRICT xyzm, const std::uint32_t* HWY_RESTRICT ranges,
                        std::size_t range_count, const double* HWY_RESTRICT origin, float* HWY_RESTRICT ox,
                        float* HWY_RESTRICT oy, float* HWY_RESTRICT oz, float* HWY_RESTRICT om) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const std::size_t lanes = hn::Lanes(dd);
  const auto x0 = hn::Set(dd, origin[0]), y0 = hn::Set(dd, origin[1]), z0 = hn::Set(dd, origin[2]);
  std::size_t slot = 0;
  for (std::size_t r = 0; r < range_count; ++r) {
    const std::size_t first = ranges[2 * r], length = ranges[2 * r + 1] - first;
    for (std::size_t i = 0; i < length; i += lanes) {
      hn::Vec<decltype(dd)> x, y, z, m;
      hn::LoadInterleaved4(dd, xyzm + 4 * (first + i), x, y, z, m);
      hn::StoreU(hn::DemoteTo(df, hn::Sub(x, x0)), df, ox + slot + i);
      hn::StoreU(hn::DemoteTo(df, hn::Sub(y, y0)), df, oy + slot + i);
      hn::StoreU(hn::DemoteTo(df, hn::Sub(z, z0)), df, oz + slot + i);
      hn::StoreU(hn::DemoteTo(df, m), df, om + slot + i);
    }
    slot += length;
  }
}

// Records gathered by index.
void GatherRecords(const double* HWY_RESTRICT records, std::size_t stride, const std::uint32_t* HWY_RESTRICT index,
                   std::size_t count, const double* HWY_RESTRICT origin, float* HWY_RESTRICT ox,
                   float* HWY_RESTRICT oy, float* HWY_RESTRICT oz, float* HWY_RESTRICT om) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const hn::Rebind<std::int64_t, decltype(dd)> di;
  const std::size_t lanes = hn::Lanes(dd);
  const auto x0 = hn::Set(dd, origin[0]), y0 = hn::Set(dd, origin[1]), z0 = hn::Set(dd, origin[2]);
  HWY_ALIGN std::int64_t offsets[hn::MaxLanes(di)];
  std::size_t j = 0;
  if (stride == 4) {
    // (x, y, z, m) records: copied whole into a block of consecutive
    // records, then split as particle runs are. Hardware gathers (four per
    // vector of records) took longer on AMD Zen 3 and 4.
    HWY_ALIGN double block[4 * hn::MaxLanes(dd)];
    constexpr std::size_t ahead = 16;  // records prefetched ahead: the gather waits on memory, not on work
    for (std::size_t l = 0; l < ahead && l < count; ++l) hwy::Prefetch(records + 4 * std::size_t{index[l]});
    for (; j + lanes <= count; j += lanes) {
      for (std::size_t l = 0; l < lanes; ++l) {
        if (j + l + ahead < count) hwy::Prefetch(records + 4 * std::size_t{index[j + l + ahead]});
        std::memcpy(block + 4 * l, records + 4 * std::size_t{index[j + l]}, 32);
      }
      hn::Vec<decltype(dd)> x, y, z, m;
      hn::LoadInterleaved4(dd, block, x, y, z, m);
      hn::StoreU(hn::DemoteTo(df, hn::Sub(x, x0)), df, ox + j);
      hn::StoreU(hn::DemoteTo(df, hn::Sub(y, y0)), df, oy + j);
      hn::StoreU(hn::DemoteTo(df, hn::Sub(z, z0)), df, oz + j);
      hn::StoreU(hn::DemoteTo(df, m), df, om + j);
    }
  }
  for (; j + lanes <= count; j += lanes) {
    for (std::size_t l = 0; l < lanes; ++l) offsets[l] = static_cast<std::int64_t>(index[j + l] * stride);
    const auto at = hn::Load(di, offsets);
    hn::StoreU(hn::DemoteTo(df, hn::Sub(hn::GatherIndex(dd, records, at), x0)), df, ox + j);
    hn::StoreU(hn::DemoteTo(df, hn::Sub(hn::GatherIndex(dd, records + 1, at), y0)), df, oy + j);
    hn::StoreU(hn::DemoteTo(df, hn::Sub(hn::GatherIndex(dd, records + 2, at), z0)), df, oz + j);
    hn::StoreU(hn::DemoteTo(df, hn::GatherIndex(dd, records + 3, at)), df, om + j);
  }
  for (; j < count; ++j) {
    const double* record = records + index[j] * stride;
    ox[j] = static_cast<float>(record[0] - origin[0]);
    oy[j] = static_cast<float>(record[1] - origin[1]);
    oz[j] = static_cast<float>(record[2] - origin[2]);
    om[j] = static_cast<float>(record[3]);
  }
}

// S d and d.S.d for the symmetric S of cell j: q[0..5] are the rows of its
// components xx, yy, zz, xy, xz, yz.
template <class D, class T, class V>
HWY_INLINE V SymmetricTimes(D d, const T* const (&q)[6], std::size_t j, V dx, V dy, V dz, V& sx, V& sy, V& sz) {
  const auto a = hn::Set(d, q[0][j]), b = hn::Set(d, q[1][j]), c = hn::Set(d, q[2][j]);
  const auto e = hn::Set(d, q[3][j]), f = hn::Set(d, q[4][j]), g = hn::Set(d, q[5][j]);
  sx = hn::MulAdd(f, dz, hn::MulAdd(e, dy, hn::Mul(a, dx)));
  sy = hn::MulAdd(g, dz, hn::MulAdd(b, dy, hn::Mul(e, dx)));
  sz = hn::MulAdd(c, dz, hn::MulAdd(g, dy, hn::Mul(f, dx)));
  return hn::MulAdd(dz, sz, hn::MulAdd(dy, sy, hn::Mul(dx, sx)));
}

// The monopole and quadrupole terms of cells in fp32, vectorised over
// targets (each cell broadcast), in the caller's scaled units. cells: 11
// rows of `stride` floats: the centre x, y, z relative to the targets'
// origin, 3 S (the six second moments xx yy zz xy xz yz times 3), 3/2 tr S
// and 4 M (the mass times 4). With d = target - centre, w = 2 / s
// (TwiceInverseDistance, as in GravitySources), v = 3 S d and t = 3/2 tr S:
//   -M d / s^3 + 3 S d / s^5 + (3/2 tr S - 15/2 d.S.d / s^2) d / s^5
//   = (w^5 v + (w^5 (t - 5/8 w^2 d.v) - 4 M w^3) d) / 32
// (the 1/32 applied to the sums at the end). The targets' last partial
// vector is computed in a padded copy.
template <bool Softened>
void QuadrupoleCells(const float* HWY_RESTRICT tx, const float* HWY_RESTRICT ty, const float* HWY_RESTRICT tz,
                     float* HWY_RESTRICT ax, float* HWY_RESTRICT ay, float* HWY_RESTRICT az, std::size_t n,
                     const float* HWY_RESTRICT cells, std::size_t stride, std::size_t m, float eps2) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  const float *cx = cells, *cy = cells + stride, *cz = cells + 2 * stride;
  const float* const q[6] = {cells + 3 * stride, cells + 4 * stride, cells + 5 * stride,
                             cells + 6 * stride, cells + 7 * stride, cells + 8 * stride};
  const float *trace = cells + 9 * stride, *mass = cells + 10 * stride;
  const auto softening = hn::Set(d, eps2), zero = hn::Zero(d), three = hn::Set(d, 3.0f);
  const auto five_eighths = hn::Set(d, 0.625f);
  const auto block = [&](const float* px, const float* py, const float* pz, float* sx, float* sy, float* sz) HWY_ATTR {
    const auto x = hn::LoadU(d, px), y = hn::LoadU(d, py), z = hn::LoadU(d, pz);
    auto sum_x = zero, sum_y = zero, sum_z = zero;
    for (std::size_t j = 0; j < m; ++j) {
      const auto dx = hn::Sub(x, hn::Set(d, cx[j])), dy = hn::Sub(y, hn::Set(d, cy[j])),
                 dz = hn::Sub(z, hn::Set(d, cz[j]));
      const auto r2 = hn::MulAdd(dz, dz, hn::MulAdd(dy, dy, hn::MulAdd(dx, dx, softening)));
      const auto w = TwiceInverseDistance<Softened>(r2, three, zero);  // 2 / s
      const auto w2 = hn::Mul(w, w);
      const auto w3 = hn::Mul(w2, w);  // 8 / s^3
      const auto w5 = hn::Mul(w3, w2);  // 32 / s^5
      hn::Vec<decltype(d)> vx, vy, vz;
      const auto dv = SymmetricTimes(d, q, j, dx, dy, dz, vx, vy, vz);
      const auto radial = hn::NegMulAdd(hn::Mul(w2, dv), five_eighths, hn::Set(d, trace[j]));
      const auto along = hn::NegMulAdd(hn::Set(d, mass[j]), w3, hn::Mul(w5, radial));
      sum_x = hn::MulAdd(along, dx, hn::MulAdd(w5, vx, sum_x));
      sum_y = hn::MulAdd(along, dy, hn::MulAdd(w5, vy, sum_y));
      sum_z = hn::MulAdd(along, dz, hn::MulAdd(w5, vz, sum_z));
    }
    const auto scale = hn::Set(d, 1.0f / 32);
    hn::StoreU(hn::MulAdd(sum_x, scale, hn::LoadU(d, sx)), d, sx);
    hn::StoreU(hn::MulAdd(sum_y, scale, hn::LoadU(d, sy)), d, sy);
    hn::StoreU(hn::MulAdd(sum_z, scale, hn::LoadU(d, sz)), d, sz);
  };
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) block(tx + i, ty + i, tz + i, ax + i, ay + i, az + i);
  if (i < n) {
    HWY_ALIGN float tail[6][hn::MaxLanes(d)] = {};
    for (std::size_t k = i; k < n; ++k)
      tail[0][k - i] = tx[k], tail[1][k - i] = ty[k], tail[2][k - i] = tz[k], tail[3][k - i] = ax[k],
                tail[4][k - i] = ay[k], tail[5][k - i] = az[k];
    block(tail[0], tail[1], tail[2], tail[3], tail[4], tail[5]);
    for (std::size_t k = i; k < n; ++k) ax[k] = tail[3][k - i], ay[k] = tail[4][k - i], az[k] = tail[5][k - i];
  }
}

void QuadrupoleFp32(const float* HWY_RESTRICT tx, const float* HWY_RESTRICT ty, const float* HWY_RESTRICT tz,
                    float* HWY_RESTRICT ax, float* HWY_RESTRICT ay, float* HWY_RESTRICT az, std::size_t n,
                    const float* HWY_RESTRICT cells, std::size_t stride, std::size_t m, float eps2) {
  if (eps2 > 0)
    QuadrupoleCells<true>(tx, ty, tz, ax, ay, az, n, cells, stride, m, eps2);
  else
    QuadrupoleCells<false>(tx, ty, tz, ax, ay, az, n, cells, stride, m, eps2);
}

// The quadrupole term of cells, fp64, vectorised over targets (each cell
// broadcast): the same arithmetic as the scalar tail, in the same order of
// cells for every target. cells: 10 arrays of m values (centre x, y, z, the
// six second moments xx yy zz xy xz yz, their trace).
void QuadrupoleTerm(const double* HWY_RESTRICT tx, const double* HWY_RESTRICT ty, const double* HWY_RESTRICT tz,
                double* HWY_RESTRICT ax, double* HWY_RESTRICT ay, double* HWY_RESTRICT az, std::size_t n,
                const double* HWY_RESTRICT cells, std::size_t m, double eps2) {
  const hn::ScalableTag<double> d;
  const std::size_t lanes = hn::Lanes(d);
  const double *cx = cells, *cy = cells + m, *cz = cells + 2 * m;
  const double* const q[6] = {cells + 3 * m, cells + 4 * m, cells + 5 * m, cells + 6 * m, cells + 7 * m, cells + 8 * m};
  const double* trace = cells + 9 * m;
  const auto softening = hn::Set(d, eps2), one = hn::Set(d, 1.0), zero = hn::Zero(d);
  const auto three = hn::Set(d, 3.0), three_halves = hn::Set(d, 1.5), fifteen_halves = hn::Set(d, 7.5);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto x = hn::LoadU(d, tx + i), y = hn::LoadU(d, ty + i), z = hn::LoadU(d, tz + i);
    auto sum_x = hn::LoadU(d, ax + i), sum_y = hn::LoadU(d, ay + i), sum_z = hn::LoadU(d, az + i);
    for (std::size_t j = 0; j < m; ++j) {
      const auto dx = hn::Sub(x, hn::Set(d, cx[j])), dy = hn::Sub(y, hn::Set(d, cy[j])),
                 dz = hn::Sub(z, hn::Set(d, cz[j]));
      const auto r2 = hn::MulAdd(dz, dz, hn::MulAdd(dy, dy, hn::MulAdd(dx, dx, softening)));
      // Zero where r2 = 0 (a target at the centre with eps2 = 0: no term).
      const auto inv_s = hn::IfThenElseZero(hn::Gt(r2, zero), hn::Div(one, hn::Sqrt(r2)));
      const auto inv_s2 = hn::Mul(inv_s, inv_s);
      const auto inv_s5 = hn::Mul(hn::Mul(inv_s2, inv_s2), inv_s);
      hn::Vec<decltype(d)> sx, sy, sz;
      const auto dsd = SymmetricTimes(d, q, j, dx, dy, dz, sx, sy, sz);
      const auto radial = hn::Mul(hn::NegMulAdd(hn::Mul(fifteen_halves, dsd), inv_s2,
                                                hn::Mul(three_halves, hn::Set(d, trace[j]))),
                                  inv_s5);
      const auto tangential = hn::Mul(three, inv_s5);
      sum_x = hn::MulAdd(radial, dx, hn::MulAdd(tangential, sx, sum_x));
      sum_y = hn::MulAdd(radial, dy, hn::MulAdd(tangential, sy, sum_y));
      sum_z = hn::MulAdd(radial, dz, hn::MulAdd(tangential, sz, sum_z));
    }
    hn::StoreU(sum_x, d, ax + i), hn::StoreU(sum_y, d, ay + i), hn::StoreU(sum_z, d, az + i);
  }
  for (; i < n; ++i)
    for (std::size_t j = 0; j < m; ++j) {
      const double dx = tx[i] - cx[j], dy = ty[i] - cy[j], dz = tz[i] - cz[j];
      const double r2 = dx * dx + dy * dy + dz * dz + eps2;
      if (!(r2 > 0)) continue;
      const double inv_s = 1.0 / std::sqrt(r2), inv_s2 = inv_s * inv_s;
      const double inv_s5 = inv_s2 * inv_s2 * inv_s;
      const double sx = q[0][j] * dx + q[3][j] * dy + q[4][j] * dz;
      const double sy = q[3][j] * dx + q[1][j] * dy + q[5][j] * dz;
      const double sz = q[4][j] * dx + q[5][j] * dy + q[2][j] * dz;
      const double dsd = dx * sx + dy * sy + dz * sz;
      const double radial = (1.5 * trace[j] - 7.5 * dsd * inv_s2) * inv_s5;
      ax[i] += 3 * sx * inv_s5 + radial * dx;
      ay[i] += 3 * sy * inv_s5 + radial * dy;
      az[i] += 3 * sz * inv_s5 + radial * dz;
    }
}

// The accuracy check's fp64 reference: the pulls of n sources (x, y, z
// interleaved, and masses) on `count` samples (a multiple of the lanes), a
// sample per lane, each sample's sum taken over the sources in order (so
// the same whatever the threads that share the samples out).
void DirectSumFp64(const double* HWY_RESTRICT sx, const double* HWY_RESTRICT sy, const double* HWY_RESTRICT sz,
                   std::size_t count, const double* HWY_RESTRICT xyz, const double* HWY_RESTRICT masses,
                   std::size_t n, double eps2, double* HWY_RESTRICT ax, double* HWY_RESTRICT ay,
                   double* HWY_RESTRICT az) {
  const hn::ScalableTag<double> d;
  // A source at a sample's position without softening (r2 = 0) adds nothing.
  const auto e2 = hn::Set(d, eps2), zero = hn::Zero(d);
  for (std::size_t s = 0; s < count; s += hn::Lanes(d)) {
    const auto x = hn::LoadU(d, sx + s), y = hn::LoadU(d, sy + s), z = hn::LoadU(d, sz + s);
    auto fx = hn::Zero(d), fy = hn::Zero(d), fz = hn::Zero(d);
    for (std::size_t j = 0; j < n; ++j) {
      const auto dx = hn::Sub(hn::Set(d, xyz[3 * j]), x), dy = hn::Sub(hn::Set(d, xyz[3 * j + 1]), y),
                 dz = hn::Sub(hn::Set(d, xyz[3 * j + 2]), z);
      const auto r2 = hn::Add(hn::Add(hn::Add(hn::Mul(dx, dx), hn::Mul(dy, dy)), hn::Mul(dz, dz)), e2);
      const auto f = hn::IfThenZeroElse(hn::Eq(r2, zero), hn::Div(hn::Set(d, masses[j]), hn::Mul(r2, hn::Sqrt(r2))));
      fx = hn::Add(fx, hn::Mul(f, dx)), fy = hn::Add(fy, hn::Mul(f, dy)), fz = hn::Add(fz, hn::Mul(f, dz));
    }
    hn::StoreU(fx, d, ax + s), hn::StoreU(fy, d, ay + s), hn::StoreU(fz, d, az + s);
  }
}

// Morton keys of interleaved positions (x, y, z per point) with their
// indices first_index + i, as (key, index) pairs: the arithmetic of
// morton_key_unchecked (a scaled coordinate clamped to [0, cells - 1], NaN
// to 0; the bits spread with the same masks), vectors of points at a time.
void MortonKeys(const double* HWY_RESTRICT xyz, std::size_t count, const double* HWY_RESTRICT lo,
                const double* HWY_RESTRICT scale, std::uint64_t first_index, std::uint64_t* HWY_RESTRICT out) {
  const hn::ScalableTag<double> dd;
  const hn::RebindToUnsigned<decltype(dd)> du;
  const hn::RebindToSigned<decltype(dd)> di;
  const std::size_t lanes = hn::Lanes(dd);
  const auto zero = hn::Zero(dd), last = hn::Set(dd, static_cast<double>(morton_cells_per_axis - 1));
  const auto lo_x = hn::Set(dd, lo[0]), lo_y = hn::Set(dd, lo[1]), lo_z = hn::Set(dd, lo[2]);
  const auto scale_x = hn::Set(dd, scale[0]), scale_y = hn::Set(dd, scale[1]), scale_z = hn::Set(dd, scale[2]);
  const auto cell = [&](auto v, auto origin, auto factor) HWY_ATTR {
    const auto scaled = hn::Mul(hn::Sub(v, origin), factor);
    const auto clamped = hn::IfThenElse(hn::Gt(scaled, zero), hn::Min(scaled, last), zero);
    return hn::BitCast(du, hn::ConvertTo(di, clamped));
  };
  const auto spread = [&](auto v) HWY_ATTR {
    v = hn::And(hn::Or(v, hn::ShiftLeft<32>(v)), hn::Set(du, 0x1f00000000ffffull));
    v = hn::And(hn::Or(v, hn::ShiftLeft<16>(v)), hn::Set(du, 0x1f0000ff0000ffull));
    v = hn::And(hn::Or(v, hn::ShiftLeft<8>(v)), hn::Set(du, 0x100f00f00f00f00full));
    v = hn::And(hn::Or(v, hn::ShiftLeft<4>(v)), hn::Set(du, 0x10c30c30c30c30c3ull));
    return hn::And(hn::Or(v, hn::ShiftLeft<2>(v)), hn::Set(du, 0x1249249249249249ull));
  };
  // One vector of points (x, y, z interleaved) to (key, index) pairs.
  const auto keys = [&](const double* points, std::uint64_t first, std::uint64_t* pairs) HWY_ATTR {
    hn::Vec<decltype(dd)> x, y, z;
    hn::LoadInterleaved3(dd, points, x, y, z);
    const auto key = hn::Or(hn::Or(hn::ShiftLeft<2>(spread(cell(x, lo_x, scale_x))),
                                   hn::ShiftLeft<1>(spread(cell(y, lo_y, scale_y)))),
                            spread(cell(z, lo_z, scale_z)));
    hn::StoreInterleaved2(key, hn::Iota(du, first), du, pairs);
  };
  std::size_t i = 0;
  for (; i + lanes <= count; i += lanes) keys(xyz + 3 * i, first_index + i, out + 2 * i);
  if (i < count) {  // the last partial vector, through a zero-padded copy
    HWY_ALIGN double points[3 * hn::MaxLanes(dd)] = {};
    HWY_ALIGN std::uint64_t pairs[2 * hn::MaxLanes(du)];
    std::copy(xyz + 3 * i, xyz + 3 * count, points);
    keys(points, first_index + i, pairs);
    std::copy(pairs, pairs + 2 * (count - i), out + 2 * i);
  }
}

std::int64_t Target() { return HWY_TARGET; }

std::size_t DoubleLanes() { return hn::Lanes(hn::ScalableTag<double>()); }

}  // namespace HWY_NAMESPACE
}  // namespace domex::kernel_detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <domex/comm/error.hpp>
#include <domex/tree/kernel.hpp>

#include "simd.hpp"

#include <vector>

namespace domex {
namespace kernel_detail {
HWY_EXPORT(Gravity);
HWY_EXPORT(Target);
HWY_EXPORT(RelativeFp32);
HWY_EXPORT(QuadrupoleTerm);
HWY_EXPORT(QuadrupoleFp32);
HWY_EXPORT(GatherParticleRuns);
HWY_EXPORT(GatherRecords);
HWY_EXPORT(DoubleLanes);
HWY_EXPORT(FarCells);
HWY_EXPORT(DirectSumFp64);
HWY_EXPORT(MortonKeys);
}  // namespace kernel_detail

namespace tree_detail {

void gather_particle_runs(const double* xyzm, const std::uint32_t* ranges, std::size_t range_count,
                          const double origin[3], ListFp32 out) {
  HWY_DYNAMIC_DISPATCH(kernel_detail::GatherParticleRuns)(xyzm, ranges, range_count, origin, out.x, out.y, out.z,
                                                          out.mass);
}

std::uint64_t far_cells(const double* block, std::size_t width, std::uint32_t count, const double target[6],
                        double search2, FarCellList* out) {
  return HWY_DYNAMIC_DISPATCH(kernel_detail::FarCells)(block, width, count, target, search2, out);
}

std::size_t walk_block_width() { return std::max<std::size_t>(8, list_slack()); }

std::size_t list_slack() {
  // The dispatch target is fixed for the process: asked once, not per group.
  static const std::size_t lanes = HWY_DYNAMIC_DISPATCH(kernel_detail::DoubleLanes)();
  return lanes;
}

void gather_records(const double* records, std::size_t stride, const std::uint32_t* index, std::size_t count,
                    const double origin[3], ListFp32 out) {
  HWY_DYNAMIC_DISPATCH(kernel_detail::GatherRecords)(records, stride, index, count, origin, out.x, out.y, out.z,
                                                     out.mass);
}

void quadrupole_fp32(const float* tx, const float* ty, const float* tz, float* ax, float* ay, float* az,
                     std::size_t targets, const float* cells, std::size_t stride, std::size_t count, float eps2) {
  if (targets == 0 || count == 0) return;
  HWY_DYNAMIC_DISPATCH(kernel_detail::QuadrupoleFp32)(tx, ty, tz, ax, ay, az, targets, cells, stride, count, eps2);
}

void direct_sum_fp64(const double* sx, const double* sy, const double* sz, std::size_t count, const double* xyz,
                     const double* masses, std::size_t n, double eps2, double* ax, double* ay, double* az) {
  HWY_DYNAMIC_DISPATCH(kernel_detail::DirectSumFp64)(sx, sy, sz, count, xyz, masses, n, eps2, ax, ay, az);
}

}  // namespace tree_detail

void morton_key_indices(std::span<const Point> positions, const Box& root, std::span<KeyIndex> out,
                        std::uint64_t first_index) {
  static_assert(sizeof(Point) == 3 * sizeof(double) && sizeof(KeyIndex) == 2 * sizeof(std::uint64_t));
  if (out.size() < positions.size())
    fail("morton_key_indices", "out holds " + std::to_string(out.size()) + " entries for " +
                                   std::to_string(positions.size()) + " positions");
  if (positions.empty()) return;
  double scale[3];
  for (int a = 0; a < 3; ++a) scale[a] = static_cast<double>(morton_cells_per_axis) / root.extent(a);
  HWY_DYNAMIC_DISPATCH(kernel_detail::MortonKeys)
  (positions.front().data(), positions.size(), root.lo.data(), scale, first_index,
   reinterpret_cast<std::uint64_t*>(out.data()));
}

void gravity_kernel(const KernelTargets& targets, const KernelSources& sources, float eps2) {
  const std::size_t n = targets.x.size(), m = sources.x.size();
  if (targets.y.size() != n || targets.z.size() != n || targets.ax.size() != n || targets.ay.size() != n ||
      targets.az.size() != n || sources.y.size() != m || sources.z.size() != m || sources.mass.size() != m)
    fail("gravity_kernel", "spans of one side differ in length");
  HWY_DYNAMIC_DISPATCH(kernel_detail::Gravity)
  (targets.x.data(), targets.y.data(), targets.z.data(), targets.ax.data(), targets.ay.data(), targets.az.data(), n,
   sources.x.data(), sources.y.data(), sources.z.data(), sources.mass.data(), m, eps2);
}

void relative_fp32(std::span<const double> values, double origin, std::span<float> out) {
  if (out.size() != values.size()) fail("relative_fp32", "values and out differ in length");
  HWY_DYNAMIC_DISPATCH(kernel_detail::RelativeFp32)(values.data(), values.size(), origin, out.data());
}

std::string gravity_kernel_target() {
  return hwy::TargetName(static_cast<std::uint32_t>(HWY_DYNAMIC_DISPATCH(kernel_detail::Target)()));
}

void quadrupole_kernel(std::span<const Point> targets, std::span<Point> accelerations, std::span<const Moments> cells,
                       double eps2) {
  const std::size_t n = targets.size(), m = cells.size();
  if (accelerations.size() != n) fail("quadrupole_kernel", "targets and accelerations differ in length");
  if (n == 0 || m == 0) return;
  // Structure of arrays for the vectorised kernel (per thread, reused).
  thread_local std::vector<double> t, c;
  t.resize(6 * n);
  c.resize(10 * m);
  for (std::size_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a) {
      t[a * n + i] = targets[i][a];
      t[(3 + a) * n + i] = accelerations[i][a];
    }
  for (std::size_t j = 0; j < m; ++j) {
    const Quadrupole& q = cells[j].quadrupole;
    for (int a = 0; a < 3; ++a) c[a * m + j] = cells[j].centre[a];
    for (int k = 0; k < 6; ++k) c[(3 + k) * m + j] = q[k];
    c[9 * m + j] = q[0] + q[1] + q[2];
  }
  HWY_DYNAMIC_DISPATCH(kernel_detail::QuadrupoleTerm)
  (t.data(), t.data() + n, t.data() + 2 * n, t.data() + 3 * n, t.data() + 4 * n, t.data() + 5 * n, n, c.data(), m,
   eps2);
  for (std::size_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a) accelerations[i][a] = t[(3 + a) * n + i];
}

}  // namespace domex
#endif  // HWY_ONCE

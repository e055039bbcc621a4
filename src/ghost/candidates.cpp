// SPDX-License-Identifier: BSD-3-Clause
// The ghost search's first pass, over every owned particle: its slot along
// each axis and the set of pieces near all three (a gather from each axis
// table). Highway's dynamic dispatch (AVX-512 on Zen 4 and Xeon, AVX2 on
// Zen 3): eight or four particles per step, where the scalar loop took
// about 35 instructions per particle. Only the particles with a candidate
// are kept (compressed stores), for the exact tests in ghost.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ghost/candidates.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>

#include "src/ghost/candidates.hpp"

HWY_BEFORE_NAMESPACE();
namespace domex::ghost_detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

std::size_t Candidates(const double* HWY_RESTRICT xyz, std::size_t count, const SlotTables& tables,
                       std::uint64_t* HWY_RESTRICT sets, std::uint64_t* HWY_RESTRICT hits, bool* inside) {
  const hn::ScalableTag<double> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::RebindToUnsigned<decltype(d)> du;
  const std::size_t lanes = hn::Lanes(d);
  const auto zero = hn::Zero(d);
  const auto lo_x = hn::Set(d, tables.lo[0]), lo_y = hn::Set(d, tables.lo[1]), lo_z = hn::Set(d, tables.lo[2]);
  const auto at_x = hn::Set(d, tables.origin[0]), at_y = hn::Set(d, tables.origin[1]),
             at_z = hn::Set(d, tables.origin[2]);
  const auto in_x = hn::Set(d, tables.inverse[0]), in_y = hn::Set(d, tables.inverse[1]),
             in_z = hn::Set(d, tables.inverse[2]);
  const auto last_x = hn::Set(d, tables.last[0]), last_y = hn::Set(d, tables.last[1]),
             last_z = hn::Set(d, tables.last[2]);
  const auto hi_x = hn::Set(d, tables.hi[0]), hi_y = hn::Set(d, tables.hi[1]), hi_z = hn::Set(d, tables.hi[2]);
  // lo <= v <= hi (false for NaN), every lane so far
  const auto within = [&](auto v, auto lo, auto hi) HWY_ATTR { return hn::And(hn::Ge(v, lo), hn::Le(v, hi)); };
  bool all_inside = true;
  // The slot as Finder::slot(): (v - origin) * inverse, clamped to [0, last],
  // truncated: the same bits. (NaN, which Max and Min may pass on some
  // targets, is made 0 first: the gathers stay inside the tables.)
  const auto slot = [&](auto v, auto origin, auto inverse, auto last) HWY_ATTR {
    const auto at = hn::Mul(hn::Sub(v, origin), inverse);
    return hn::ConvertTo(di, hn::Min(hn::Max(hn::IfThenZeroElse(hn::IsNaN(at), at), zero), last));
  };
  const auto* near_x = reinterpret_cast<const std::int64_t*>(tables.masks[0]);
  const auto* near_y = reinterpret_cast<const std::int64_t*>(tables.masks[1]);
  const auto* near_z = reinterpret_cast<const std::int64_t*>(tables.masks[2]);
  auto index = hn::Iota(du, 0);
  const auto step = hn::Set(du, lanes);
  std::size_t found = 0, k = 0;
  for (; k + lanes <= count; k += lanes) {
    hn::Vec<decltype(d)> x, y, z;
    hn::LoadInterleaved3(d, xyz + 3 * k, x, y, z);
    all_inside &=
        hn::AllTrue(d, hn::And(within(x, lo_x, hi_x), hn::And(within(y, lo_y, hi_y), within(z, lo_z, hi_z))));
    const auto sx = slot(x, at_x, in_x, last_x), sy = slot(y, at_y, in_y, last_y), sz = slot(z, at_z, in_z, last_z);
    const auto near = hn::And(hn::GatherIndex(di, near_x, sx),
                              hn::And(hn::GatherIndex(di, near_y, sy), hn::GatherIndex(di, near_z, sz)));
    const auto set = hn::BitCast(du, near);
    const auto some = hn::Ne(set, hn::Zero(du));
    const auto hit = hn::Or(hn::Or(index, hn::BitCast(du, hn::ShiftLeft<hit_slot_shift(0)>(sx))),
                            hn::BitCast(du, hn::Or(hn::ShiftLeft<hit_slot_shift(1)>(sy),
                                                   hn::ShiftLeft<hit_slot_shift(2)>(sz))));
    hn::CompressStore(hit, some, du, hits + found);
    found += hn::CompressStore(set, some, du, sets + found);
    index = hn::Add(index, step);
  }
  for (; k < count; ++k) {  // the tail, one at a time
    std::uint64_t set = ~std::uint64_t{0}, hit = k;
    for (int a = 0; a < 3; ++a) {
      const double v = xyz[3 * k + a];
      all_inside &= v >= tables.lo[a] && v <= tables.hi[a];
      const std::size_t slot = slot_of(v, tables.origin[a], tables.inverse[a], tables.last[a]);
      set &= tables.masks[a][slot];
      hit |= std::uint64_t{slot} << hit_slot_shift(a);
    }
    sets[found] = set;
    hits[found] = hit;
    found += set != 0;
  }
  if (!all_inside) *inside = false;
  return found;
}

}  // namespace HWY_NAMESPACE
}  // namespace domex::ghost_detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace domex::ghost_detail {
HWY_EXPORT(Candidates);

std::size_t candidates(std::span<const Point> points, const SlotTables& tables, std::uint64_t* sets,
                       std::uint64_t* hits, bool& inside) {
  return HWY_DYNAMIC_DISPATCH(Candidates)(points.empty() ? nullptr : points.data()->data(), points.size(), tables,
                                          sets, hits, &inside);
}
}  // namespace domex::ghost_detail
#endif

// SPDX-License-Identifier: BSD-3-Clause
// The ghost search's first pass, over every owned particle: its slot along
// each axis and the set of pieces near all three (a gather from each axis
// table). Highway's dynamic dispatch (AVX-512 on Zen 4 and Xeon, AVX2 on
// Zen 3): eight or four particles per step, where the scalar loop took
// about 35 instructions per particle. Only the particles with a candidate
// are kept (moved to the front by a table's permutation, then whole vectors
// stored: Highway 1.0.3's own compress is slow, see compress_table), for
// the exact tests: in ghost.cpp one (particle, piece) pair at a time, or
// here, piece by piece over a block's candidates, a vector of them per step.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ghost/candidates.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
#include <hwy/highway.h>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "src/ghost/candidates.hpp"

#ifndef DOMEX_GHOST_COMPRESS_TABLE
#define DOMEX_GHOST_COMPRESS_TABLE
namespace domex::ghost_detail {
/// For a mask of up to 8 lanes: the lanes it selects, in order, then the
/// others, as 4-bit indices (lane k at bits 4k). A table at namespace scope:
/// Highway 1.0.3's Compress of 64-bit lanes keeps its own in the function,
/// which GCC 12 copies to the stack on every call (2 KiB), and its
/// CompressStore is the memory form of vpcompressq, about 16 cycles a call
/// on this project's Xeon (far slower on Zen 4).
constexpr auto compress_table = [] {
  std::array<std::uint32_t, 256> table{};
  for (unsigned mask = 0; mask < 256; ++mask) {
    std::uint32_t packed = 0;
    unsigned at = 0;
    for (unsigned pass = 0; pass < 2; ++pass)
      for (unsigned lane = 0; lane < 8; ++lane)
        if (((mask >> lane) & 1u) == (pass == 0 ? 1u : 0u)) packed |= lane << (4 * at++);
    table[mask] = packed;
  }
  return table;
}();
}  // namespace domex::ghost_detail
#endif

HWY_BEFORE_NAMESPACE();
namespace domex::ghost_detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// The permutation that moves the lanes of `mask` to the front, for
/// TableLookupLanes; sets `kept` to how many. One permutation of doubles
/// serves every vector of a step: integer data (copies, sets, hits) is
/// moved as doubles' bit patterns (BitCast), without a second permutation.
/// x86 and NEON (at most 8 lanes): the compress_table above. Scalable
/// vectors (SVE, RVV), where the table is too short: Highway's Compress of
/// the lanes' indices.
template <class D>
HWY_INLINE auto CompressIndices(D d, hn::Mask<D> mask, std::size_t& kept) {
  const hn::RebindToUnsigned<D> du;
#if HWY_TARGET == HWY_SVE || HWY_TARGET == HWY_SVE2 || HWY_TARGET == HWY_SVE_256 || HWY_TARGET == HWY_SVE2_128 || \
    HWY_TARGET == HWY_RVV
  kept = hn::CountTrue(d, mask);
  return hn::IndicesFromVec(d, hn::Compress(hn::Iota(du, 0), hn::RebindMask(du, mask)));
#else
  std::uint8_t bits[8] = {};
  hn::StoreMaskBits(d, mask, bits);
  kept = static_cast<std::size_t>(std::popcount(bits[0]));
  const auto lanes = hn::Shr(hn::Set(du, compress_table[bits[0]]), hn::ShiftLeft<2>(hn::Iota(du, 0)));
  return hn::IndicesFromVec(d, hn::And(lanes, hn::Set(du, 7)));
#endif
}

template <bool kInterior>
HWY_INLINE std::size_t CandidatesOf(const double* HWY_RESTRICT xyz, std::size_t count, const SlotTables& tables,
                                    Hits& out, bool* inside) {
  std::uint64_t* HWY_RESTRICT sets = out.sets;
  std::uint64_t* HWY_RESTRICT hits = out.hits;
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
    const auto clamped = hn::Min(hn::Max(hn::IfThenZeroElse(hn::IsNaN(at), at), zero), last);
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3
    // (no double -> int64 conversion before AVX-512: Highway's emulation
    // took about a tenth of the pass; slots are below 4096, int32 holds them)
    return hn::PromoteTo(di, hn::DemoteTo(hn::Rebind<std::int32_t, decltype(di)>(), clamped));
#else
    return hn::ConvertTo(di, clamped);
#endif
  };
  std::size_t interior = 0;
  // (slots in [lo, hi]: lo - 1 < slot < hi + 1, Highway 1.0.3 has no Ge of int64)
  const auto below_x = hn::Set(di, tables.interior_lo[0] - 1), below_y = hn::Set(di, tables.interior_lo[1] - 1),
             below_z = hn::Set(di, tables.interior_lo[2] - 1);
  const auto above_x = hn::Set(di, tables.interior_hi[0] + 1), above_y = hn::Set(di, tables.interior_hi[1] + 1),
             above_z = hn::Set(di, tables.interior_hi[2] + 1);
  const auto between = [&](auto s, auto below, auto above) HWY_ATTR {
    return hn::And(hn::Gt(s, below), hn::Lt(s, above));
  };
  const auto* near_x = reinterpret_cast<const std::int64_t*>(tables.masks[0]);
  const auto* near_y = reinterpret_cast<const std::int64_t*>(tables.masks[1]);
  const auto* near_z = reinterpret_cast<const std::int64_t*>(tables.masks[2]);
  auto index = hn::Iota(du, 0);
  const auto step = hn::Set(du, lanes);
  auto pieces = hn::Zero(du), pairs = hn::Zero(du);
  std::size_t found = 0, k = 0;
  for (; k + lanes <= count; k += lanes) {
    hn::Vec<decltype(d)> x, y, z;
    hn::LoadInterleaved3(d, xyz + 3 * k, x, y, z);
    all_inside &=
        hn::AllTrue(d, hn::And(within(x, lo_x, hi_x), hn::And(within(y, lo_y, hi_y), within(z, lo_z, hi_z))));
    const auto sx = slot(x, at_x, in_x, last_x), sy = slot(y, at_y, in_y, last_y), sz = slot(z, at_z, in_z, last_z);
    // A vector of particles deep inside the region (their sets are empty):
    // no gathers (three per step, slow on Zen 4), nothing kept. About half
    // the steps of a 1e5-atom LJ lattice per rank at np 2 (cell order).
    if constexpr (kInterior) {
      if (hn::AllTrue(di, hn::And(between(sx, below_x, above_x),
                                  hn::And(between(sy, below_y, above_y), between(sz, below_z, above_z))))) {
        interior += lanes;
        index = hn::Add(index, step);
        continue;
      }
    }
    const auto near = hn::And(hn::GatherIndex(di, near_x, sx),
                              hn::And(hn::GatherIndex(di, near_y, sy), hn::GatherIndex(di, near_z, sz)));
    const auto set = hn::BitCast(du, near);
    const auto some = hn::Ne(set, hn::Zero(du));
    const auto hit = hn::Or(hn::Or(index, hn::BitCast(du, hn::ShiftLeft<hit_slot_shift(0)>(sx))),
                            hn::BitCast(du, hn::Or(hn::ShiftLeft<hit_slot_shift(1)>(sy),
                                                   hn::ShiftLeft<hit_slot_shift(2)>(sz))));
    pieces = hn::Or(pieces, set);
    pairs = hn::Add(pairs, hn::PopulationCount(set));
    std::size_t kept = 0;
    const auto to_front = CompressIndices(d, hn::RebindMask(d, some), kept);
    hn::StoreU(hn::BitCast(du, hn::TableLookupLanes(hn::BitCast(d, hit), to_front)), du, hits + found);
    hn::StoreU(hn::BitCast(du, hn::TableLookupLanes(hn::BitCast(d, set), to_front)), du, sets + found);
    found += kept;
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
    out.pieces |= set;
    out.pairs += static_cast<std::size_t>(std::popcount(set));
  }
  HWY_ALIGN std::uint64_t lanes_pieces[HWY_MAX_BYTES / 8], lanes_pairs[HWY_MAX_BYTES / 8];
  hn::Store(pieces, du, lanes_pieces);
  hn::Store(pairs, du, lanes_pairs);
  for (std::size_t l = 0; l < lanes; ++l) {
    out.pieces |= lanes_pieces[l];
    out.pairs += lanes_pairs[l];
  }
  if (!all_inside) *inside = false;
  out.interior = interior;
  return found;
}

std::size_t Candidates(const double* HWY_RESTRICT xyz, std::size_t count, const SlotTables& tables, Hits& out,
                       bool* inside, bool skip_interior) {
  return skip_interior ? CandidatesOf<true>(xyz, count, tables, out, inside)
                       : CandidatesOf<false>(xyz, count, tables, out, inside);
}

void ExactTests(const double* HWY_RESTRICT xyz, Hits& in, std::size_t n, std::size_t first,
                std::uint64_t pieces_set, const PieceTable& pieces, double cutoff2) {
  const hn::ScalableTag<double> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::RebindToUnsigned<decltype(d)> du;
  const std::size_t lanes = hn::Lanes(d);
  const auto zero = hn::Zero(d), reach2 = hn::Set(d, cutoff2);
  const auto point = hn::Set(du, hit_point_mask), base = hn::Set(du, first);
  // The candidates' coordinates, once, as three arrays (a full vector past
  // the last: the tail's lanes are masked off).
  // The hits become their copies' particle part, (first + point) << 5.
  for (std::size_t h = 0; h < n; h += lanes) {
    // (the lanes past the last hit read the block's first point)
    const auto index = hn::IfThenElseZero(hn::FirstN(du, n - h), hn::And(hn::LoadU(du, in.hits + h), point));
    const auto at = hn::BitCast(di, hn::Mul(index, hn::Set(du, 3)));
    hn::StoreU(hn::GatherIndex(d, xyz, at), d, in.x + h);
    hn::StoreU(hn::GatherIndex(d, xyz + 1, at), d, in.y + h);
    hn::StoreU(hn::GatherIndex(d, xyz + 2, at), d, in.z + h);
    hn::StoreU(hn::ShiftLeft<5>(hn::Add(index, base)), du, in.hits + h);
  }
  // Squared distance along one axis from v to [lo, hi] (0 inside), as
  // distance2() in ghost.cpp: max(max(lo - v, v - hi), 0), squared.
  const auto along = [&](auto v, auto lo, auto hi) HWY_ATTR {
    const auto outside = hn::Max(hn::Max(hn::Sub(lo, v), hn::Sub(v, hi)), zero);
    return hn::Mul(outside, outside);
  };
  for (; pieces_set; pieces_set &= pieces_set - 1) {
    const int b = std::countr_zero(pieces_set);
    const auto bit = hn::Set(du, std::uint64_t{1} << b);
    const auto code = hn::Set(du, pieces.code[b]);
    const auto shift_x = hn::Set(d, pieces.shift[0][b]), shift_y = hn::Set(d, pieces.shift[1][b]),
               shift_z = hn::Set(d, pieces.shift[2][b]);
    const auto lo_x = hn::Set(d, pieces.lo[0][b]), lo_y = hn::Set(d, pieces.lo[1][b]),
               lo_z = hn::Set(d, pieces.lo[2][b]);
    const auto hi_x = hn::Set(d, pieces.hi[0][b]), hi_y = hn::Set(d, pieces.hi[1][b]),
               hi_z = hn::Set(d, pieces.hi[2][b]);
    std::uint64_t* HWY_RESTRICT copies = *pieces.copy_end[b];
    double* HWY_RESTRICT images = (*pieces.position_end[b])->data();
    for (std::size_t h = 0; h < n; h += lanes) {
      auto near = hn::RebindMask(d, hn::TestBit(hn::LoadU(du, in.sets + h), bit));
      if (h + lanes > n) near = hn::And(near, hn::FirstN(d, n - h));  // (past the last: not candidates)
      if (hn::AllFalse(d, near)) continue;  // (none of these candidates has the piece)
      const auto x = hn::Add(hn::LoadU(d, in.x + h), shift_x), y = hn::Add(hn::LoadU(d, in.y + h), shift_y),
                 z = hn::Add(hn::LoadU(d, in.z + h), shift_z);
      // (x, y, z in this order, each product rounded: no fused multiply-add,
      // see CMakeLists.txt)
      const auto distance2 = hn::Add(hn::Add(along(x, lo_x, hi_x), along(y, lo_y, hi_y)), along(z, lo_z, hi_z));
      const auto keep = hn::And(near, hn::Le(distance2, reach2));
      const auto copy = hn::Or(hn::LoadU(du, in.hits + h), code);
      std::size_t kept = 0;
      const auto to_front = CompressIndices(d, keep, kept);
      hn::StoreU(hn::BitCast(du, hn::TableLookupLanes(hn::BitCast(d, copy), to_front)), du, copies);
      hn::StoreInterleaved3(hn::TableLookupLanes(x, to_front), hn::TableLookupLanes(y, to_front),
                            hn::TableLookupLanes(z, to_front), d, images);
      copies += kept;
      images += 3 * kept;
    }
    *pieces.copy_end[b] = copies;
    *pieces.position_end[b] = reinterpret_cast<Point*>(images);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace domex::ghost_detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace domex::ghost_detail {
HWY_EXPORT(Candidates);
HWY_EXPORT(ExactTests);

std::size_t candidates(std::span<const Point> points, const SlotTables& tables, Hits& out, bool& inside,
                       bool skip_interior) {
  out.pieces = 0;  // (summed into; Candidates sets out.interior)
  out.pairs = 0;
  return HWY_DYNAMIC_DISPATCH(Candidates)(points.empty() ? nullptr : points.data()->data(), points.size(), tables,
                                          out, &inside, skip_interior);
}

void exact_tests(std::span<const Point> block, Hits& in, std::size_t n, std::size_t first,
                 std::uint64_t pieces_set, const PieceTable& pieces, double cutoff2) {
  HWY_DYNAMIC_DISPATCH(ExactTests)(block.data()->data(), in, n, first, pieces_set, pieces, cutoff2);
}
}  // namespace domex::ghost_detail
#endif

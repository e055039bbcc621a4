// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Gravity kernels: Plummer-softened monopole interactions in fp32, vectorised
// with Google Highway and dispatched at run time (AVX-512, AVX2, SSE4, scalar),
// and the quadrupole term of cells in fp64 (vectorised over targets, dispatched alike;
// TreeForce uses an fp32 form of it, src/tree/simd.hpp).

#include <domex/tree/octree.hpp>

#include <cstddef>
#include <span>
#include <string>

namespace domex {

/// Targets of one interaction list in fp32 structure-of-arrays form,
/// positions relative to a nearby origin (the group's centre) so that fp32
/// differences keep their precision. Any count; the accelerations are added to.
struct KernelTargets {
  std::span<const float> x, y, z;
  std::span<float> ax, ay, az;
};

/// Point sources (particles, or cells as monopoles), same origin as the targets.
struct KernelSources {
  std::span<const float> x, y, z, mass;
};

/// Kept for callers written when target counts had to be multiples of it;
/// gravity_kernel now takes any count (padding only costs time).
inline constexpr std::size_t gravity_kernel_padding = 16;

/// a_i += sum_j m_j (x_j - x_i) / (|x_j - x_i|^2 + eps2)^(3/2): sources in
/// vectors, each lane summing every L-th source in order, the lanes then
/// summed (a fixed summation order for a given list and instruction set). fp32
/// reciprocal square root estimate refined by one Newton step; a pair at
/// zero distance with eps2 = 0 contributes nothing. Runtime-dispatched to the
/// best instruction set of this CPU.
void gravity_kernel(const KernelTargets& targets, const KernelSources& sources, float eps2);

/// out[j] = float(values[j] - origin) for every j: the conversion of a run of
/// sources to the kernel's fp32 form, vectorised and dispatched like the
/// kernel (rounded to nearest, the same as a scalar cast).
void relative_fp32(std::span<const double> values, double origin, std::span<float> out);

/// Name of the instruction set gravity_kernel runs with here ("AVX3", "AVX2", ...).
std::string gravity_kernel_target();

/// The second-order term of cells (added to their monopole terms computed
/// elsewhere), exact for the Plummer-softened potential: with d = x_i -
/// centre, s^2 = |d|^2 + eps2 and S the second moment,
/// a_i += 3 S d / s^5 + 3/2 tr(S) d / s^5 - 15/2 (d^T S d) d / s^7, in fp64.
void quadrupole_kernel(std::span<const Point> targets, std::span<Point> accelerations,
                       std::span<const Moments> cells, double eps2);

}  // namespace domex

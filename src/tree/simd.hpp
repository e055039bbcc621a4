// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Internal: the vectorised parts of the group walk (the opening test of a
// cell's children) and of the conversion of a group's interaction list to the
// kernel's fp32 form (positions relative to the group's origin), dispatched
// with the kernel (src/tree/kernel.cpp).

#include <cstddef>
#include <cstdint>

namespace domex::tree_detail {

/// The walk's view of the global tree's cells, one block per group of
/// siblings (the children of one cell; block 0 holds the root alone), so
/// that an opened cell's test reads one contiguous, aligned block: row r of
/// block g holds, for each sibling k < width, the centre, the box rounded
/// outwards to fp32, far2 = (opening length / theta)^2 rounded up (infinite
/// or NaN: never far), and the mass (for the walk's packed cell list). The
/// rounding is conservative: a cell is never taken whole where the exact
/// fp64 test opens it. Columns past a group's size are zero.
struct WalkGeometry {
  enum Row { cx, cy, cz, lo_x, lo_y, lo_z, hi_x, hi_y, hi_z, far2, mass, rows };
  const double* blocks = nullptr;
  std::size_t width = 8;  ///< columns per row: 8 (an octree's siblings), at least a vector
  [[nodiscard]] const double* block(std::uint32_t g) const noexcept { return blocks + std::size_t{g} * rows * width; }
};

/// The columns of a WalkGeometry block: 8, or a vector of doubles if wider.
std::size_t walk_block_width();

/// Where far_cells appends the cells it finds far (when given): index[count
/// + i] = first_index + k for the i-th far column k, and, when x is not
/// null, the column's centre relative to origin and its mass in fp32 at
/// x, y, z, mass[count + i]; count grows by the cells appended. Each array
/// must have room for `width` more entries past count (whole vectors are
/// written).
struct FarCellList {
  std::uint32_t* index = nullptr;
  std::uint32_t first_index = 0;
  const double* origin = nullptr;
  float *x = nullptr, *y = nullptr, *z = nullptr, *mass = nullptr;
  std::size_t count = 0;
};

/// The opening test of a block's first `count` cells (count <= width <= 64)
/// against a target box (lo x, y, z, hi x, y, z): bit k of the result is set
/// when cell k may be taken whole (no overlap, centre farther than
/// sqrt(far2), and, when search2 > 0, the boxes farther apart than sqrt(search2)).
/// With `out`, the far cells are also appended to it, in column order.
std::uint64_t far_cells(const double* block, std::size_t width, std::uint32_t count, const double target[6],
                        double search2, FarCellList* out = nullptr);

/// Where the fp32 list goes: x, y, z, mass, each at least as long as the list
/// (plus list_slack() for gather_particle_runs).
struct ListFp32 {
  float *x, *y, *z, *mass;
};

/// gather_particle_runs works in whole vectors: its input holds list_slack()
/// readable records past its last one, and each output array list_slack()
/// slots past the list's end, which it may overwrite. gather_records needs
/// no slack.
std::size_t list_slack();

/// Particles: the runs [ranges[2r], ranges[2r + 1]) of interleaved fp64
/// records (x, y, z, mass), one after another, from out[0] on.
void gather_particle_runs(const double* xyzm, const std::uint32_t* ranges, std::size_t range_count,
                          const double origin[3], ListFp32 out);

/// Cells: records of `stride` doubles holding x, y, z, mass at their start;
/// out[j] from records + index[j] * stride, for j < count (the slack of the
/// input is not needed here).
void gather_records(const double* records, std::size_t stride, const std::uint32_t* index, std::size_t count,
                    const double origin[3], ListFp32 out);

/// The fp64 pulls (G = 1, softening eps2) of n sources (x, y, z interleaved,
/// masses) on `count` samples, count a multiple of list_slack() (the double
/// lanes): a[s] = sum over j in order, written (not added) to ax, ay, az.
void direct_sum_fp64(const double* sx, const double* sy, const double* sz, std::size_t count, const double* xyz,
                     const double* masses, std::size_t n, double eps2, double* ax, double* ay, double* az);

/// The monopole and quadrupole terms of `count` cells (see gravity_kernel
/// and quadrupole_kernel) in fp32, added to ax, ay, az of `targets` targets
/// at tx, ty, tz. cells: 11 rows of `stride` floats: the centre x, y, z
/// (relative to the targets' origin), 3 times the second moments xx, yy,
/// zz, xy, xz, yz, 3/2 their trace and 4 times the mass. Lengths in a unit
/// of the caller's (a power of two of the problem's size keeps 1/s^5 in
/// fp32's range); a pair at zero distance with eps2 = 0 adds nothing.
void quadrupole_fp32(const float* tx, const float* ty, const float* tz, float* ax, float* ay, float* az,
                     std::size_t targets, const float* cells, std::size_t stride, std::size_t count, float eps2);

}  // namespace domex::tree_detail

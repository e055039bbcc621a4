// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The Lennard-Jones pair force of LAMMPS's lj/cut (epsilon = sigma = 1, no
// energy shift) over a half neighbour list with Newton's third law: each
// listed pair adds its force to both entries, a ghost's part goes back to its
// owner with GhostPlan::reverse_sum. The same arithmetic as LAMMPS's
// PairLJCut::compute (r2inv, r6inv, forcelj = r6inv (48 r6inv - 24), fpair =
// forcelj r2inv), so a run from the same data file prints the same thermo.

#include <domex/decompose/box.hpp>
#include <domex/neighbor/neighbor.hpp>

#include <cstddef>

namespace domex::md {

/// Sums a force pass accumulates when asked for energy (thermo steps).
struct PairSums {
  double energy = 0;  ///< sum over pairs of 4 (r^-12 - r^-6), r < cutoff
  double virial = 0;  ///< sum over pairs of r . F
  double inside = 0;  ///< pairs at r < cutoff (the unshifted cutoff's energy jumps: E + inside V(r_c) is smooth)
};

/// Which neighbours of each particle a pass takes.
enum class Neighbours { all, owned, ghosts };

/// Adds the LJ forces of the listed pairs of particles [begin, end) of
/// `list` into `f` (owned and ghost entries; `x` and `f` have the plan's
/// size() entries), for the `which` part of each list; with `energy`, adds
/// the pairs' energy and virial into `sums`. Pairs at r^2 >= cutoff^2 add
/// nothing (the list reaches cutoff + skin).
void lj_forces(const Point* x, Point* f, const NeighborList& list, std::size_t begin, std::size_t end, Neighbours which,
               double cutoff, bool energy, PairSums& sums);

}  // namespace domex::md

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fits domex's computation cost model from native records (issue 27).

A native run with DOMEX_SIM_RECORD=<prefix> writes one line per stretch of
computation, "<seconds>\\t<units>\\t<phase>", to <prefix>.<rank>
(include/domex/comm/simulated.hpp). This script fits, per phase,

    seconds = fixed + per_unit x units

by least squares of the relative errors at the mean time of each group of
calls with like units (both coefficients kept >= 0), prints the fit and the
worst group's error ("worst"), and writes the model that a simulation reads with DOMEX_SIM_MODEL=<file>
(sim/README.md, "Computation from a fitted model").

    sim/fit.py --output model.txt /tmp/records.*      # files, or prefixes
"""
import argparse
import glob
import math
import os
import sys
from collections import defaultdict


def read_records(paths):
    """(phase -> [(units, seconds)]) from record files or <prefix>.* groups."""
    files = []
    for path in paths:
        files += [path] if os.path.isfile(path) else sorted(glob.glob(glob.escape(path) + ".*"))
    if not files:
        sys.exit(f"sim/fit.py: no record files in {' '.join(paths)}")
    points = defaultdict(list)
    for name in files:
        with open(name) as f:
            for number, line in enumerate(f, 1):
                fields = line.rstrip("\n").split("\t")
                try:
                    seconds, units = float(fields[0]), float(fields[1])
                    phase = fields[2]
                except (ValueError, IndexError):
                    sys.exit(f"sim/fit.py: {name}:{number}: expected '<seconds>\\t<units>\\t<phase>', got {line!r}")
                points[phase].append((units, seconds))
    return points, files


def fit(points):
    """Fits a + b u (a, b >= 0) to the mean time of each group of calls whose
    units lie within 5 % of each other, minimising the relative errors (the
    groups' times span orders of magnitude, and a simulation needs each
    right relatively). Returns (a, b, groups, worst relative error)."""
    groups = defaultdict(list)
    for u, t in points:
        groups[round(math.log(u) * 20) if u > 0 else None].append((u, t))
    means = [(sum(u for u, _ in g) / len(g), sum(t for _, t in g) / len(g), len(g)) for g in groups.values()]
    means = [(u, t, n) for u, t, n in means if t > 0]
    if not means:
        return 0.0, 0.0, 0, 0.0

    def solve(with_fixed, with_slope):
        # Weighted normal equations, weight n / t^2 (relative errors).
        sw = swu = swuu = swt = swut = 0.0
        for u, t, n in means:
            w = n / (t * t)
            sw, swu, swuu, swt, swut = sw + w, swu + w * u, swuu + w * u * u, swt + w * t, swut + w * u * t
        if with_fixed and with_slope:
            det = sw * swuu - swu * swu
            if det > 1e-12 * sw * swuu:
                return (swuu * swt - swu * swut) / det, (sw * swut - swu * swt) / det
            with_fixed = False  # one group of units: proportional
        if with_slope:
            return 0.0, swut / swuu if swuu > 0 else 0.0
        return swt / sw, 0.0

    a, b = solve(True, True)
    if b < 0:  # time does not grow with the units: a constant
        a, b = solve(True, False)
    elif a < 0:  # through the origin
        a, b = solve(False, True)
    worst = max(abs(a + b * u - t) / t for u, t, _ in means)
    return a, b, len(means), worst


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", nargs="+", help="record files, or prefixes given to DOMEX_SIM_RECORD")
    parser.add_argument("--output", "-o", required=True, help="the model file to write")
    parser.add_argument("--note", default="", help="a line saying where the records came from (kept in the file)")
    args = parser.parse_args()
    points, files = read_records(args.records)
    rows = []
    print(f"{'phase':34} {'calls':>6} {'groups':>6} {'units (min-max)':>19} {'fixed us':>9} {'per unit ns':>12} "
          f"{'worst':>7}")
    for phase in sorted(points):
        a, b, groups, worst = fit(points[phase])
        units = [u for u, _ in points[phase]]
        rows.append((phase, a, b))
        print(f"{phase:34} {len(units):6d} {groups:6d} {min(units):9.4g}-{max(units):<9.4g} {a * 1e6:9.2f} "
              f"{b * 1e9:12.4f} {worst * 100:6.1f}%")
    with open(args.output, "w") as out:
        out.write("# domex computation model (sim/fit.py): seconds = fixed + per_unit x units\n")
        if args.note:
            out.write(f"# {args.note}\n")
        out.write(f"# from {len(files)} record files, {sum(len(p) for p in points.values())} records\n")
        out.write("# fixed_s\tper_unit_s\tphase\n")
        for phase, a, b in rows:
            out.write(f"{a:.6e}\t{b:.6e}\t{phase}\n")
    print(f"sim/fit.py: wrote {args.output} ({len(rows)} phases)")


if __name__ == "__main__":
    main()

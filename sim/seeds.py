#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The seed's before/after table of FDPS on Fugaku beside a simulated domex-ring (issue 27).

    sim/seeds.py ring <all-legacy ring.json> <all-fixes ring.json>

Seed 001: 2 M particles on 1,024 Fugaku nodes (Tofu), ms per step: before
105 (decomposition 1.5, exchange 10.5, force 54, other 38), after 7.2
(decomposition 0.41, exchange 0.78, tree 1, LET build 1.6, LET exchange 0.4,
walk 0.44, kernel 1.57). The simulated phases are the slowest rank's (max
over ranks), ms per step. A cell "reproduces" within 30 % of the seed's.
"""
import json
import sys

BEFORE = [  # (seed row, seed ms, domex phases summed)
    ("decomposition", 1.5, ["decompose"]),
    ("exchange", 10.5, ["exchange particles"]),
    ("force", 54.0, ["build tree", "build LET", "exchange LET", "traverse", "kernel"]),
    ("other", 38.0, ["other", "imbalance"]),
]
AFTER = [
    ("decomposition", 0.41, ["decompose"]),
    ("exchange", 0.78, ["exchange particles"]),
    ("tree", 1.0, ["build tree"]),
    ("LET build", 1.6, ["build LET"]),
    ("LET exchange", 0.4, ["exchange LET"]),
    ("walk", 0.44, ["traverse"]),
    ("kernel", 1.57, ["kernel"]),
    ("other (7.2 - the rows above)", 7.2 - 6.2, ["other", "imbalance"]),
]


def verdict(seed, simulated):
    ratio = simulated / seed if seed > 0 else float("inf")
    if 1 / 1.3 <= ratio <= 1.3:
        return "reproduces"
    return f"{ratio:.2g}x the seed's"


def table(title, rows, run, step_seed):
    phases = {p["phase"]: p["max_ms"] for p in run["phases"]}
    print(f"{title}: {run['config'].get('particles', '?')} particles, {run['provenance']['ranks']} ranks, "
          f"legacy {run['config'].get('legacy', '?')}")
    print(f"  {'seed row':30} {'seed ms':>8} {'domex ms':>9}   {'':20} domex phases (max over ranks)")
    for name, seed, names in rows:
        simulated = sum(phases.get(n, 0.0) for n in names)
        print(f"  {name:30} {seed:8.2f} {simulated:9.3f}   {verdict(seed, simulated):20} {' + '.join(names)}")
    print(f"  {'step':30} {step_seed:8.2f} {run['step_ms']:9.3f}   {verdict(step_seed, run['step_ms']):20}")
    return run["step_ms"]


def main():
    if len(sys.argv) != 4 or sys.argv[1] != "ring":
        sys.exit(__doc__)
    before = json.load(open(sys.argv[2]))
    after = json.load(open(sys.argv[3]))
    b = table("before (all legacy)", BEFORE, before, 105.0)
    a = table("after (all fixes)", AFTER, after, 7.2)
    print(f"  speed-up: seed {105 / 7.2:.1f}x, domex simulated {b / a:.2f}x")


if __name__ == "__main__":
    main()

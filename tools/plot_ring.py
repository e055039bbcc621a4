#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot domex-ring results to PNG.

    python3 tools/plot_ring.py results/ring-legacy.json -o results/ring-legacy.png   # before/after
    python3 tools/plot_ring.py results/ring/ring.json -o results/ring-energy.png     # energy error

ring-legacy.json (domex-ring --compare-legacy): one stacked bar per case (all
legacy, each fix alone, all fixes) of the ms per step in each phase (slowest
rank per phase), beside the seed's Fugaku figures for the four fixed phases.
ring.json (a run): the relative energy error against time.
"""
import argparse
import json
import sys

import benchplot  # noqa: F401  (matplotlib or one clear line)
import matplotlib.pyplot as plt

PHASES = ["decompose", "exchange particles", "build tree", "build LET", "exchange LET", "traverse", "kernel", "other",
          "imbalance"]
# FDPS on Fugaku (the seed study), ms per step: before -> after each fix.
SEED = {"exchange particles": (22, 2.2), "exchange LET": (15, 0.3), "build tree": (9.4, 0.44), "decompose": (8, 0.4)}


def legacy(data, output):
    runs = data["runs"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 2]})
    bottoms = [0.0] * len(runs)
    colours = plt.get_cmap("tab10")
    for k, phase in enumerate(PHASES):
        heights = [next((p["max_ms"] for p in r["phases"] if p["phase"] == phase), 0.0) for r in runs]
        left.bar(range(len(runs)), heights, bottom=bottoms, label=phase, color=colours(k))
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    for x, r in enumerate(runs):
        left.text(x, bottoms[x], f"{r['step_ms']:.1f}", ha="center", va="bottom", fontsize=8)
    left.set_xticks(range(len(runs)), [r["case"] for r in runs], rotation=20)
    left.set_ylabel("ms per step (slowest rank per phase)")
    left.set_title(f"domex-ring, N {data['particles']}, {data['ranks']} ranks (measured)")
    left.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    # The four phases each fix touches: legacy vs fixed here, and the seed's.
    first, last = runs[0], runs[-1]
    names = list(SEED)
    here_before = [next(p["max_ms"] for p in first["phases"] if p["phase"] == n) for n in names]
    here_after = [next(p["max_ms"] for p in last["phases"] if p["phase"] == n) for n in names]
    ratio_here = [b / a if a > 0 else 0 for b, a in zip(here_before, here_after)]
    ratio_seed = [SEED[n][0] / SEED[n][1] for n in names]
    xs = range(len(names))
    right.bar([x - 0.2 for x in xs], ratio_here, width=0.4, label="domex-ring here (legacy / fixed)")
    right.bar([x + 0.2 for x in xs], ratio_seed, width=0.4, label="FDPS on Fugaku (seed)")
    right.set_yscale("log")
    right.set_xticks(list(xs), names, rotation=20)
    right.set_ylabel("speed-up of the phase")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), fontsize=8)
    figure.tight_layout()
    figure.savefig(output, dpi=110)


def energy(data, output):
    rows = data["energy"]
    figure, axis = plt.subplots(figsize=(7, 4))
    axis.plot([r["time"] for r in rows], [r["relative_error"] for r in rows], marker=".")
    axis.set_xlabel("time (an orbit at r = 1 is 2 pi)")
    axis.set_ylabel("relative energy error (incl. dissipated)")
    config = data["config"]
    axis.set_title(f"domex-ring N {config['particles']}, {config['ranks']} ranks, dt {config['dt']:.3g}")
    axis.axhline(0, color="grey", linewidth=0.5)
    figure.tight_layout()
    figure.savefig(output, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="ring-legacy.json (--compare-legacy) or ring.json (a run)")
    parser.add_argument("-o", "--output", default="ring.png", help="PNG to write")
    args = parser.parse_args()
    try:
        with open(args.json) as handle:
            data = json.load(handle)
        kind = "legacy" if "runs" in data else "energy" if "energy" in data else None
        if kind is None:
            raise ValueError("neither a --compare-legacy file (runs) nor a run's ring.json (energy)")
        (legacy if kind == "legacy" else energy)(data, args.output)
    except (OSError, ValueError, KeyError, StopIteration) as error:
        print(f"plot_ring: cannot plot {args.json}: {error!r}", file=sys.stderr)
        return 2
    print(f"plot_ring: wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

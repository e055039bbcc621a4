#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot `domex-bench tree --json` output to PNG: one stacked bar per
configuration (LET mode, theta) of the time per step in each phase (slowest
rank per phase), load imbalance its own segment.

    python3 tools/plot_tree.py results/tree.json -o results/tree.png
"""
from benchplot import load, run  # first: one line if matplotlib is missing

import matplotlib.pyplot as plt  # noqa: E402

PHASES = ["decompose", "exchange particles", "build tree", "build LET", "exchange LET", "traverse", "kernel", "other",
          "imbalance"]


def main() -> int:
    args, data = load(__doc__, "tree")
    rows = data["rows"]
    labels = [f"{r['let']}\ntheta {r['theta']}" for r in rows]
    figure, axis = plt.subplots(figsize=(max(5.0, 1.6 * len(rows) + 2), 4.8))
    bottoms = [0.0] * len(rows)
    for k, phase in enumerate(PHASES):
        heights = []
        for r in rows:
            times = {p["name"]: p["max_s"] for p in r["phases"]}
            heights.append(1e3 * times.get(phase, 0.0))
        if not any(heights):
            continue
        axis.bar(labels, heights, bottom=bottoms, label=phase, color=f"C{k}", hatch="//" if phase == "imbalance" else None)
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    for x, r in enumerate(rows):
        axis.annotate(f"{r['step_s'] * 1e3:.0f} ms\n{r['interactions_per_particle']:.0f} int/p",
                      (x, bottoms[x]), ha="center", va="bottom", fontsize=8)
    axis.set_ylabel("time per step [ms] (slowest rank per phase)")
    axis.set_ylim(0, 1.2 * max(bottoms))
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axis.set_title(f"domex tree: {data.get('particles', '?')} {data.get('distribution', '')} particles, "
                   f"{data.get('ranks', '?')} ranks, kernel {data.get('kernel', '?')}", fontsize=10)
    figure.tight_layout()
    figure.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    run(main)

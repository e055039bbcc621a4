#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot `domex-bench sparse --json` output: time per call against message
size, one line per algorithm with its min-max band, one column per pattern
(log-log), and below it each algorithm's time over the best algorithm's at
that size ("x best"), to PNG.

    python3 tools/plot_sparse.py results/sparse.json -o results/sparse.png
"""
from benchplot import band, clip_outliers, legend_outside, load, run, times_best  # first: one line if matplotlib is missing

import matplotlib.pyplot as plt  # noqa: E402

STYLE = {
    "alltoall": ("tab:red", "o"),
    "sendrecv_reduce": ("tab:orange", "s"),
    "grid": ("tab:olive", "X"),
    "plan, checked": ("black", "*"),
    "plan, promised": ("dimgray", "P"),
    "nbx": ("tab:blue", "^"),
    "reduce_scatter": ("tab:green", "v"),
    "rma_fence": ("tab:purple", "D"),
    "rma_passive": ("tab:brown", "p"),
    "automatic": ("black", "x"),
}


def main() -> int:
    args, data = load(__doc__, "sparse")
    rows = data["rows"]
    patterns = list(dict.fromkeys(row["pattern"] for row in rows))
    algorithms = list(dict.fromkeys(row["algorithm"] for row in rows))
    figure, axes = plt.subplots(2, len(patterns), figsize=(4.6 * len(patterns) + 2.2, 7.4), squeeze=False,
                                sharex="col", sharey="row", gridspec_kw={"height_ratios": [3, 2]})
    for column, pattern in enumerate(patterns):
        top, bottom = axes[0][column], axes[1][column]
        medians = {}
        for algorithm in algorithms:
            points = sorted((r["message_bytes"], r["median_s"] * 1e6, r["min_s"] * 1e6, r["max_s"] * 1e6)
                            for r in rows if r["pattern"] == pattern and r["algorithm"] == algorithm)
            if not points:
                continue
            color, marker = STYLE.get(algorithm, ("gray", "."))
            sizes = [p[0] for p in points]
            dashed = "--" if algorithm == "automatic" else "-"
            band(top, sizes, [p[2] for p in points], [p[3] for p in points], color)
            top.plot(sizes, [p[1] for p in points], marker=marker, color=color, label=algorithm, linestyle=dashed,
                     linewidth=1.3, markersize=4)
            medians[algorithm] = {p[0]: p[1] for p in points}
        for algorithm, ratios in times_best(medians).items():
            color, marker = STYLE.get(algorithm, ("gray", "."))
            sizes = sorted(ratios)
            bottom.plot(sizes, [ratios[s] for s in sizes], marker=marker, color=color, linewidth=1.3, markersize=4,
                        linestyle="--" if algorithm == "automatic" else "-")
        top.set_title(pattern)
        top.set_xscale("log", base=2)
        top.set_yscale("log")
        top.grid(True, which="both", alpha=0.3)
        bottom.set_yscale("log")
        bottom.axhline(1.0, color="black", linewidth=0.8)
        bottom.set_xlabel("bytes per message")
        bottom.grid(True, which="both", alpha=0.3)
    clip_outliers(axes[0][0], [r["median_s"] * 1e6 for r in rows], [r["min_s"] * 1e6 for r in rows])
    axes[0][0].set_ylabel("time per call [µs]: median (slowest rank)\nband: min-max, clipped at 4x the top median")
    axes[1][0].set_ylabel("x best\n(median / best median at that size)")
    legend_outside(axes[0][-1], title="algorithm")
    figure.suptitle(f"domex sparse exchange, {data.get('ranks', '?')} ranks")
    figure.tight_layout()
    figure.savefig(args.output, dpi=110, bbox_inches="tight")
    print(f"plot_sparse: wrote {args.output}")
    return 0


if __name__ == "__main__":
    run(main)

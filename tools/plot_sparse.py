#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot `domex-bench sparse --json` output: time per call against message
size, one line per algorithm, one panel per pattern (log-log), to PNG.

    python3 tools/plot_sparse.py results/sparse.json -o results/sparse.png
"""
import sys

from benchplot import load  # first: exits with one line if matplotlib is missing

import matplotlib.pyplot as plt  # noqa: E402

STYLE = {
    "alltoall": ("tab:red", "o"),
    "sendrecv_reduce": ("tab:orange", "s"),
    "grid": ("tab:olive", "x"),
    "plan, checked": ("black", "*"),
    "plan, promised": ("dimgray", "P"),
    "nbx": ("tab:blue", "^"),
    "reduce_scatter": ("tab:green", "v"),
    "rma_fence": ("tab:purple", "D"),
    "rma_passive": ("tab:brown", "P"),
    "automatic": ("black", "x"),
}


def main() -> int:
    args, data = load(__doc__, "sparse")
    rows = data["rows"]
    patterns = list(dict.fromkeys(row["pattern"] for row in rows))
    figure, axes = plt.subplots(1, len(patterns), figsize=(5.2 * len(patterns), 4.4), squeeze=False, sharey=True)
    for axis, pattern in zip(axes[0], patterns):
        for algorithm in dict.fromkeys(row["algorithm"] for row in rows):
            points = sorted((r["message_bytes"], r["median_s"] * 1e6, r["min_s"] * 1e6, r["max_s"] * 1e6)
                            for r in rows if r["pattern"] == pattern and r["algorithm"] == algorithm)
            if not points:
                continue
            color, marker = STYLE.get(algorithm, ("gray", "."))
            sizes = [p[0] for p in points]
            axis.plot(sizes, [p[1] for p in points], marker=marker, color=color, label=algorithm,
                      linestyle="--" if algorithm == "automatic" else "-", linewidth=1.4, markersize=5)
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_title(pattern)
        axis.set_xlabel("bytes per message")
        axis.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("median time per call [µs] (slowest rank)")
    axes[0][-1].legend(fontsize=8)
    figure.suptitle(f"domex sparse exchange, {data.get('ranks', '?')} ranks")
    figure.tight_layout()
    figure.savefig(args.output, dpi=110)
    print(f"plot_sparse: wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot `domex-bench migrate --json` output: migration time per step for each
path (neighbour-only vs general exchange with each algorithm), grouped by
clustering, plus the decomposition time, to PNG.

    python3 tools/plot_migrate.py results/migrate.json -o results/migrate.png
"""
from benchplot import legend_outside, load, run  # first: one line if matplotlib is missing

import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    args, data = load(__doc__, "migrate")
    rows = data["rows"]
    clusterings = list(dict.fromkeys(r["clustering"] for r in rows))
    paths = list(dict.fromkeys(r["path"] for r in rows))
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"wspace": 0.5, "width_ratios": [1.6, 1]})
    width = 0.8 / len(paths)
    # µs below a millisecond, so the axis reads 12, not 0.012.
    scale, unit = (1e6, "µs") if max(r["migrate_s"] for r in rows) < 1e-3 else (1e3, "ms")
    for p, path in enumerate(paths):
        times = [next((r["migrate_s"] * scale for r in rows if r["path"] == path and r["clustering"] == c), 0)
                 for c in clusterings]
        left.bar([i + p * width for i in range(len(clusterings))], times, width, label=path)
    left.set_xticks([i + 0.4 - width / 2 for i in range(len(clusterings))])
    left.set_xticklabels([f"clustering {c:g}" for c in clusterings])
    left.set_ylabel(f"migration time per step [{unit}] (median, slowest rank)")
    legend_outside(left, title="path")  # beside the bars, never over them
    left.set_title("migration")
    d_scale, d_unit = (1e6, "µs") if max(r["decompose_s"] for r in rows) < 1e-3 else (1e3, "ms")
    decompose = [next(r["decompose_s"] * d_scale for r in rows if r["clustering"] == c) for c in clusterings]
    imbalance = [max(r["imbalance"] for r in rows if r["clustering"] == c) for c in clusterings]
    right.bar(range(len(clusterings)), decompose, color="tab:gray")
    right.set_xticks(range(len(clusterings)))
    right.set_xticklabels([f"{c:g}\n({m:.3f})" for c, m in zip(clusterings, imbalance)])
    right.set_xlabel("clustering (max/mean load)")
    right.set_ylabel(f"decomposition time [{d_unit}] (median)")
    right.set_title("multisection rebalance")
    figure.suptitle(f"domex migrate, {data.get('ranks', '?')} ranks, {data.get('particles_per_rank', '?')} particles per rank", y=1.02)
    figure.savefig(args.output, dpi=110, bbox_inches="tight")
    print(f"plot_migrate: wrote {args.output}")
    return 0


if __name__ == "__main__":
    run(main)

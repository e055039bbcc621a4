#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot `domex-bench migrate --json` output: migration time per step for each
path (neighbour-only vs general exchange with each algorithm), grouped by
clustering, plus the decomposition time, to PNG.

    python3 tools/plot_migrate.py results/migrate.json -o results/migrate.png
"""
import sys

from benchplot import load  # first: exits with one line if matplotlib is missing

import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    args, data = load(__doc__, "migrate")
    rows = data["rows"]
    clusterings = list(dict.fromkeys(r["clustering"] for r in rows))
    paths = list(dict.fromkeys(r["path"] for r in rows))
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    width = 0.8 / len(paths)
    for p, path in enumerate(paths):
        times = [next((r["migrate_s"] * 1e3 for r in rows if r["path"] == path and r["clustering"] == c), 0)
                 for c in clusterings]
        left.bar([i + p * width for i in range(len(clusterings))], times, width, label=path)
    left.set_xticks([i + 0.4 - width / 2 for i in range(len(clusterings))])
    left.set_xticklabels([f"clustering {c:g}" for c in clusterings])
    left.set_ylabel("migration time per step [ms] (median, slowest rank)")
    left.legend(fontsize=8)
    left.set_title("migration")
    decompose = [next(r["decompose_s"] * 1e3 for r in rows if r["clustering"] == c) for c in clusterings]
    imbalance = [max(r["imbalance"] for r in rows if r["clustering"] == c) for c in clusterings]
    right.bar(range(len(clusterings)), decompose, color="tab:gray")
    right.set_xticks(range(len(clusterings)))
    right.set_xticklabels([f"{c:g}\n(max/mean {m:.3f})" for c, m in zip(clusterings, imbalance)])
    right.set_ylabel("decomposition time [ms] (median)")
    right.set_title("multisection rebalance")
    figure.suptitle(f"domex migrate, {data.get('ranks', '?')} ranks, {data.get('particles_per_rank', '?')} particles per rank")
    figure.tight_layout()
    figure.savefig(args.output, dpi=110)
    print(f"plot_migrate: wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

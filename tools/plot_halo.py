#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot `domex-bench halo --json` output to PNG: (A) time of one exchange
against bytes per exchange for each method/stencil, and (B) time per step
against the ghost depth k for each amount of computation.

    python3 tools/plot_halo.py results/halo.json -o results/halo.png
"""
import sys

from benchplot import load  # first: exits with one line if matplotlib is missing

import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    args, data = load(__doc__, "halo")
    rows = data["rows"]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for variant in variants:
        points = sorted((r["bytes"], r["exchange_s"] * 1e3) for r in rows if r["variant"] == variant and r["experiment"] == "A")
        if points:
            left.plot([b / 1024 for b, _ in points], [t for _, t in points], "o-", label=variant)
    alpha, beta = data.get("alpha_s", 0), data.get("beta_s_per_byte", 0)
    left.set_xlabel("bytes per exchange and rank [KiB]")
    left.set_ylabel("one exchange [ms] (median)")
    left.set_title(f"A: volume varied (fit: alpha {alpha * 1e6:.2f} us, beta {beta * 1e9:.3f} ns/B)", fontsize=10)
    left.legend(fontsize=8)
    for w, work in enumerate(sorted({r["work"] for r in rows if r["experiment"] == "B"})):
        for variant, style in (("plan/full", "-"), ("naive/full", ":")):
            points = sorted((r["depth"], r["step_s"] * 1e3) for r in rows
                            if r["experiment"] == "B" and r["work"] == work and r["variant"] == variant)
            if points:
                right.plot([k for k, _ in points], [t for _, t in points], "o" + style, color=f"C{w}",
                           label=f"{variant}, work {work}")
    right.set_xlabel("ghost depth k (exchange every k steps)")
    right.set_xticks(sorted({r["depth"] for r in rows}))
    right.set_ylabel("time per step [ms] (median)")
    right.set_yscale("log")
    right.set_title("B: computation varied, 8 fields", fontsize=10)
    right.legend(fontsize=8)
    figure.suptitle(f"domex halo, {data.get('ranks', '?')} ranks, {data.get('cells_per_rank', '?')}^3 cells per rank")
    figure.tight_layout()
    figure.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

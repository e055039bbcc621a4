#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot `domex-bench halo --json` output to PNG. Top (experiment A): time of
one exchange against the number of fields exchanged, one line per variant
(method/stencil, separate fields or interlaced) and ghost depth k, and each
line's time over the best variant's at the same k and field count ("x best").
Bottom (experiment B): time per step against k, one line per variant and
amount of computation, and over the best (variant, k) of that computation.
The JSON holds medians only (no min-max), so there are no bands.

    python3 tools/plot_halo.py results/halo.json -o results/halo.png
"""
from benchplot import legend_outside, load, run  # first: one line if matplotlib is missing

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

LINESTYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P"]


def style_legend(axis, variants, colours, styled, title):
    """Two keys in one legend: colour = variant, line style and marker = `title`."""
    handles = [Line2D([], [], color=colours[v], linewidth=2) for v in variants]
    labels = list(variants)
    handles.append(Line2D([], [], linestyle="none"))
    labels.append(title)
    for s, value in enumerate(styled):
        handles.append(Line2D([], [], color="gray", linestyle=LINESTYLES[s % 4], marker=MARKERS[s % 6]))
        labels.append(str(value))
    legend_outside(axis, handles, labels)


def experiment(rows, times_axis, ratio_axis, group, x_of, y_of, best_key, colours):
    """One line per (variant, group value) on `times_axis`; on `ratio_axis` the
    same lines, each point divided by the best of all points with the same
    best_key(row)."""
    values = sorted({r[group] for r in rows})
    best = {}
    for r in rows:
        if y_of(r) > 0:
            best[best_key(r)] = min(best.get(best_key(r), y_of(r)), y_of(r))
    for variant in colours:
        for g, value in enumerate(values):
            points = sorted((x_of(r), y_of(r), best.get(best_key(r), 0)) for r in rows
                            if r["variant"] == variant and r[group] == value)
            if not points:
                continue
            style = dict(color=colours[variant], linestyle=LINESTYLES[g % 4], marker=MARKERS[g % 6], markersize=4,
                         linewidth=1.3)
            times_axis.plot([p[0] for p in points], [p[1] for p in points], **style)
            ratio_axis.plot([p[0] for p in points if p[2] > 0], [p[1] / p[2] for p in points if p[2] > 0], **style)
    ratio_axis.axhline(1.0, color="black", linewidth=0.8)
    ratio_axis.set_yscale("log")
    for axis in (times_axis, ratio_axis):
        axis.grid(True, which="both", alpha=0.3)
    return values


def main() -> int:
    args, data = load(__doc__, "halo")
    rows = data["rows"]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    colours = {v: f"C{i}" for i, v in enumerate(variants)}
    a_rows = [r for r in rows if r["experiment"] == "A"]
    b_rows = [r for r in rows if r["experiment"] == "B"]
    shown = [(name, part) for name, part in (("A", a_rows), ("B", b_rows)) if part]
    figure, axes = plt.subplots(len(shown), 2, figsize=(13, 4.4 * len(shown)), squeeze=False)
    for (name, part), (times_axis, ratio_axis) in zip(shown, axes):
        if name == "A":
            depths = experiment(part, times_axis, ratio_axis, "depth", lambda r: r["exchanged"], lambda r: r["exchange_s"] * 1e3,
                                lambda r: (r["depth"], r["exchanged"]), {v: colours[v] for v in variants})
            alpha, beta = data.get("alpha_s", 0), data.get("beta_s_per_byte", 0)
            times_axis.set_title(f"A: one exchange alone (fit: alpha {alpha * 1e6:.2f} us, beta {beta * 1e9:.3f} ns/B)",
                          fontsize=10)
            times_axis.set_ylabel("one exchange [ms] (median)")
            ratio_axis.set_title("A: x best variant at the same k and field count", fontsize=10)
            ratio_axis.set_ylabel("x best")
            for axis in (times_axis, ratio_axis):
                axis.set_xscale("log", base=2)
                axis.set_xticks(sorted({r["exchanged"] for r in part}))
                axis.set_xticklabels([str(n) for n in sorted({r["exchanged"] for r in part})])
                axis.set_xlabel("fields exchanged")
            times_axis.set_yscale("log")
            style_legend(ratio_axis, variants, colours, depths, "ghost depth k")
        else:
            works = experiment(part, times_axis, ratio_axis, "work", lambda r: r["depth"], lambda r: r["step_s"] * 1e3,
                               lambda r: (r["work"],), {v: colours[v] for v in variants})
            times_axis.set_title(f"B: time per step, {part[0]['exchanged']} fields exchanged", fontsize=10)
            times_axis.set_ylabel("time per step [ms] (median)")
            times_axis.set_yscale("log")
            ratio_axis.set_title("B: x best (variant, k) with the same computation", fontsize=10)
            ratio_axis.set_ylabel("x best")
            for axis in (times_axis, ratio_axis):
                axis.set_xticks(sorted({r["depth"] for r in part}))
                axis.set_xlabel("ghost depth k (exchange every k steps)")
            style_legend(ratio_axis, variants, colours, works, "work (flops per cell)")
    figure.suptitle(f"domex halo, {data.get('ranks', '?')} ranks, {data.get('cells_per_rank', '?')}^3 cells per rank")
    figure.tight_layout()
    figure.savefig(args.output, dpi=110, bbox_inches="tight")
    print(f"plot_halo: wrote {args.output}")
    return 0


if __name__ == "__main__":
    run(main)

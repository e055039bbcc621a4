#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot `domex-bench decompose --json` output from runs at several rank
counts: rebalance time per call against P for each input, cut method and
sample budget, with p^(1/3) and P reference lines, and the imbalance and the
bytes each rank received beside it, to PNG.

    for p in 1 2 4 8; do mpirun -n $p domex-bench decompose --json decompose_$p.json; done
    python3 tools/plot_decompose.py decompose_*.json -o decompose.png
"""
import argparse
import json

from benchplot import fail, run  # first: one line if matplotlib is missing

import matplotlib.pyplot as plt  # noqa: E402


def load(paths):
    rows = []
    for path in paths:
        try:
            with open(path) as handle:
                data = json.load(handle)
            for row in data["rows"]:
                rows.append(dict(row, ranks=data["ranks"], particles_per_rank=data["particles_per_rank"]))
        except OSError as error:
            fail(f"cannot read {path}: {error.strerror}")
        except ValueError as error:
            fail(f"{path} is not valid JSON: {error}")
        except (KeyError, TypeError) as error:
            fail(f"{path}: not the output of domex-bench decompose --json (missing field {error})")
    if not rows:
        fail("no rows")
    return rows


def method(row):
    unit = {"global": "/rank", "sampled": "/part"}.get(row["method"], "")
    return row["method"] + (f" {row['budget']}{unit}" if unit else "")


def label(row):
    return f"{row['input']}, {method(row)}"


STYLES = {"uniform": "-", "clustered": "--", "ring": ":"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="+", help="outputs of domex-bench decompose --json, one per rank count")
    parser.add_argument("-o", "--output", default="decompose.png", help="PNG to write")
    args = parser.parse_args()
    rows = load(args.json)
    series = {}
    for row in rows:
        series.setdefault(label(row), []).append(row)
    figure, (time_axis, bytes_axis, balance_axis) = plt.subplots(1, 3, figsize=(15, 4.5))
    ranks = sorted({row["ranks"] for row in rows})
    # Colour: method and budget; line style: input.
    methods = list(dict.fromkeys(method(row) for row in rows))
    colours = {m: f"C{i % 10}" for i, m in enumerate(methods)}
    for name, points in series.items():
        points.sort(key=lambda r: r["ranks"])
        p = [r["ranks"] for r in points]
        style = dict(marker="o", color=colours[method(points[0])], linestyle=STYLES.get(points[0]["input"], "-"),
                     label=name)
        time_axis.plot(p, [r["rebalance_s"] * 1e3 for r in points], **style)
        bytes_axis.plot(p, [max(r["bytes_received"], 1) for r in points], **style)
        balance_axis.plot(p, [r["imbalance"] for r in points], **style)
    # Reference lines through the smallest time at the smallest P > 1 (or P = 1).
    start = min(ranks[1:] or ranks)
    base = min(r["rebalance_s"] * 1e3 for r in rows if r["ranks"] == start)
    line = [q for q in ranks if q >= start]
    time_axis.plot(line, [base * (q / start) ** (1 / 3) for q in line], color="black", linewidth=2, alpha=0.4,
                   label="∝ P^(1/3)")
    time_axis.plot(line, [base * q / start for q in line], color="gray", linewidth=2, alpha=0.4, label="∝ P")
    for axis, title, ylabel in ((time_axis, "rebalance time", "ms per call (median, slowest rank)"),
                                (bytes_axis, "received per rank", "bytes (max over ranks)"),
                                (balance_axis, "imbalance after migration", "max / mean particles")):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("ranks P")
        axis.set_ylabel(ylabel)
        axis.set_title(title)
    time_axis.set_yscale("log")
    bytes_axis.set_yscale("log")
    time_axis.legend(fontsize=7)
    figure.suptitle(f"domex multisection rebalance, {rows[0]['particles_per_rank']} particles per rank")
    figure.tight_layout()
    figure.savefig(args.output, dpi=110)
    print(f"plot_decompose: wrote {args.output}")
    return 0


if __name__ == "__main__":
    run(main)

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plots the halo-exchange throughput histograms of a domex-lattice run
(lattice.json): communication alone and communication + computation, in MB/s
bins, one panel each; and the CG residual history.

    python3 tools/plot_lattice.py results/lattice/lattice.json -o results/lattice.png
"""
import argparse
import json
import sys

try:
    import matplotlib
except ImportError as missing:
    print(f"plot_lattice.py: needs {missing.name}, which {sys.executable} lacks: "
          "run /usr/bin/python3 after scripts/setup.sh, or apt-get install python3-matplotlib",
          file=sys.stderr)
    sys.exit(2)

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402


def bars(axis, histogram, title, colour):
    counts = histogram["counts"]
    low, high = histogram["low_mb_s"], histogram["high_mb_s"]
    width = (high - low) / max(len(counts), 1)
    lefts = [low + i * width for i in range(len(counts))]
    axis.bar(lefts, counts, width=width, align="edge", color=colour, edgecolor="black", linewidth=0.4)
    axis.set_xlabel("throughput per exchange [MB/s]")
    axis.set_ylabel("exchanges (all ranks)")
    axis.set_title(title)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", help="lattice.json written by domex-lattice")
    parser.add_argument("-o", "--output", default="lattice.png", help="PNG to write")
    args = parser.parse_args()
    try:
        with open(args.json) as handle:
            run = json.load(handle)
        alone, with_compute = run["histogram_alone"], run["histogram_with_compute"]
    except (OSError, ValueError, KeyError) as error:
        print(f"plot_lattice.py: cannot read {args.json}: {error}", file=sys.stderr)
        sys.exit(2)
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    bars(axes[0], alone, "communication alone", "#3b528b")
    bars(axes[1], with_compute, "communication + computation", "#21918c")
    axes[2].semilogy(range(len(run["residuals"])), run["residuals"], marker=".")
    axes[2].set_xlabel("CG iteration")
    axes[2].set_ylabel("|r| / |b|")
    axes[2].set_title(f"CG, {run['iterations']} iterations")
    dims = "x".join(str(d) for d in run["dims"])
    local = "x".join(str(n) for n in run["local"])
    figure.suptitle(f"domex-lattice: {run['ranks']} ranks (dims {dims}), {local} sites per rank, "
                    f"path {run['path']}, {run['bytes_per_exchange']} B per exchange")
    figure.tight_layout()
    figure.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: BSD-3-Clause
"""What every plot script here shares: the command line (a `domex-bench
--json` file and `-o` PNG), reading the JSON, one-line errors with exit
status 2 (never a traceback), min-max bands, legends outside the axes."""
import argparse
import json
import os
import sys

SCRIPT = os.path.splitext(os.path.basename(sys.argv[0]))[0]


def fail(message: str):
    """One line on stderr, exit status 2."""
    print(f"{SCRIPT}: {message}", file=sys.stderr)
    sys.exit(2)


try:
    import matplotlib
except ImportError:
    fail(f"needs matplotlib, which {sys.executable} lacks: "
         "run /usr/bin/python3 after scripts/setup.sh, or apt-get install python3-matplotlib")

matplotlib.use("Agg")  # files only, no display needed


def load(doc: str, name: str):
    """Parses `<json> [-o PNG]` and returns (args, data); exits with a message
    naming the file if it cannot be read, is not JSON or has no rows."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("json", help=f"output of domex-bench {name} --json")
    parser.add_argument("-o", "--output", default=f"{name}.png", help="PNG to write")
    args = parser.parse_args()
    try:
        with open(args.json) as handle:
            data = json.load(handle)
    except OSError as error:
        fail(f"cannot read {args.json}: {error.strerror}")
    except ValueError as error:
        fail(f"{args.json} is not valid JSON: {error}")
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        fail(f"{args.json} has no \"rows\" list: not the output of domex-bench {name} --json")
    if not data["rows"]:
        fail(f"{args.json} has no rows")
    return args, data


def run(main):
    """Runs main() and exits with its status; a row that lacks a field or
    holds the wrong type ends in one line naming the file, status 2."""
    try:
        status = main()
    except (KeyError, TypeError, ValueError, IndexError) as error:
        what = f"missing field {error}" if isinstance(error, KeyError) else f"{type(error).__name__}: {error}"
        fail(f"{sys.argv[1] if len(sys.argv) > 1 else 'the JSON'}: unexpected content ({what})")
    sys.exit(status)


def band(axis, xs, lows, highs, color):
    """The min-max range of repeated measurements, shaded behind a line."""
    axis.fill_between(xs, lows, highs, color=color, alpha=0.1, linewidth=0)


def clip_outliers(axis, medians, lows, factor=4.0):
    """Log y limits from the medians (up to `factor` times the largest) and
    the smallest minimum, so that one slow outlier (a max) does not squash
    every line to the bottom; bands are clipped at the top."""
    top, bottom = max(medians), min(min(lows), min(medians))
    if top > 0 and bottom > 0:
        axis.set_ylim(bottom / 1.5, top * factor)


def legend_outside(axis, handles=None, labels=None, **options):
    """A legend to the right of `axis`, so it never covers data (save with
    bbox_inches="tight" to keep it in the file)."""
    options = {"fontsize": 8, "loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "borderaxespad": 0.0, **options}
    if handles is None:
        return axis.legend(**options)
    return axis.legend(handles, labels, **options)


def times_best(values_by_line):
    """{line: {x: t}} -> {line: {x: t / min over lines of t at x}}."""
    best = {}
    for points in values_by_line.values():
        for x, t in points.items():
            if t > 0:
                best[x] = min(best.get(x, t), t)
    return {line: {x: t / best[x] for x, t in points.items() if x in best} for line, points in values_by_line.items()}

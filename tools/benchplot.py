# SPDX-License-Identifier: BSD-3-Clause
"""What every plot script here shares: the command line (a `domex-bench
--json` file and `-o` PNG) and reading the JSON, with a one-line error."""
import argparse
import json
import os
import sys

try:
    import matplotlib
except ImportError:
    # One clear line instead of a traceback (exit 1), for every plot script.
    print(f"{os.path.basename(sys.argv[0])}: needs matplotlib, which {sys.executable} lacks: "
          "run /usr/bin/python3 after scripts/setup.sh, or apt-get install python3-matplotlib",
          file=sys.stderr)
    sys.exit(1)

matplotlib.use("Agg")  # files only, no display needed


def load(doc: str, name: str):
    """Parses `<json> [-o PNG]` and returns (args, data); exits with a message
    naming the file if it cannot be read or has no rows."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("json", help=f"output of domex-bench {name} --json")
    parser.add_argument("-o", "--output", default=f"{name}.png", help="PNG to write")
    args = parser.parse_args()
    try:
        with open(args.json) as handle:
            data = json.load(handle)
        data["rows"]
    except (OSError, ValueError, KeyError) as error:
        print(f"plot_{name}: cannot read {args.json}: {error}", file=sys.stderr)
        sys.exit(1)
    return args, data

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: installs what is missing, builds domex (Release) and runs the
# sparse-exchange benchmark at 8 ranks, printing the comparison table of the
# six algorithms and automatic; writes results/sparse.json and results/sparse.png.
# Ranks: DOMEX_RANKS (default 8); extra benchmark flags are passed through.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/setup.sh"
build=${DOMEX_BUILD_DIR:-$root/build/release}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
# domex-installables: the libraries and programs that `cmake --install` copies
# (domex-bench among them), so an install after the demo is complete.
cmake --build "$build" -j"$(nproc)" --target domex-installables
mkdir -p "$root/results"
mpirun -n "${DOMEX_RANKS:-8}" "$build/bench/domex-bench" sparse --json "$root/results/sparse.json" "$@"
"$DOMEX_PYTHON" "$root/tools/plot_sparse.py" "$root/results/sparse.json" -o "$root/results/sparse.png"
echo "domex: wrote results/sparse.json and results/sparse.png"

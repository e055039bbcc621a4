#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The plot scripts in tools/ as a user runs them: sparse, halo and migrate
# draw small JSON files shaped as domex-bench writes them; every script says
# what is wrong in one line (no traceback) and exits with 2 when the input is
# missing or not valid JSON, and when matplotlib is missing (python -S: no
# site packages).
# Usage: plots.sh PYTHON_WITH_MATPLOTLIB
set -euo pipefail
python=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "plots: $*" >&2; exit 1; }

# Two algorithms, two sizes, one pattern; min <= median <= max.
cat > "$work/sparse.json" <<'JSON'
{"benchmark": "sparse", "ranks": 2, "rows": [
 {"pattern": "neighbours6", "algorithm": "nbx", "message_bytes": 8, "median_s": 2e-6, "min_s": 1e-6, "max_s": 5e-6},
 {"pattern": "neighbours6", "algorithm": "nbx", "message_bytes": 4096, "median_s": 4e-6, "min_s": 3e-6, "max_s": 9e-6},
 {"pattern": "neighbours6", "algorithm": "alltoall", "message_bytes": 8, "median_s": 3e-6, "min_s": 2e-6, "max_s": 4e-6},
 {"pattern": "neighbours6", "algorithm": "alltoall", "message_bytes": 4096, "median_s": 3e-6, "min_s": 2e-6, "max_s": 8e-6}]}
JSON
rows=()
for e in A B; do
  for v in plan/full naive/full; do
    for k in 1 2; do
      for n in 1 8; do
        [[ $e == B && $n == 1 ]] && continue
        rows+=("{\"experiment\": \"$e\", \"variant\": \"$v\", \"depth\": $k, \"exchanged\": $n, \"work\": $((n * 2)), \"bytes\": $((n * k * 1000)), \"step_s\": 0.00$k$n, \"exchange_s\": 0.000$n$k}")
      done
    done
  done
done
(IFS=,; echo "{\"benchmark\": \"halo\", \"ranks\": 2, \"cells_per_rank\": 12, \"alpha_s\": 1e-6, \"beta_s_per_byte\": 1e-9, \"rows\": [${rows[*]}]}") > "$work/halo.json"
cat > "$work/migrate.json" <<'JSON'
{"benchmark": "migrate", "ranks": 2, "particles_per_rank": 100, "rows": [
 {"clustering": 0, "path": "neighbour", "migrate_s": 1e-5, "decompose_s": 2e-5, "imbalance": 1.01},
 {"clustering": 0, "path": "nbx", "migrate_s": 2e-5, "decompose_s": 2e-5, "imbalance": 1.01},
 {"clustering": 0.9, "path": "neighbour", "migrate_s": 3e-5, "decompose_s": 3e-5, "imbalance": 1.02},
 {"clustering": 0.9, "path": "nbx", "migrate_s": 1e-5, "decompose_s": 3e-5, "imbalance": 1.02}]}
JSON
for name in sparse halo migrate; do
  "$python" "$root/tools/plot_$name.py" "$work/$name.json" -o "$work/$name.png" > /dev/null 2> "$work/err" ||
    fail "plot_$name.py failed: $(cat "$work/err")"
  [[ $(head -c 8 "$work/$name.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "plot_$name.py wrote no PNG"
done

# expect_two "PYTHON [FLAGS]" SCRIPT ARGS...: exit status 2, one line on stderr, no traceback.
expect_two() {
  local -a interpreter
  read -r -a interpreter <<< "$1"
  local script=$2 status=0; shift 2
  "${interpreter[@]}" "$root/tools/$script" "$@" > /dev/null 2> "$work/err" || status=$?
  [[ $status -eq 2 ]] || fail "$script $*: exit status $status, expected 2: $(cat "$work/err")"
  [[ $(wc -l < "$work/err") -eq 1 ]] || fail "$script $*: not one line: $(cat "$work/err")"
  ! grep -q Traceback "$work/err" || fail "$script $*: a traceback"
}
echo '{"rows": [' > "$work/broken.json"
echo '{"rows": [{"nothing": 1}]}' > "$work/odd.json"
for script in plot_sparse.py plot_halo.py plot_migrate.py plot_decompose.py plot_tree.py plot_lattice.py plot_mhd.py; do
  expect_two "$python" "$script" "$work/missing.json" -o "$work/x.png"
  expect_two "$python" "$script" "$work/broken.json" -o "$work/x.png"
  [[ $script == plot_mhd.py ]] || expect_two "$python" "$script" "$work/odd.json" -o "$work/x.png"
  expect_two "$python -S" "$script" "$work/sparse.json" -o "$work/x.png"  # no matplotlib
done
echo "plots: all checks passed"

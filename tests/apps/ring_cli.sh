#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The domex-ring executable as a user runs it: a short run prints the seed's
# table and writes ring.json, a VTK snapshot and a density image (no .part
# left); a checkpoint + restart gives the checksum of the uninterrupted run;
# --compare-legacy prints the before/after table; bad input exits with 2,
# names the value and writes nothing; the INI example parses.
# Usage: ring_cli.sh DOMEX_RING MPIEXEC "PREFLAGS" [PYTHON]
set -euo pipefail
ring=$1 mpiexec=$2 preflags=$3 python=${4:-}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "ring_cli: $*" >&2; exit 1; }
# shellcheck disable=SC2086
run() { local np=$1; shift; "$mpiexec" -n "$np" $preflags "$ring" "$@"; }

common=(--particles 3000 --threads 1 --dispersion 5e-3 --verify)
run 2 "${common[@]}" --steps 16 --snapshot-every 8 --image-every 16 --checkpoint-every 8 --output "$work/run" \
  > "$work/run.txt" 2> "$work/run.err" || fail "2-rank run failed: $(cat "$work/run.err")"
for f in ring.json ring_000008.vtk ring_000016.vtk checkpoint_000008/meta.txt; do
  [[ -s "$work/run/$f" ]] || fail "missing or empty: $f"
done
[[ -s "$work/run/ring_000016.png" ]] || fail "no density image"
[[ -z "$(find "$work/run" -name '*.part')" ]] || fail "a .part file or folder was left behind"
for phase in decompose "exchange particles" "build tree" "build LET" "exchange LET" traverse kernel other imbalance; do
  grep -q "  $phase " "$work/run.txt" || fail "no '$phase' row in the table"
done
grep -q "energy error" "$work/run.txt" || fail "no energy line"
grep -q "step     16/16" "$work/run.err" || fail "no progress line for the last step"
head -c 26 "$work/run/ring_000016.vtk" | grep -q "vtk DataFile" || fail "the snapshot is not legacy VTK"
"${python:-python3}" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['config']['particles']==3000 and len(d['phases'])==9" \
  "$work/run/ring.json" || fail "ring.json is not what was run"

# Restart from step 8, run 8 more: the uninterrupted run's checksum.
run 2 "${common[@]}" --steps 8 --restart "$work/run/checkpoint_000008" --output "" > "$work/restart.txt" 2> /dev/null ||
  fail "restart failed"
sum1=$(grep checksum "$work/run.txt") sum2=$(grep checksum "$work/restart.txt")
[[ -n "$sum1" && "$sum1" == "$sum2" ]] || fail "restart checksum differs: '$sum1' vs '$sum2'"

run 2 --particles 3000 --threads 1 --steps 4 --compare-legacy --output "" > "$work/legacy.txt" 2> /dev/null ||
  fail "--compare-legacy failed"
grep -q "all legacy" "$work/legacy.txt" && grep -q "speed-up vs legacy" "$work/legacy.txt" ||
  fail "no before/after table: $(cat "$work/legacy.txt")"

# expect_bad NAME NEEDLE ARGS...: exit 2, the message names NEEDLE, no output folder.
expect_bad() {
  local name=$1 needle=$2; shift 2
  local status=0
  run 2 "$@" > /dev/null 2> "$work/bad.err" || status=$?
  [[ $status -eq 2 ]] || fail "$name: exit status $status, expected 2: $(cat "$work/bad.err")"
  grep -q -- "$needle" "$work/bad.err" || fail "$name: message does not name '$needle': $(cat "$work/bad.err")"
  [[ ! -e "$work/bad" ]] || fail "$name: the output folder was created"
}
expect_bad "negative dt" "--dt -1" --dt -1 --output "$work/bad"
expect_bad "unknown legacy" "fastest" --legacy merge-sort,fastest --output "$work/bad"
expect_bad "unknown LET mode" "nonsense" --let nonsense --output "$work/bad"
expect_bad "divisions" "--divisions 3 1 1" --divisions 3 1 1 --output "$work/bad"
expect_bad "reuse vs rebalance" "--rebalance-every 3" --reuse 2 --rebalance-every 3 --output "$work/bad"
expect_bad "restart folder" "--restart $work/nowhere" --restart "$work/nowhere" --output "$work/bad"
expect_bad "output in /proc" "--output /proc/domex-test" --output /proc/domex-test
printf 'particles = 100\nstpes = 5\n' > "$work/typo.ini"
expect_bad "INI typo" "stpes" --config "$work/typo.ini" --output "$work/bad"
# The shipped example configuration parses and runs.
run 1 --config "$root/apps/ring/ring.ini" --particles 500 --steps 2 --output "" > /dev/null 2>&1 ||
  fail "apps/ring/ring.ini does not run"
echo "ring_cli: all checks passed"

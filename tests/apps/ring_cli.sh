#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The domex-ring executable as a user runs it: a short run prints the seed's
# table and writes ring.json, a VTK snapshot and a density image (no .part
# left); a checkpoint + restart gives the checksum of the uninterrupted run;
# --compare-legacy prints the before/after table; bad input exits with 2,
# names the value and writes nothing; the INI example parses; an HDF5
# snapshot (--snapshot-format hdf5 from an INI file) with its XDMF sidecar
# holds ids 0..N-1 (read back by RING_H5_CHECK), or a build without HDF5
# refuses it with exit 2.
# Usage: ring_cli.sh DOMEX_RING MPIEXEC "PREFLAGS" [PYTHON] [RING_H5_CHECK]
set -euo pipefail
app=$1 mpiexec=$2 preflags=$3 python=${4:-} h5check=${5:-}
cli_name=ring_cli
# shellcheck source=tests/apps/cli_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_common.sh"

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

# HDF5 snapshot, the format chosen in an INI file: .h5 + .xmf sidecar, no .part
# left, every id 0..N-1 once in the file; without parallel HDF5 a clear refusal.
printf 'snapshot-format = hdf5\nsnapshot-every = 4\nimage-every = 0\n' > "$work/h5.ini"
status=0
run 2 --config "$work/h5.ini" --particles 3000 --threads 1 --steps 4 --output "$work/h5" > /dev/null 2> "$work/h5.err" ||
  status=$?
if [[ $status -eq 2 ]]; then
  grep -q "built without parallel HDF5" "$work/h5.err" || fail "hdf5 refused without saying why: $(cat "$work/h5.err")"
  [[ ! -e "$work/h5" ]] || fail "a refused hdf5 run created its output folder"
else
  [[ $status -eq 0 ]] || fail "hdf5 run failed: $(cat "$work/h5.err")"
  for f in ring_000004.h5 ring_000004.xmf; do
    [[ -s "$work/h5/$f" ]] || fail "missing or empty: $f"
  done
  [[ -z "$(find "$work/h5" -name '*.part')" ]] || fail "an hdf5 .part file was left behind"
  [[ -z "$(find "$work/h5" -name '*.vtk')" ]] || fail "--snapshot-format hdf5 wrote VTK as well"
  xmf="$work/h5/ring_000004.xmf"
  grep -q 'TopologyType="Polyvertex" NumberOfElements="3000"' "$xmf" || fail "the XDMF sidecar has not 3000 points"
  grep -q 'Dimensions="3000 3" .*>ring_000004.h5:/position<' "$xmf" || fail "the XDMF geometry is not /position"
  grep -q 'ring_000004.h5:/velocity<' "$xmf" && grep -q 'ring_000004.h5:/id<' "$xmf" ||
    fail "the XDMF sidecar lacks velocity or id"
  if [[ -n "$h5check" ]]; then
    "$h5check" "$work/h5/ring_000004.h5" > "$work/h5check.txt" || fail "ring_h5_check failed"
    grep -q "ring_h5_check: 3000 particles" "$work/h5check.txt" || fail "the .h5 file: $(cat "$work/h5check.txt")"
  fi
fi

expect_bad "negative dt" "--dt -1" --dt -1 --output "$work/bad"
expect_bad "unknown legacy" "fastest" --legacy merge-sort,fastest --output "$work/bad"
expect_bad "snapshot format" "--snapshot-format vtu" --snapshot-format vtu --output "$work/bad"
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

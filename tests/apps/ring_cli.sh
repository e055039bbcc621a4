#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The domex-ring executable as a user runs it: a short run prints the seed's
# table and writes ring.json, a VTK snapshot and a density image (no .part
# left); a checkpoint + restart gives the checksum of the uninterrupted run
# (same np), restarts on another np too, and takes --particles from the
# checkpoint (--steps counts from step 0, as in domex-mhd); a missing,
# truncated or mismatched checkpoint exits with 2 naming the file;
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

common=(--threads 1 --dispersion 5e-3 --verify)
run 2 --particles 3000 "${common[@]}" --steps 16 --snapshot-every 8 --image-every 16 --checkpoint-every 8 --output "$work/run" \
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
"${python:-python3}" "$root/tests/apps/vtk_check.py" "$work/run/ring_000016.vtk" 3000 velocity > /dev/null ||
  fail "the snapshot is not legacy VTK of the 3000 particles"
"${python:-python3}" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['config']['particles']==3000 and len(d['phases'])==9" \
  "$work/run/ring.json" || fail "ring.json is not what was run"

# Restart from step 8 to step 16 (--steps counts from step 0; --particles
# comes from the checkpoint): the uninterrupted run's checksum.
run 2 "${common[@]}" --steps 16 --restart "$work/run/checkpoint_000008" --output "" > "$work/restart.txt" 2> /dev/null ||
  fail "restart failed"
sum1=$(grep checksum "$work/run.txt") sum2=$(grep checksum "$work/restart.txt")
[[ -n "$sum1" && "$sum1" == "$sum2" ]] || fail "restart checksum differs: '$sum1' vs '$sum2'"
grep -q "N 3000  2 ranks  8 steps" "$work/restart.txt" || fail "restart did not run steps 9-16 of 3000 particles"
"$app" --help | grep -q "counted from step 0" || fail "--help does not say what --steps counts"

# A checkpoint of 3 ranks: bitwise on 3 ranks, and on 2 ranks the particles
# are redistributed by the decomposition (same count, energy conserved).
# (1000 particles, 8 steps: 3 ranks are oversubscribed, slow under MPICH and the sanitizers.)
run 3 --particles 1000 "${common[@]}" --steps 8 --checkpoint-every 4 --image-every 0 --output "$work/np3" \
  > "$work/np3.txt" 2> /dev/null || fail "3-rank run failed"
ck3="$work/np3/checkpoint_000004"
grep -q "^ranks 3$" "$ck3/meta.txt" || fail "the 3-rank checkpoint does not say 3 ranks"
run 3 "${common[@]}" --steps 8 --restart "$ck3" --output "" > "$work/np3-again.txt" 2> /dev/null ||
  fail "restart on 3 ranks failed"
sum1=$(grep checksum "$work/np3.txt") sum2=$(grep checksum "$work/np3-again.txt")
[[ -n "$sum1" && "$sum1" == "$sum2" ]] || fail "3-rank restart checksum differs: '$sum1' vs '$sum2'"
run 2 "${common[@]}" --steps 8 --restart "$ck3" --output "$work/np2" > "$work/np2.txt" 2> "$work/np2.err" ||
  fail "restart of a 3-rank checkpoint on 2 ranks failed: $(cat "$work/np2.err")"
grep -q "restarted at step 4" "$work/np2.err" || fail "2-rank restart: no 'restarted at step 4'"
"${python:-python3}" -c "import json,sys; d=json.load(open(sys.argv[1]))
assert d['config']['particles']==1000 and d['config']['ranks']==2 and d['steps_run']==4, d['config']
assert abs(d['energy_relative_error']) < 1e-6, d['energy_relative_error']" "$work/np2/ring.json" ||
  fail "2-rank restart of a 3-rank checkpoint: ring.json is not 4 steps of 1000 particles with energy conserved"

# A bad checkpoint is bad input: exit 2, the message names the file.
cp -r "$ck3" "$work/ck-short"
truncate -s 1000 "$work/ck-short/rank_000001.bin"
expect_bad "truncated checkpoint" "ck-short/rank_000001.bin: truncated" --restart "$work/ck-short" --steps 8 --output "$work/bad"
cp -r "$ck3" "$work/ck-missing"
rm "$work/ck-missing/rank_000002.bin"
expect_bad "rank file missing" "ck-missing/rank_000002.bin: missing" --restart "$work/ck-missing" --steps 8 --output "$work/bad"
cp -r "$ck3" "$work/ck-mixed"
cp "$work/run/checkpoint_000008/rank_000000.bin" "$work/ck-mixed/rank_000000.bin"
expect_bad "files of two checkpoints" "ck-mixed" --restart "$work/ck-mixed" --steps 8 --output "$work/bad"
expect_bad "checkpoint of other physics" "meta.txt: written with --dt" --restart "$ck3" --steps 8 --dt 0.002 --output "$work/bad"
expect_bad "--particles not the checkpoint's" "holds 1000 particles, --particles is 2000" \
  --restart "$ck3" --particles 2000 --steps 8 --output "$work/bad"
expect_bad "checkpoint beyond --steps" "at step 4, beyond --steps 2" --restart "$ck3" --steps 2 --output "$work/bad"

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
# Unsigned options: the value typed is named, never a wrapped-around number.
expect_bad "negative particles" "^domex-ring: --particles -5: must be a positive integer" --particles -5 --output "$work/bad"
expect_bad "huge particles" "--particles 99999999999999999999999: " --particles 99999999999999999999999 --output "$work/bad"
expect_bad "particles over 2^40" "--particles 2000000000000: .*2^40" --particles 2000000000000 --output "$work/bad"
expect_bad "negative seed" "--seed -1: must be a whole number" --seed -1 --output "$work/bad"
expect_bad "huge steps" "--steps 99999999999999999999: must be a whole number" --steps 99999999999999999999 --output "$work/bad"
printf 'particles = -3\n' > "$work/negative.ini"
expect_bad "negative particles in INI" "--particles -3: " --config "$work/negative.ini" --output "$work/bad"
expect_bad "output in /proc" "--output /proc/domex-test" --output /proc/domex-test
printf 'particles = 100\nstpes = 5\n' > "$work/typo.ini"
expect_bad "INI typo" "stpes" --config "$work/typo.ini" --output "$work/bad"
# The shipped example configuration parses and runs.
run 1 --config "$root/apps/ring/ring.ini" --particles 500 --steps 2 --output "" > /dev/null 2>&1 ||
  fail "apps/ring/ring.ini does not run"
echo "ring_cli: all checks passed"

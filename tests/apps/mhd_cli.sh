#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The domex-mhd executable as a user runs it: a short run writes the table,
# mhd.json, PNGs and VTK snapshots (no .part left); the same checksum on 1 and
# 2 ranks; a bad configuration exits with 2, names the value under one prefix
# (domex-mhd:) and writes nothing; checkpoint/restart equals the uninterrupted
# run bitwise (other np and depth); HDF5 snapshots with XDMF sidecars, the same
# bytes on 1 and 2 ranks (if built);
# tools/plot_mhd.py reads the last snapshot (when a python with matplotlib is given).
# Usage: mhd_cli.sh DOMEX_MHD MPIEXEC "PREFLAGS" [PYTHON]
set -euo pipefail
app=$1 mpiexec=$2 preflags=$3 python=${4:-}
cli_name=mhd_cli
# shellcheck source=tests/apps/cli_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_common.sh"

common=(--cells 12 10 8 --x-min -6 --x-max 6 --half-width 5 --dipole 20 --r-inner 2.5 --steps 6 --depth 2 --image-every 3 --snapshot-every 6 --verify)
run 2 "${common[@]}" --output "$work/two" > "$work/two.txt" 2> "$work/two.err" || fail "2-rank run failed: $(cat "$work/two.err")"
run 1 "${common[@]}" --output "$work/one" > "$work/one.txt" 2> /dev/null || fail "1-rank run failed"
for f in mhd.json slice_000000.png slice_000003.png slice_000006.png snapshot_000000.vtk snapshot_000006.vtk; do
  [[ -s "$work/two/$f" ]] || fail "missing or empty: $f"
done
[[ -z "$(find "$work/two" -name '*.part')" ]] || fail "a .part file was left behind"
grep -q "efficiency" "$work/two.txt" || fail "no efficiency line in the table"
grep -q "step      6/6" "$work/two.err" || fail "no progress line for the last step"
sum1=$(grep checksum "$work/one.txt") sum2=$(grep checksum "$work/two.txt")
[[ -n "$sum1" && "$sum1" == "$sum2" ]] || fail "checksums differ: '$sum1' vs '$sum2'"
cmp -s "$work/one/snapshot_000006.vtk" "$work/two/snapshot_000006.vtk" || fail "1- and 2-rank snapshots differ"

status=0
run 2 --cells 4 4 4 --depth 3 --dims 2 1 1 --output "$work/bad" > /dev/null 2> "$work/bad.err" || status=$?
[[ $status -eq 2 ]] || fail "bad --depth: exit status $status, expected 2"
grep -q -- "--depth 3" "$work/bad.err" || fail "bad --depth: message does not name it: $(cat "$work/bad.err")"
# One prefix: the application's name, not "domex: rank R:" in front of it as well.
grep -q -- "^domex-mhd: --depth 3: " "$work/bad.err" || fail "bad --depth: not 'domex-mhd: --depth 3: ...': $(cat "$work/bad.err")"
[[ ! -e "$work/bad" ]] || fail "bad --depth: the output folder was created"
status=0
run 1 --problem nonsense --output "$work/bad" > /dev/null 2> "$work/bad.err" || status=$?
[[ $status -eq 2 ]] || fail "bad --problem: exit status $status, expected 2"
[[ ! -e "$work/bad" ]] || fail "bad --problem: the output folder was created"
# A number past its type is named as typed, not run as LONG_MAX.
expect_bad "huge steps" "^domex-mhd: --steps 99999999999999999999: must be a whole number" --steps 99999999999999999999 --output "$work/bad"
expect_bad "negative steps" "^domex-mhd: --steps -1: must be 0 or more" --steps -1 --output "$work/bad"
# --steps 0, as in domex-ring: the initial state only (table, JSON, step-0 snapshot), no step taken.
run 2 --cells 8 8 8 --steps 0 --snapshot-every 1 --image-every 0 --output "$work/zero" > "$work/zero.txt" 2> /dev/null ||
  fail "--steps 0 failed"
grep -q "steps  *0 " "$work/zero.txt" && [[ -s "$work/zero/snapshot_000000.vtk" && -s "$work/zero/mhd.json" ]] ||
  fail "--steps 0: no table or step-0 output: $(cat "$work/zero.txt")"
# A grid far beyond memory is refused before anything is allocated.
expect_bad "huge grid" "--cells 100000 100000 100000" --cells 100000 100000 100000 --output "$work/bad"
# An unknown key in the INI file (a typo) is an error, not a silent default.
printf 'cells = 8 8 8\nstpes = 5\n' > "$work/typo.ini"
expect_bad "INI typo" "stpes" --config "$work/typo.ini" --output "$work/bad"
# An output folder that cannot be created is refused before the run.
touch "$work/a-file"
expect_bad "output under a file" "--output $work/a-file/out" --cells 8 8 8 --steps 2 --output "$work/a-file/out"
expect_bad "output in /proc" "--output /proc/domex-test" --cells 8 8 8 --steps 2 --output /proc/domex-test

# Checkpoint/restart: 8 steps == 4 steps + restart + 4 steps, bitwise, also on
# another number of ranks and depth; a checkpoint of other physics is refused.
ck=(--cells 12 10 8 --x-min -6 --x-max 6 --half-width 5 --dipole 20 --r-inner 2.5 --image-every 0 --snapshot-every 0 --verify)
run 2 "${ck[@]}" --steps 8 --depth 2 --checkpoint-every 4 --output "$work/ck" > "$work/ck.txt" 2> /dev/null || fail "checkpointing run failed"
[[ -s "$work/ck/checkpoint_000004.dmx" && -s "$work/ck/checkpoint_000008.dmx" ]] || fail "checkpoints missing"
[[ -z "$(find "$work/ck" -name '*.part')" ]] || fail "a checkpoint .part file was left behind"
run 1 "${ck[@]}" --steps 8 --depth 3 --restart "$work/ck/checkpoint_000004.dmx" --output "$work/ck1" > "$work/ck1.txt" 2> /dev/null ||
  fail "restart failed"
sum_full=$(grep checksum "$work/ck.txt") sum_restart=$(grep checksum "$work/ck1.txt")
[[ -n "$sum_full" && "$sum_full" == "$sum_restart" ]] || fail "restart differs: '$sum_full' vs '$sum_restart'"
"$app" --help | grep -q "counted from step 0" || fail "--help does not say what --steps counts"
status=0
run 2 "${ck[@]}" --steps 8 --nu 0.2 --restart "$work/ck/checkpoint_000004.dmx" --output "$work/ck2" > /dev/null 2> "$work/ck2.err" ||
  status=$?
[[ $status -eq 2 ]] && grep -q -- "--nu" "$work/ck2.err" || fail "restart with another --nu: status $status: $(cat "$work/ck2.err")"
# A missing or truncated checkpoint, or one beyond --steps, is bad input too: exit 2, the file named.
head -c 600 "$work/ck/checkpoint_000004.dmx" > "$work/short.dmx"
for bad in "$work/nowhere.dmx" "$work/short.dmx"; do
  status=0
  run 2 "${ck[@]}" --steps 8 --restart "$bad" --output "$work/ck3" > /dev/null 2> "$work/ck3.err" || status=$?
  [[ $status -eq 2 ]] && grep -q -- "$bad" "$work/ck3.err" || fail "restart from $bad: status $status: $(cat "$work/ck3.err")"
  [[ ! -e "$work/ck3" ]] || fail "restart from $bad: the output folder was created"
done
status=0
run 2 "${ck[@]}" --steps 2 --restart "$work/ck/checkpoint_000004.dmx" --output "$work/ck3" > /dev/null 2> "$work/ck3.err" || status=$?
[[ $status -eq 2 ]] && grep -q "beyond --steps 2" "$work/ck3.err" || fail "restart beyond --steps: status $status: $(cat "$work/ck3.err")"

# HDF5 snapshots (when built with parallel HDF5): .h5 + .xmf sidecar, no
# .part left, the same bytes from 1 and 2 ranks; otherwise a clear refusal.
h5=(--cells 12 10 8 --x-min -6 --x-max 6 --half-width 5 --dipole 20 --r-inner 2.5 --steps 4 --depth 2 --image-every 0
    --snapshot-every 2 --snapshot-format hdf5)
status=0
run 2 "${h5[@]}" --output "$work/h5two" > /dev/null 2> "$work/h5.err" || status=$?
if [[ $status -eq 2 ]]; then
  grep -q "built without parallel HDF5" "$work/h5.err" || fail "hdf5 refused without saying why: $(cat "$work/h5.err")"
else
  [[ $status -eq 0 ]] || fail "hdf5 run failed: $(cat "$work/h5.err")"
  run 1 "${h5[@]}" --output "$work/h5one" > /dev/null 2>&1 || fail "1-rank hdf5 run failed"
  for f in snapshot_000000.h5 snapshot_000000.xmf snapshot_000004.h5 snapshot_000004.xmf; do
    [[ -s "$work/h5two/$f" ]] || fail "missing or empty: $f"
    cmp -s "$work/h5one/$f" "$work/h5two/$f" || fail "1- and 2-rank $f differ"
  done
  grep -q 'snapshot_000004.h5:/rho' "$work/h5two/snapshot_000004.xmf" || fail "the XDMF sidecar does not point at the .h5"
  [[ -z "$(find "$work/h5two" -name '*.part')" ]] || fail "an hdf5 .part file was left behind"
fi

if [[ -n "$python" ]]; then
  "$python" "$root/tools/plot_mhd.py" "$work/two/snapshot_000006.vtk" -o "$work/plot.png" > /dev/null
  [[ -s "$work/plot.png" ]] || fail "plot_mhd.py wrote no PNG"
fi
echo "mhd_cli: all checks passed"

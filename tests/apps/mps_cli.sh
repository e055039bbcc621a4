#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The domex-mps executable as a user runs it: a short run writes the phase
# table, the Z(T) table, mps.json, front.csv, the PNGs at their sizes and
# particle snapshots (VTK, HDF5) (no .part left); a run to the impact on the
# far wall stops comparing there; checkpoint/restart
# at the same np gives the uninterrupted run's checksum, and a checkpoint is
# read at another np; bad values exit with 2, name the value under one prefix
# (domex-mps:) and write nothing.
# Usage: mps_cli.sh DOMEX_MPS MPIEXEC "PREFLAGS"
set -euo pipefail
app=$1 mpiexec=$2 preflags=$3
cli_name=mps_cli
# shellcheck source=tests/apps/cli_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_common.sh"

common=(--resolution 8 --end-time 0.5 --verify)
run 2 "${common[@]}" --count-exchange put --snapshot-every 1000 --output "$work/two" > "$work/two.txt" 2> "$work/two.err" ||
  fail "2-rank run failed: $(cat "$work/two.err")"
[[ -s "$work/two/mps.json" && -s "$work/two/front.png" ]] || fail "no mps.json or front.png"
ls "$work/two"/flow_*.png > /dev/null 2>&1 || fail "no PNG"
[[ -z "$(find "$work/two" -name '*.part')" ]] || fail "a .part file was left behind"
for needle in "Poisson CG" "Poisson matrix" "CG time" "preconditioner mic" "ghost update" "ghost build" "neighbour search" "migration" "count exchange (put)" \
              "ranks each rank exchanges with" "Martin & Moyce" "checksum"; do
  grep -q "$needle" "$work/two.txt" || fail "no '$needle' in the output: $(cat "$work/two.txt")"
done
grep -q "step .*T .*Z .*CG" "$work/two.err" || fail "no progress line"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['particles']['fluid']==128 and d['front_T_Z'] and d['cg_iterations_total']>0" \
  "$work/two/mps.json" || fail "mps.json lacks the particles, the front or the CG iterations"
# front.csv: the header, and T = 0.41 compared (unshifted and shifted); the images at their stated sizes
# (a/8: the flow plot 720 x 459 pixels, 921 x 555 with its axes; front.png 733 x 576).
header=step,T,Z,Z_experiment,deviation,Z_shifted_0.175,deviation_shifted_0.175,at_far_wall
[[ "$(head -1 "$work/two/front.csv")" == "$header" ]] ||
  fail "front.csv header: $(head -1 "$work/two/front.csv")"
grep -Eq '^,0\.410000,[0-9.]+,1\.11,-?[0-9.]+,[0-9.]+,-?[0-9.]+,0$' "$work/two/front.csv" ||
  fail "front.csv: no compared row at T = 0.41: $(grep '^,' "$work/two/front.csv")"
png_size() {  # width x height from the PNG's IHDR
  python3 -c "import struct,sys; print('%dx%d' % struct.unpack('>II', open(sys.argv[1],'rb').read(24)[16:24]))" "$1"
}
flow=$(ls "$work/two"/flow_*.png | tail -1)
[[ "$(png_size "$flow")" == 921x555 ]] || fail "$flow: $(png_size "$flow")"
[[ "$(png_size "$work/two/front.png")" == 733x576 ]] || fail "front.png: $(png_size "$work/two/front.png")"
# A run to the impact (a/16: the front reaches the far wall at T = 2.95): the table and front.csv stop
# comparing there and say so; the flag turns 1.
run 2 --resolution 16 --output "$work/wall" > "$work/wall.txt" 2> /dev/null || fail "a/16 run failed"
grep -q "the front reached the far wall .* at T = 2.9" "$work/wall.txt" ||
  fail "no impact line: $(cat "$work/wall.txt")"
grep -Eq '^ +2\.98 +3\.67 +[0-9.]+ +wall +\|' "$work/wall.txt" ||
  fail "T = 2.98 compared past the impact: $(grep 2.98 "$work/wall.txt")"
grep -Eq '^,2\.980000,[0-9.]+,3\.67,,[0-9.]+,-?[0-9.]+,1$' "$work/wall/front.csv" ||
  fail "front.csv at T = 2.98: $(grep '^,2.98' "$work/wall/front.csv")"
grep -Eq '^,2\.830000,[0-9.]+,3\.44,-?[0-9.]+,[0-9.]+,-?[0-9.]+,0$' "$work/wall/front.csv" ||
  fail "front.csv at T = 2.83: $(grep '^,2.83' "$work/wall/front.csv")"
[[ "$(tail -1 "$work/wall/front.csv" | cut -d, -f8)" == 1 ]] || fail "front.csv: the last step not flagged at the wall"
# The last step's count partners, a line per rank (sim/counts.cpp --partners): at np 2 each rank names the other.
[[ "$(grep -v '^#' "$work/two/count_partners.txt" | tr '\n' ';')" == "1;0;" ]] ||
  fail "count_partners.txt: $(cat "$work/two/count_partners.txt")"
# The particle snapshot at the end (--snapshot-every: every N steps and the last): every particle once.
total=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['particles']; print(p['fluid']+p['wall']+p['dummy'])" \
  "$work/two/mps.json")
snapshot=$(ls "$work/two"/particles_*.vtk 2> /dev/null | tail -1)
[[ -n "$snapshot" ]] || fail "no particles_*.vtk"
python3 "$root/tests/apps/vtk_check.py" "$snapshot" "$total" velocity pressure kind > /dev/null ||
  fail "the VTK snapshot is wrong"
# HDF5 (where built in): the .h5 and its .xmf, nothing half-written; else exit 2 naming the format.
status=0
run 3 --resolution 8 --steps 4 --snapshot-every 2 --snapshot-format hdf5 --output "$work/h5" > /dev/null \
  2> "$work/h5.err" || status=$?
if [[ $status -eq 0 ]]; then
  for f in particles_000002.h5 particles_000002.xmf particles_000004.h5 particles_000004.xmf; do
    [[ -s "$work/h5/$f" ]] || fail "--snapshot-format hdf5: missing $f"
  done
  [[ -z "$(find "$work/h5" -name '*.part')" ]] || fail "--snapshot-format hdf5 left a .part behind"
else
  [[ $status -eq 2 ]] && grep -q -- "--snapshot-format hdf5" "$work/h5.err" ||
    fail "--snapshot-format hdf5: exit status $status: $(cat "$work/h5.err")"
fi

# Checkpoint/restart: 12 steps == 6 steps + restart + 6 steps, bitwise at the same np.
ck=(--resolution 8 --steps 12 --verify)
run 2 "${ck[@]}" --checkpoint-every 6 --output "$work/ck" > "$work/ck.txt" 2> /dev/null || fail "checkpointing run failed"
[[ -s "$work/ck/checkpoint_000006.dmx" && -s "$work/ck/checkpoint_000012.dmx" ]] || fail "checkpoints missing"
run 2 "${ck[@]}" --restart "$work/ck/checkpoint_000006.dmx" --output "$work/ck2" > "$work/ck2.txt" 2> /dev/null ||
  fail "restart failed"
sum_full=$(grep checksum "$work/ck.txt") sum_restart=$(grep checksum "$work/ck2.txt")
[[ -n "$sum_full" && "$sum_full" == "$sum_restart" ]] || fail "restart differs: '$sum_full' vs '$sum_restart'"
# Any np reads it (the state then agrees to rounding, not bitwise).
run 1 "${ck[@]}" --decomposition multisection --restart "$work/ck/checkpoint_000006.dmx" --output "$work/ck1" \
  > "$work/ck1.txt" 2> /dev/null || fail "restart on 1 rank failed"
grep -q "particles .* fluid 128," "$work/ck1.txt" || fail "restart on 1 rank lost particles: $(cat "$work/ck1.txt")"
grep -q "^domex-mps .* 1 rank  multisection" "$work/ck1.txt" || fail "not '1 rank': $(head -1 "$work/ck1.txt")"
# A checkpoint of other physics is a run failure (exit 1) naming the value.
status=0
run 2 --resolution 8 --steps 12 --viscosity 2e-6 --restart "$work/ck/checkpoint_000006.dmx" > /dev/null \
  2> "$work/bad.err" || status=$?
[[ $status -eq 1 ]] || fail "mismatched checkpoint: exit status $status, expected 1"
grep -q -- "--viscosity" "$work/bad.err" || fail "mismatched checkpoint: not named: $(cat "$work/bad.err")"

expect_bad "resolution" "--resolution 2" --resolution 2 --output "$work/bad"
expect_bad "snapshot format" "--snapshot-format csv" --snapshot-format csv --output "$work/bad"
expect_bad "snapshot every" "--snapshot-every -3" --snapshot-every -3 --output "$work/bad"
expect_bad "decomposition" "--decomposition octree" --decomposition octree --output "$work/bad"
expect_bad "count exchange" "--count-exchange gather" --count-exchange gather --output "$work/bad"
expect_bad "cfl" "--cfl 2" --cfl 2 --output "$work/bad"
expect_bad "preconditioner" "--cg-preconditioner ilu" --cg-preconditioner ilu --output "$work/bad"
expect_bad "dimension" "--dimension 4" --dimension 4 --output "$work/bad"
expect_bad "3-D layers" "--layers 4" --dimension 3 --layers 4 --output "$work/bad"
expect_bad "end time" "--end-time -1" --end-time -1 --output "$work/bad"
grep -q -- "^domex-mps: --end-time -1: " "$work/bad.err" || fail "not 'domex-mps: --end-time -1: ...': $(cat "$work/bad.err")"
printf 'resolution = 8\nstpes = 5\n' > "$work/typo.ini"
expect_bad "INI typo" "stpes" --config "$work/typo.ini" --output "$work/bad"
touch "$work/a-file"
expect_bad "output under a file" "--output $work/a-file/out" --output "$work/a-file/out"
status=0
run 1 --resolution abc > /dev/null 2> "$work/bad.err" || status=$?
[[ $status -eq 2 ]] || fail "--resolution abc: exit status $status, expected 2"
grep -q "abc" "$work/bad.err" || fail "--resolution abc: not named: $(cat "$work/bad.err")"
echo "mps_cli: ok"

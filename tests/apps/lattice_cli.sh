#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The domex-lattice executable as a user runs it: a short run prints the
# report and writes lattice.json (no .part left); the same CG iteration count
# and residual on 1 and 2 ranks; an INI file works; bad values exit with 2,
# name the value and write nothing; tools/plot_lattice.py draws the histogram
# (when a python with matplotlib is given); --snapshot-format hdf5 writes
# the solution (.h5 + .xmf), the same on 1 and 2 ranks to the CG tolerance
# (compared by H5_DIFF), or a build without HDF5 refuses it with exit 2.
# Usage: lattice_cli.sh DOMEX_LATTICE MPIEXEC "PREFLAGS" [PYTHON] [H5_DIFF]
set -euo pipefail
app=$1 mpiexec=$2 preflags=$3 python=${4:-} h5diff=${5:-}
cli_name=lattice_cli
# shellcheck source=tests/apps/cli_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_common.sh"

common=(--local 4 4 4 4 --exchanges 50 --bins 5 --tolerance 1e-9)
run 2 "${common[@]}" --dims 1 1 1 2 --path contiguous --output "$work/two" > "$work/two.txt" 2> "$work/two.err" ||
  fail "2-rank run failed: $(cat "$work/two.err")"
[[ -s "$work/two/lattice.json" ]] || fail "no lattice.json"
[[ -z "$(find "$work/two" -name '*.part')" ]] || fail "a .part file was left behind"
for needle in "CG iterations" "Gflop/s per rank" "communication alone" "communication + computation" "allreduce (max)"; do
  grep -q "$needle" "$work/two.txt" || fail "no '$needle' in the report"
done
grep -q "CG iteration" "$work/two.err" || fail "no progress line"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); r = d["residuals"]
assert r[0] == 1 and len(r) > 1 and d["provenance"]["ranks"] == 2' "$work/two/lattice.json" ||
  fail "lattice.json: not valid JSON, no residual history or no provenance"
# The same global lattice (4x4x4x8) on one rank: same iterations and residual.
printf 'local = 4 4 4 8\nexchanges = 0\ntolerance = 1e-9\npath = pack\noverlap = false\n' > "$work/one.ini"
run 1 --config "$work/one.ini" --output "" > "$work/one.txt" 2> /dev/null || fail "1-rank run from INI failed"
it1=$(grep "CG iterations" "$work/one.txt" | awk '{print $3}') it2=$(grep "CG iterations" "$work/two.txt" | awk '{print $3}')
[[ -n "$it1" && "$it1" == "$it2" ]] || fail "iterations differ: 1 rank $it1, 2 ranks $it2"

expect_bad "kappa" "--kappa 0.3" --kappa 0.3 --output "$work/bad"
grep -q -- "^domex-lattice: --kappa 0.3: " "$work/bad.err" || fail "kappa: not 'domex-lattice: --kappa 0.3: ...'"
expect_bad "path" "--path copyless" --path copyless --output "$work/bad"
# An unsigned option names the value typed, not 2^64 - 1.
expect_bad "negative seed" "^domex-lattice: --seed -1: must be a whole number" --seed -1 --output "$work/bad"
expect_bad "huge seed" "--seed 99999999999999999999999: " --seed 99999999999999999999999 --output "$work/bad"
expect_bad "local" "--local 0 8 8 8" --local 0 8 8 8 --output "$work/bad"
expect_bad "dims" "--dims 3 1 1 1" --dims 3 1 1 1 --output "$work/bad"
printf 'local = 4 4 4 4\nkapa = 0.1\n' > "$work/typo.ini"
expect_bad "INI typo" "kapa" --config "$work/typo.ini" --output "$work/bad"
touch "$work/a-file"
expect_bad "output under a file" "--output $work/a-file/out" --output "$work/a-file/out"

# HDF5 field output: solution.h5 + .xmf (one 3-D grid per t), no .part left;
# the 1- and 2-rank solutions of the same 4x4x4x8 lattice agree to the CG
# tolerance; without parallel HDF5 a clear refusal that writes nothing.
status=0
run 2 "${common[@]}" --dims 1 1 1 2 --snapshot-format hdf5 --output "$work/h5two" > /dev/null \
  2> "$work/h5.err" || status=$?
if [[ $status -eq 2 ]]; then
  grep -q "built without parallel HDF5" "$work/h5.err" || fail "hdf5 refused without saying why: $(cat "$work/h5.err")"
  [[ ! -e "$work/h5two" ]] || fail "a refused hdf5 run created its output folder"
else
  [[ $status -eq 0 ]] || fail "hdf5 run failed: $(cat "$work/h5.err")"
  run 1 --local 4 4 4 8 --exchanges 0 --tolerance 1e-9 --snapshot-format hdf5 --output "$work/h5one" > /dev/null 2>&1 ||
    fail "1-rank hdf5 run failed"
  for f in solution.h5 solution.xmf lattice.json; do
    [[ -s "$work/h5two/$f" ]] || fail "missing or empty: $f"
  done
  [[ -z "$(find "$work/h5two" -name '*.part')" ]] || fail "an hdf5 .part file was left behind"
  [[ $(grep -c '<Grid Name="t' "$work/h5two/solution.xmf") -eq 8 ]] || fail "the XDMF sidecar has not 8 time slices"
  grep -q 'Dimensions="8 4 4 4" .*>solution.h5:/density<' "$work/h5two/solution.xmf" ||
    fail "the XDMF sidecar does not point at /density"
  if [[ -n "$h5diff" ]]; then
    for set in psi density; do
      "$h5diff" "$work/h5one/solution.h5" "$work/h5two/solution.h5" "$set" > "$work/diff.txt" || fail "h5_diff $set failed"
      awk '$3 != 0 && $5 <= 1e-6 * $7 { ok = 1 } END { exit !ok }' "$work/diff.txt" ||
        fail "1- and 2-rank /$set differ beyond the tolerance: $(cat "$work/diff.txt")"
    done
  fi
fi
expect_bad "snapshot format" "--snapshot-format vtk" --snapshot-format vtk --output "$work/bad"

if [[ -n "$python" ]]; then
  "$python" "$root/tools/plot_lattice.py" "$work/two/lattice.json" -o "$work/plot.png" > /dev/null
  [[ -s "$work/plot.png" ]] || fail "plot_lattice.py wrote no PNG"
fi
echo "lattice_cli: all checks passed"

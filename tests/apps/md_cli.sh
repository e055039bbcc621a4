#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The domex-md executable as a user runs it: a short run prints LAMMPS's
# thermo header and lines (step 0 of the perfect lattice as LAMMPS prints
# it), the timing table with LAMMPS's rows and the Comm detail, a progress
# line, and writes md.json; --write-data writes a LAMMPS data file with every
# atom and velocity; checkpoint/restart at the same np gives the
# uninterrupted run's checksum; the INI file works; bad values exit with 2,
# name the value under one prefix (domex-md:) and write nothing.
# Usage: md_cli.sh DOMEX_MD MPIEXEC "PREFLAGS"
set -euo pipefail
app=$1 mpiexec=$2 preflags=$3
cli_name=md_cli
# shellcheck source=tests/apps/cli_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_common.sh"

run 2 --cells 8 --steps 40 --thermo 20 --timer-sync --bound --write-data "$work/md.data" --output "$work/two" \
  > "$work/two.txt" 2> "$work/two.err" || fail "2-rank run failed: $(cat "$work/two.err")"
grep -q "^Step Temp E_pair E_mol TotEng Press$" "$work/two.txt" || fail "no thermo header: $(cat "$work/two.txt")"
[[ $(grep -cE '^ +(0|20|40) ' "$work/two.txt") -eq 3 ]] || fail "expected thermo at steps 0, 20, 40: $(cat "$work/two.txt")"
for needle in "Loop time of" "Pair    |" "Neigh   |" "Comm    |" "Output  |" "Modify  |" "Sync    |" "Other   |" \
              "update" "reverse" "migrate" "ghost build" "bound (memcpy + MPI" "Nghost:" "Neighbor list builds = 2"; do
  grep -qF -- "$needle" "$work/two.txt" || fail "no '$needle' in the output: $(cat "$work/two.txt")"
done
grep -q "step .*/40 .*ms/step" "$work/two.err" || fail "no progress line: $(cat "$work/two.err")"
[[ -z "$(find "$work/two" -name '*.part')" ]] || fail "a .part file was left behind"
python3 - "$work/two/md.json" <<'PY' || fail "md.json lacks the atoms, the thermo or the table"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["atoms"] == 2048 and d["ranks"] == 2 and d["steps"] == 40
assert [t["step"] for t in d["thermo"]] == [0, 20, 40]
assert {"Pair", "Neigh", "Comm", "Modify", "Sync", "Other"} <= {r["phase"] for r in d["profile"]}
PY
# The data file: every atom once with a position inside the box, and its velocity.
python3 - "$work/md.data" <<'PY' || fail "the data file is wrong"
import sys
lines = open(sys.argv[1]).read().split("\n")
assert "2048 atoms" in lines and "1 atom types" in lines
side = float([l for l in lines if l.endswith("xlo xhi")][0].split()[1])
atoms = lines.index("Atoms # atomic") + 2
velocities = lines.index("Velocities") + 2
ids = set()
for l in lines[atoms:atoms + 2048]:
    f = l.split()
    assert len(f) == 8 and f[1] == "1", l
    assert all(0 <= float(c) < side for c in f[2:5]), l
    ids.add(int(f[0]))
assert ids == set(range(1, 2049))
assert len([l for l in lines[velocities:] if len(l.split()) == 4]) == 2048
PY
# The perfect in.lj lattice at step 0, as LAMMPS prints it.
run 1 --cells 20 --steps 0 --output "" > "$work/lj.txt" 2> /dev/null || fail "the 20^3 run failed"
grep -qE '^ +0 +1\.44 +-6\.7733681 +0 +-4\.6134356 +-5\.0197073$' "$work/lj.txt" ||
  fail "step 0 is not LAMMPS's line: $(grep -A1 ^Step "$work/lj.txt")"

# Checkpoint/restart: 30 steps == 15 steps + restart + 15 steps, bitwise at the same np.
ck=(--cells 6 --steps 30 --neigh-every 7 --verify)
run 2 "${ck[@]}" --checkpoint-every 15 --output "$work/ck" > "$work/ck.txt" 2> /dev/null || fail "checkpointing run failed"
[[ -s "$work/ck/checkpoint_000015.dmx" && -s "$work/ck/checkpoint_000030.dmx" ]] || fail "checkpoints missing"
run 2 "${ck[@]}" --restart "$work/ck/checkpoint_000015.dmx" --output "$work/ck2" > "$work/ck2.txt" 2> /dev/null ||
  fail "restart failed"
sum_full=$(grep checksum "$work/ck.txt") sum_restart=$(grep checksum "$work/ck2.txt")
[[ -n "$sum_full" && "$sum_full" == "$sum_restart" ]] || fail "restart differs: '$sum_full' vs '$sum_restart'"
run 3 "${ck[@]}" --restart "$work/ck/checkpoint_000015.dmx" --output "" > /dev/null 2>&1 || fail "restart at np 3 failed"

# The INI file shipped with the app.
run 2 --config "$root/apps/md/in_lj.ini" --cells 6 --steps 10 --output "" > "$work/ini.txt" 2> /dev/null ||
  fail "--config apps/md/in_lj.ini failed"

# Bad values: exit 2, the value named, nothing written.
expect_bad "cells" "--cells 2" --cells 2 --output "$work/bad"
expect_bad "negative steps" "--steps -1" --steps -1 --output "$work/bad"
expect_bad "density" "--density 0" --density 0 --output "$work/bad"
expect_bad "neigh-check" "--neigh-check maybe" --neigh-check maybe --output "$work/bad"
expect_bad "overlap" "--overlap sometimes" --overlap sometimes --output "$work/bad"
expect_bad "unknown flag" "--nope" --nope --output "$work/bad"
printf 'cells = 6\ntypo = 3\n' > "$work/bad.ini"
expect_bad "unknown INI key" "typo" --config "$work/bad.ini" --output "$work/bad"
status=0
run 2 --cells 6 --steps 10 --restart "$work/nothing.dmx" --output "" > /dev/null 2> "$work/restart.err" || status=$?
[[ $status -eq 2 ]] && grep -q "nothing.dmx" "$work/restart.err" || fail "a missing checkpoint: status $status"
run 2 --cells 7 --steps 10 --restart "$work/ck/checkpoint_000015.dmx" --output "" > /dev/null 2> "$work/restart.err" ||
  status=$?
grep -q "written with --cells 6" "$work/restart.err" || fail "a checkpoint of another system: $(cat "$work/restart.err")"
echo "md_cli: ok"

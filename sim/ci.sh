#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# CI stage for the simulations (needs DOMEX_WITH_SIMGRID=1 in
# scripts/setup.sh): builds the SMPI variant (build/smpi, -Werror), prints the
# calibration check and runs domex-sim-check, every algorithm verified byte
# for byte, at 32 ranks on the fat tree, 64 ranks on the 6-D torus and 37
# ranks (odd, 4 per node) on the 3-D torus, at 64 ranks on the fat tree with
# all ranks sharing one copy of the program (smpi/privatization:no, how 4096
# ranks and more are simulated: every inbox still checked byte for byte; 3 s),
# and at 64 ranks with every send rendezvous and backed-off polls (how 16384
# ranks are simulated), and with the overheads rendezvous drops charged back
# (tofu 64, and the ping-pong against the exact model). Then one small
# simulation of each kind of sim/README.md at 64 ranks (issue 27: the sparse
# exchange on a migration pattern, the decomposition, the deep halo, the ghost
# exchange, the simulator's cost per round of messages and the tree's LET
# exchange), each checked for its result row; last, the fitted computation
# model's charge and sim/fit.py. The whole stage took 149 s on the 2-core Zen
# 3 machine without ccache (2026-11-27, before the rendezvous check and the
# rounds), of which about 80 s build domex-bench and 30 s run the simulations.
#
# This stage runs on Debian's SimGrid (3.32, libsimgrid-dev) even where
# sim/newer-simgrid.sh installed a newer one, which sim/run would otherwise
# take: DOMEX_SIMGRID=debian below, and smpicxx from PATH. Its time does not
# change. The newer SimGrid is checked against this one by sim/versions.sh,
# which a developer runs (sim/README.md "A newer SimGrid beside Debian's").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export DOMEX_SIMGRID=debian
build=${DOMEX_SIM_BUILD:-$root/build/smpi}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=smpicxx \
  -DDOMEX_SMPI=ON -DDOMEX_WERROR=ON -DDOMEX_BUILD_TESTS=OFF -DDOMEX_BUILD_APPS=OFF >/dev/null
cmake --build "$build" --target domex-sim-check domex-sim-pingpong domex-sim-rounds domex-bench -j"$(nproc)"
"$root/sim/run" pingpong 2>&1 | grep -A4 '^===\|^calibration' | grep -v '^ *bytes\|^ *[0-9]\|^--'
"$root/sim/run" ib 32 check
"$root/sim/run" tofu 64 check
"$root/sim/run" torus3d:4 37 check
DOMEX_SIM_PRIVATIZATION=no "$root/sim/run" ib 64 check
# The approximations that reach 16384 ranks (sim/README.md): every send
# rendezvous, idle polls backing off (NBX's loop, the matched probe).
DOMEX_SIM_RENDEZVOUS=1 DOMEX_SIM_IDLE_POLL_NS=200 "$root/sim/run" ib 64 check
# Rendezvous with the per-message overheads charged back (sim/compat/): every
# inbox still right, and the small messages' ping-pong as in the exact model.
DOMEX_SIM_RENDEZVOUS=overheads "$root/sim/run" tofu 64 check
exact=$("$root/sim/run" ib 32 pingpong 2>&1 | grep -E '^ +64 ')
charged=$(DOMEX_SIM_RENDEZVOUS=overheads "$root/sim/run" ib 32 pingpong 2>&1 | grep -E '^ +64 ')
echo "64 B ping-pong, exact: $exact; rendezvous with overheads: $charged"
[[ -n $exact && $exact == "$charged" ]] ||
  { echo "sim/ci.sh: the overheads charged back under rendezvous differ from the exact model" >&2; exit 1; }

# One small simulation of each kind: `simulate <pattern its output must match> <sim/run arguments...>`.
simulate() {
  local expect=$1 output
  shift
  echo "== sim/run $*"
  output=$(OMP_NUM_THREADS=1 timeout 300 "$root/sim/run" "$@" 2>&1) || {
    echo "$output" | tail -20
    echo "sim/ci.sh: 'sim/run $*' failed" >&2
    exit 1
  }
  grep -E "$expect" <<<"$output" || {
    echo "$output" | tail -20
    echo "sim/ci.sh: 'sim/run $*' printed no line matching '$expect'" >&2
    exit 1
  }
}
simulate '^migration:100\^3 +64 nbx ' ib 64 sparse --patterns migration:100^3 --sizes 64 --seconds-per-row 0 --no-plan \
  --rounds 1 --warm-up 1 --algorithms nbx
simulate '^uniform +histogram ' tofu 64 decompose --particles 2000 --inputs uniform --methods histogram --repeats 1
simulate '^A +plan/full ' ib 64 halo --experiments A --exchanged 8 --variants plan/full --repeats 1 --back-to-back 1 \
  --cell-seconds 6.2e-7 --cells 12 --depths 1 --steps 1
simulate '^uniform +2000 ' ib 64 ghost --particles 2000 --cutoffs 0.5 --updates 2 --repeats 1
# The lean forms the 16384-rank runs use (sim/README.md "1024 to 16384 ranks"): equal boxes, one update.
simulate '^migration:100\^3 +64 nbx ' ib 64 sparse --patterns migration:100^3 --sizes 64 --seconds-per-row 0 --no-plan \
  --rounds 1 --warm-up 0 --algorithms nbx --migration-samples 0
simulate '^uniform +200 .* - +- *$' ib 64 ghost --particles 200 --cutoffs 0.5 --updates 1 --repeats 1 --warm-up 0 \
  --discovery nbx --measure update
simulate '^round 0: simulated ' ib 64 rounds --bytes 64 --rounds 1
simulate '^pack +8 ' crossbar3d 27 lattice --local 4 4 4 4 --dims 3 3 3 1 --paths pack --repeats 1 --batch 1 \
  --memcpy-mib 0 --no-allreduce
simulate '^exchange LET ' ib 64 tree --particles 64000 --threads 1 --error-samples 0 --steps 1 --lets sparse
# Computation charged from a fitted model (DOMEX_SIM_MODEL, issue 27): a model
# of 1 ms for each walk-and-kernel and 0.2 ms for each local tree build must
# show as exactly that per step in the tree's phases (no MPI call inside
# either: the charge alone), whatever this machine's speed.
model=$build/ci-model.txt
printf '%s\t%s\t%s\n' 1e-3 0 'tree: walk and kernel' 2e-4 0 'tree: local build' 0 0 'tree: LET build' \
  0 0 'tree: global link' 0 0 'tree: global link, no LET' 0 0 'tree: scatter' 0 0 'decompose: positions' 0 0 'decompose: bin values' \
  0 0 'decompose: place cuts' >"$model"
DOMEX_SIM_MODEL=$model simulate '^traverse ' ib 16 tree --particles 16000 --threads 1 --error-samples 0 --steps 2 \
  --json "$build/ci-model.json"
python3 - "$build/ci-model.json" <<'PYTHON'
import json, sys
phases = {p["name"]: p for p in json.load(open(sys.argv[1]))["rows"][0]["phases"]}
forces = phases["traverse"]["avg_s"] + phases["kernel"]["avg_s"]
build = phases["build tree"]["avg_s"]
print(f"charged per step: walk and kernel {forces * 1e3:.6f} ms (model 1), local build {build * 1e3:.6f} ms (model 0.2)")
# (MPI_Wtime itself advances simulated time by 10 ns a call.)
if not (abs(forces - 1e-3) < 1e-6 and abs(build - 2e-4) < 1e-6):
    sys.exit("sim/ci.sh: the charged computation differs from the model")
PYTHON
# sim/fit.py recovers a known line: records of 1 us + 2 ns per unit.
records=$build/ci-records
rm -f "$records".*
for units in 1000 2000 4000 8000; do
  for _ in 1 2 3; do printf '%s\t%s\tci: line\n' "$(python3 -c "print(1e-6 + 2e-9 * $units)")" "$units"; done
done >"$records.0"
python3 "$root/sim/fit.py" --output "$build/ci-fitted.txt" "$records"
grep -qE '^1\.0{6}e-06	2\.0{6}e-09	ci: line$' "$build/ci-fitted.txt" ||
  { cat "$build/ci-fitted.txt"; echo "sim/ci.sh: sim/fit.py did not recover 1 us + 2 ns per unit" >&2; exit 1; }

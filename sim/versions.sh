#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The same 64-rank simulations on Debian's SimGrid (3.32) and on a newer one
# (sim/newer-simgrid.sh), their printed results compared line by line (issue
# 55). A developer runs it where both are installed; CI runs the 3.32 side
# only (sim/ci.sh).
#
#   sim/versions.sh [VERSION]    # default: the newest that sim/run finds in /opt
#
# Builds the SMPI variant for each (build/smpi with Debian's smpicxx,
# build/smpi-simgrid-VERSION with that prefix's; the targets of sim/ci.sh, the
# count exchange and domex-ring), runs sim/ci.sh's simulations, the count
# exchange (RMA: fence, passive) and domex-ring with each, and compares what the programs
# print on stdout (SimGrid's own log lines, on stderr, are left out: they name
# the version), but for the two figures that are not simulated: a wall time
# ("wall 0.03 s", domex-sim-rounds) and the tree kernel's rate per core (its
# simulated time is a few MPI_Wtime calls, which differ run to run on one
# version too) and domex-ring's line that names its output folder. Prints one line per simulation, then "N passed, N failed";
# exits 1 when any differs. Logs: build/simversions/<version>-<name>.txt.
# Wall time of each simulation: 'wall' in the log's last stderr line.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
newer=${1:-}
if [[ -z $newer ]]; then
  read -r newer prefix _ < <(env -u DOMEX_SIMGRID "$root/sim/run" --simgrid)
  [[ $prefix != debian ]] || { echo "sim/versions.sh: no newer SimGrid in /opt (sim/newer-simgrid.sh)" >&2; exit 2; }
fi
out=${DOMEX_SIM_VERSIONS:-$root/build/simversions}
mkdir -p "$out"

# build <DOMEX_SIMGRID value>: configure (once) and build the programs with that SimGrid's smpicxx.
build() {
  local folder compiler
  read -r _ prefix folder < <(DOMEX_SIMGRID=$1 "$root/sim/run" --simgrid) || return 1
  compiler=smpicxx
  [[ $prefix != debian ]] && compiler=$prefix/bin/smpicxx
  [[ -f $folder/build.ninja ]] ||
    cmake -S "$root" -B "$folder" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$compiler" \
      -DDOMEX_SMPI=ON -DDOMEX_WERROR=ON -DDOMEX_BUILD_TESTS=OFF -DDOMEX_BUILD_APPS=ON >/dev/null || return 1
  cmake --build "$folder" --target domex-sim-check domex-sim-counts domex-sim-pingpong domex-sim-rounds domex-bench \
    domex-ring >/dev/null
}
build debian || { echo "sim/versions.sh: the build with Debian's SimGrid failed" >&2; exit 1; }
build "$newer" || { echo "sim/versions.sh: the build with SimGrid $newer failed" >&2; exit 1; }

simulations=(
  "check|ib 64 check"
  "check-shared|ib 64 check|DOMEX_SIM_PRIVATIZATION=no"
  "check-rendezvous|tofu 64 check|DOMEX_SIM_RENDEZVOUS=overheads"
  "pingpong|ib 32 pingpong"
  "migration|ib 64 sparse --patterns migration:100^3 --sizes 64 --seconds-per-row 0 --no-plan --rounds 1 --warm-up 1 --algorithms nbx reduce_scatter alltoall"
  "neighbours26|tofu 64 sparse --patterns neighbours26 --sizes 64 --seconds-per-row 0 --no-plan --rounds 1 --warm-up 1 --algorithms nbx reduce_scatter"
  "decompose|tofu 64 decompose --particles 2000 --inputs uniform --methods histogram --repeats 1"
  "halo|ib 64 halo --experiments A --exchanged 8 --variants plan/full --repeats 1 --back-to-back 1 --cell-seconds 6.2e-7 --cells 12 --depths 1 2 --steps 2"
  "ghost|ib 64 ghost --particles 2000 --cutoffs 0.5 --updates 2 --repeats 1"
  "rounds|ib 64 rounds --bytes 64 --rounds 2"
  "tree|ib 64 tree --particles 64000 --threads 1 --error-samples 0 --steps 1 --lets sparse p2p_fast"
  "counts|ib:6 36 counts --calls 5"
  "ring|tofu 64 ring --particles 64000 --steps 4 --threads 1 --image-every 0 --energy-every -1 --output OUT"
)
results() { sed -E 's/wall [0-9.]+ s/wall - s/g; s/kernel [0-9.e+-]+ and/kernel - and/; /^  results /d' "$1"; }
passed=0 failed=0
for simulation in "${simulations[@]}"; do
  IFS='|' read -r name arguments_line environment <<<"$simulation"
  for simgrid in debian "$newer"; do
    read -ra arguments <<<"${arguments_line//OUT/$out/$simgrid-$name}"
    # shellcheck disable=SC2086
    env DOMEX_SIMGRID="$simgrid" OMP_NUM_THREADS=1 $environment /usr/bin/time -f "wall %e s, peak memory %M KB" \
      timeout 300 "$root/sim/run" "${arguments[@]}" >"$out/$simgrid-$name.txt" 2>"$out/$simgrid-$name.err"
    echo "exit $?" >>"$out/$simgrid-$name.err"
  done
  walls="$(tail -2 "$out/debian-$name.err" | head -1) | $(tail -2 "$out/$newer-$name.err" | head -1)"
  if [[ -s $out/debian-$name.txt ]] && grep -qx 'exit 0' "$out/debian-$name.err" &&
     grep -qx 'exit 0' "$out/$newer-$name.err" &&
     cmp -s <(results "$out/debian-$name.txt") <(results "$out/$newer-$name.txt"); then
    echo "same     $name: $(wc -l <"$out/debian-$name.txt") lines ($walls)"
    passed=$((passed + 1))
  else
    echo "DIFFERS  $name ($walls): diff $out/debian-$name.txt $out/$newer-$name.txt"
    diff <(results "$out/debian-$name.txt") <(results "$out/$newer-$name.txt") | head -20
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
((failed == 0))

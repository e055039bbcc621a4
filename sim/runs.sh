#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The simulated runs behind docs/sim-*.png and the tables of sim/README.md,
# one simulation at a time, each under `timeout 600` (10 minutes).
#   sim/runs.sh sparse | counts | sparse1024 | halo   (results in build/simruns)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${DOMEX_SIM_RUNS:-$root/build/simruns}
mkdir -p "$out"
cd "$out"
run() {  # run <log name> <sim/run arguments...>
  local name=$1
  shift
  echo "== $(date -u +%H:%M:%S) $name: sim/run $*"
  /usr/bin/time -f "wall %e s, peak memory %M KB" timeout 600 "$root/sim/run" "$@" >"$name.txt" 2>&1
  echo "exit $? $(tail -1 "$name.txt")"
}
sparse_flags=(--sizes 64 --patterns neighbours26 --seconds-per-row 0)
case ${1:-} in
  sparse)
    for ranks in 64 256; do
      for platform in ib tofu; do
        run "sparse-$platform-$ranks" "$platform" "$ranks" sparse "${sparse_flags[@]}" --learning-calls 16 \
          --json "sparse-$platform-$ranks.json"
      done
    done ;;
  sparse1024)
    # One algorithm per simulation (each under 10 minutes); no alltoall (an
    # O(P^2) = 1M-message all-to-all per call did not finish in 10 minutes).
    for platform in ${2:-ib tofu}; do
      for algorithm in nbx grid reduce_scatter sendrecv_reduce rma_fence rma_passive; do
        run "sparse-$platform-1024-$algorithm" "$platform" 1024 sparse "${sparse_flags[@]}" --learning-calls 1 \
          --no-plan --algorithms "$algorithm" --json "sparse-$platform-1024-$algorithm.json"
      done
    done ;;
  counts)
    run counts-ib-36 ib:6 36 counts --calls 20
    run counts-ib-72 ib:8 72 counts --calls 20
    run counts-tofu-36 tofu:6 36 counts --calls 20
    run counts-tofu-72 tofu:8 72 counts --calls 20
    run counts-ib-1024 ib 1024 counts --calls 2 ;;
  *) sed -n '3,6p' "$0"; exit 2 ;;
esac

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The simulated runs behind docs/sim-*.png and the tables of sim/README.md,
# one simulation at a time, each under `timeout 600` (10 minutes).
#   sim/runs.sh sparse | split <P> <platforms...> | counts   (results in build/simruns)
# Figures: /usr/bin/python3 sim/plot.py sparse docs/sim-sparse.png ib:64=sparse-ib-64.json
#   ib:256=sparse-ib-256-nbx.json ... (one platform:P=file per JSON), and
#   sim/plot.py counts docs/sim-counts.png ib:36=counts-ib-36.txt ...
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
    # P = 64: one simulation per platform, every algorithm and automatic
    # (its first 16 calls timed from scratch).
    for platform in ib tofu; do
      run "sparse-$platform-64" "$platform" 64 sparse "${sparse_flags[@]}" --learning-calls 16 \
        --json "sparse-$platform-64.json"
    done ;;
  split)
    # sim/runs.sh split <P> <platforms...>: one simulation per algorithm (all
    # in one did not finish in 10 minutes at P = 256), and automatic alone
    # (25 calls from scratch: what its model chooses at this P). alltoall is
    # left out at P = 1024 (an O(P^2) = 1M-message all-to-all per call).
    ranks=$2
    shift 2
    algorithms=(alltoall nbx grid reduce_scatter sendrecv_reduce rma_fence rma_passive automatic)
    ((ranks >= 1024)) && algorithms=("${algorithms[@]:1}")
    for platform in "$@"; do
      for algorithm in "${algorithms[@]}"; do
        run "sparse-$platform-$ranks-$algorithm" "$platform" "$ranks" sparse "${sparse_flags[@]}" --learning-calls 16 \
          --no-plan --algorithms "$algorithm" --json "sparse-$platform-$ranks-$algorithm.json"
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

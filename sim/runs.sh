#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The simulated runs behind docs/sim-*.png and the tables of sim/README.md,
# one simulation at a time, each under `timeout 600` (10 minutes).
#   sim/runs.sh sparse | split <P> <platforms...> | migration <P> <platforms...> [-- algorithms...]
#               | counts | counts-mps | reduce | crossbar | halo [P...] | let [P...] | model
#               | ring-compute [P...] | ring-compute-check | decompose [P...]
#               | ring-fit | ring-model-check | ring-model [P...] | ghost [P...]
#               | versions [P...] | rebalance [P...] | rows [name...]
#   (results in build/simruns with Debian's SimGrid 3.32, build/simruns-simgrid-<version> with a
#   newer one: sim/run's choice, DOMEX_SIMGRID; every log's first line names the SimGrid that ran)
# Figures: /usr/bin/python3 sim/plot.py sparse docs/sim-sparse.png ib:64=sparse-ib-64.json
#   ib:256=sparse-ib-256-nbx.json ... (one platform:P=file per JSON), and
#   sim/plot.py counts docs/sim-counts.png ib:36=counts-ib-36.txt ...; sim/plot.py migration
#   docs/sim-migration.png build/simruns (every migration-*.json there); the SimGrid versions (issue 55):
#   sim/plot.py wall docs/sim-versions.png "3.32=build/simruns" "4.1=build/simruns-simgrid-4.1"
#   "4.1, Tofu's bcast named=build/simruns-simgrid-4.1/rebalance-binomial-bcast" (after sim/runs.sh decompose
#   64 256 1024 with each SimGrid and sim/runs.sh rebalance 1024 2048 4096 8192 with 4.1), and
#   sim/plot.py decompose docs/sim-decompose-versions.png with the same three label=folder arguments
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
read -r simgrid_version simgrid_prefix _ < <("$root/sim/run" --simgrid) || exit 2
default_out=$root/build/simruns
[[ $simgrid_prefix != debian ]] && default_out=$root/build/simruns-simgrid-$simgrid_version
out=${DOMEX_SIM_RUNS:-$default_out}
mkdir -p "$out"
cd "$out"
run() {  # run <log name> <sim/run arguments...>
  local name=$1
  shift
  echo "== $(date -u +%H:%M:%S) $name: SimGrid $simgrid_version, sim/run $*"
  /usr/bin/time -f "wall %e s, peak memory %M KB" timeout 600 "$root/sim/run" "$@" >"$name.txt" 2>&1
  echo "exit $? $(tail -1 "$name.txt")"
}
sparse_flags=(--sizes 64 --patterns neighbours26 --seconds-per-row 0)
side_by_side() {  # side_by_side <native log> <simulated log>: the --compare-legacy tables, the simulated one's columns beside
  paste -d'|' <(grep -A12 '^domex-ring --compare-legacy' "$1" | cut -c1-110) \
    <(grep -A12 '^domex-ring --compare-legacy' "$2" | cut -c24-110)
}
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
  migration)
    # sim/runs.sh migration <P> <platforms...> [-- algorithms...]: the seed's study on
    # one step of particle migration in a real multisection decomposition of
    # N = 100^3, 316^3, 682^3 particles (domex-bench sparse --patterns
    # migration:<N>, 64 B per particle, each coordinate moved uniform in +-1
    # mean spacing). One simulation per algorithm; the simulation is
    # deterministic, so one warm-up call and one timed round (--rounds 1).
    # automatic: 48 calls to learn first (its three 16-call measuring
    # epochs), then its row; at P > 64 left out by default (the model's
    # ranking, printed by every run, says what it explores).
    ranks=$2
    shift 2
    platforms=()
    while (($#)) && [[ $1 != -- ]]; do platforms+=("$1"); shift; done
    (($#)) && shift
    algorithms=("$@")
    if ((${#algorithms[@]} == 0)); then
      algorithms=(nbx grid reduce_scatter sendrecv_reduce rma_fence alltoall rma_passive)
      ((ranks <= 64)) && algorithms+=(automatic)
      ((ranks >= 1024)) && algorithms=(nbx reduce_scatter grid)
    fi
    # From P = 1024 on one simulation per algorithm and N (the three N in one
    # took over 10 minutes for nbx), N = 100^3 and 682^3 only. From P = 4096
    # on: the equal-volume boxes instead of a multisection (--migration-samples
    # 0: SimGrid's cost of a rebalance grows as P^2), no warm-up call, every send
    # rendezvous with the overheads charged back and idle polls backing off to
    # 200 ns (as set, or these: sim/README.md "1024 to 16384 ranks").
    patterns=(migration:100^3 migration:316^3 migration:682^3)
    ((ranks >= 1024)) && patterns=(migration:100^3 migration:682^3)
    scale=(--warm-up 1)
    if ((ranks >= 4096)); then
      scale=(--warm-up 0 --migration-samples 0)
      export DOMEX_SIM_RENDEZVOUS=${DOMEX_SIM_RENDEZVOUS:-overheads} DOMEX_SIM_IDLE_POLL_NS=${DOMEX_SIM_IDLE_POLL_NS:-200}
    fi
    for platform in "${platforms[@]}"; do
      for algorithm in "${algorithms[@]}"; do
        if ((ranks < 1024)); then
          run "migration-$platform-$ranks-$algorithm" "$platform" "$ranks" sparse --patterns "${patterns[@]}" \
            --sizes 64 --seconds-per-row 0 --no-plan --rounds 1 --warm-up 1 --learning-calls 1 --learn-calls 48 \
            --algorithms "$algorithm" --json "migration-$platform-$ranks-$algorithm.json"
        else
          for pattern in "${patterns[@]}"; do
            n=${pattern#migration:}
            run "migration-$platform-$ranks-$algorithm-${n%^3}" "$platform" "$ranks" sparse --patterns "$pattern" \
              --sizes 64 --seconds-per-row 0 --no-plan --rounds 1 "${scale[@]}" --learning-calls 1 --learn-calls 48 \
              --algorithms "$algorithm" --json "migration-$platform-$ranks-$algorithm-${n%^3}.json"
          done
        fi
      done
    done ;;
  versions)
    # sim/runs.sh versions [P...]: the same simulations on each SimGrid (issue 55): run once with
    # DOMEX_SIMGRID=debian and once with the newer one (its own folder of results); default P: 64
    # 1024. IB, exact sends: the sparse exchange on a migration pattern (nbx, reduce_scatter), the
    # deep halo (12^3 cells, k = 1) and domex-ring (1000 particles per rank, communication only,
    # 4 steps; VERSIONS_KINDS="sparse halo" runs a subset). Their wall time and peak memory: the log's
    # last line.
    shift
    ranks=("$@")
    [[ $# -eq 0 ]] && ranks=(64 1024)
    export OMP_NUM_THREADS=1
    kinds=${VERSIONS_KINDS:-sparse halo ring}  # or a subset of these
    for P in "${ranks[@]}"; do
      [[ " $kinds " == *" sparse "* ]] &&
      run "versions-sparse-ib-$P" ib "$P" sparse --patterns migration:100^3 --sizes 64 --seconds-per-row 0 --no-plan \
        --rounds 1 --warm-up 1 --algorithms nbx reduce_scatter --json "versions-sparse-ib-$P.json"
      [[ " $kinds " == *" halo "* ]] &&
      run "versions-halo-ib-$P" ib "$P" halo --experiments A --exchanged 8 --variants plan/full --repeats 1 \
        --back-to-back 1 --cell-seconds 6.2e-7 --cells 12 --depths 1 --steps 1 --json "versions-halo-ib-$P.json"
      [[ " $kinds " == *" ring "* ]] &&
      run "versions-ring-ib-$P" ib "$P" ring --particles $((1000 * P)) --steps 4 --threads 1 --image-every 0 \
        --energy-every -1 --output "versions-ring-ib-$P"
    done ;;
  ghost)
    # sim/runs.sh ghost [P...]: the ghost exchange (domex::GhostPlan, 200
    # uniform particles per rank, cutoff 0.5 of a domain's width, equal boxes)
    # on IB, one GhostPlan::update timed after the plan's build (its counts'
    # exchange nbx). Default P: 1024 4096 (the exact model: rendezvous was
    # 7x slower to simulate here; 16384 out of reach on SimGrid 3.32, 481 s and
    # 14 GB on 4.1: sim/README.md).
    shift
    ranks=("$@")
    [[ $# -eq 0 ]] && ranks=(1024 4096)
    for P in "${ranks[@]}"; do
      run "ghost-ib-$P" ib "$P" ghost --particles 200 --cutoffs 0.5 --updates 1 --repeats 1 --warm-up 0 \
        --discovery nbx --measure update --json "ghost-ib-$P.json"
    done ;;
  counts)
    run counts-ib-36 ib:6 36 counts --calls 20
    run counts-ib-72 ib:8 72 counts --calls 20
    run counts-tofu-36 tofu:6 36 counts --calls 20
    run counts-tofu-72 tofu:8 72 counts --calls 20
    run counts-ib-1024 ib 1024 counts --calls 2 ;;
  reduce)
    # The CG's small complex allreduce: MPI_Allreduce against one along each
    # axis of the process grid (domex::ReduceMethod::by_dimension).
    for spec in "torus3d 64 4 4 4" "torus3d 512 8 8 8" "ib 512 8 8 8" "tofu 512 8 8 8" \
                "torus3d 1000 10 10 10" "ib 1000 10 10 10" "tofu 1000 10 10 10" \
                "crossbar3d 512 8 8 8" "crossbar3d 2560 16 16 10"; do
      read -r platform ranks x y z <<< "$spec"
      run "reduce-$platform-$ranks" "$platform" "$ranks" reduce --grid "$x" "$y" "$z" --calls 10 --repeats 1 \
        --counts 1 12
    done ;;
  crossbar)
    # The lattice QCD seed's neighbour transfers on its machine's network: the
    # QCD halo (domex::LatticeHalo, 8^4 and 16^4 sites of 192 B per rank)
    # along 1, 2 and 3 dimensions of a hyper-crossbar, the seed's 16 x 16 x 10
    # included, and a 3-D torus beside it (sim/README.md, "Link share").
    export DOMEX_SIM_PRIVATIZATION=no
    for spec in "crossbar1d 16 8 16 1 1" "crossbar2d 256 8 16 16 1" "crossbar3d 512 8 8 8 8" "torus3d 512 8 8 8 8" \
                "crossbar1d 16 16 16 1 1" "crossbar2d 256 16 16 16 1" "crossbar3d 2560 8 16 16 10"; do
      read -r platform ranks sites x y z <<< "$spec"
      run "lattice-$platform-$ranks-$sites" "$platform" "$ranks" lattice --local "$sites" "$sites" "$sites" "$sites" \
        --dims "$x" "$y" "$z" 1 --paths pack --repeats 3 --batch 2 --memcpy-mib 0 --no-allreduce
    done ;;
  counts-mps)
    # The same exchange on domex-mps's real pattern: who sends ghost counts to
    # whom at the last of 8 steps of the dam break (3-D slab a/10 and 2-D
    # a/40), run for real (Open MPI, oversubscribed: build/release), then
    # replayed under SMPI (--partners).
    for ranks in 36 72; do
      nodes=$((ranks == 36 ? 6 : 8))
      for shape in "3d --dimension 3 --resolution 10 --layers 10" "2d --resolution 40"; do
        read -r name flags <<< "$shape"
        # shellcheck disable=SC2086
        "$root/scripts/run" -n "$ranks" "$root/build/release/apps/mps/domex-mps" $flags --steps 8 \
          --count-exchange automatic --output "$out/mps-$name-$ranks" > "mps-$name-$ranks.txt" 2>&1
        run "counts-mps-$name-ib-$ranks" "ib:$nodes" "$ranks" counts --calls 20 \
          --partners "$out/mps-$name-$ranks/count_partners.txt"
      done
    done ;;
  halo)
    # sim/runs.sh halo [P...]: deep halo, weak scaling, 26 neighbours, 8 fields.
    # The kernel is replaced by 0.62 us of simulated time per cell update
    # (domex-mhd's compute per cell and step, np 1 on the development machine).
    # The simulation is deterministic, so one repeat and one exchange timed
    # alone (--back-to-back 1) suffice. P = 64: k = 1, 2, 3 in one simulation
    # (6 steps); from 256 on one simulation per k with --steps k (the same step
    # times at 64; three k in one took 290 s at 256 with 10 times fewer exchanges
    # alone than the bench's default, which itself did not finish in 10 minutes).
    shift
    ranks=("$@")
    [[ $# -eq 0 ]] && ranks=(64 256)
    halo_flags=(--experiments A --exchanged 8 --variants plan/full --repeats 1 --back-to-back 1 --cell-seconds 6.2e-7)
    for cells in 24 12; do
      for platform in ib tofu; do
        for P in "${ranks[@]}"; do
          if ((P <= 64)); then
            run "halo-$platform-$cells-$P" "$platform" "$P" halo "${halo_flags[@]}" --cells "$cells" --depths 1 2 3 \
              --steps 6 --json "halo-$platform-$cells-$P.json"
          else
            for k in 1 2 3; do
              run "halo-$platform-$cells-$P-k$k" "$platform" "$P" halo "${halo_flags[@]}" --cells "$cells" --depths "$k" \
                --steps "$k" --json "halo-$platform-$cells-$P-k$k.json"
            done
          fi
        done
      done
    done ;;
  let)
    # sim/runs.sh let [P...]: the LET exchange modes of the tree code, 3000
    # particles per rank (uniform cube), one thread per rank, one timed step
    # (deterministic), no force error (its allgather of all particles would
    # not fit at P = 256).
    shift
    ranks=("$@")
    [[ $# -eq 0 ]] && ranks=(64 128)
    export OMP_NUM_THREADS=1
    # P = 64: the four modes in one simulation; above, one simulation per mode
    # (at 256 on IB neither the four in one nor p2p_fast or alltoallv alone
    # finished in 10 minutes on the shared 2-core machine; Tofu's did, 261-575 s:
    # sim/runs.sh let 256 runs both).
    tree_flags=(--threads 1 --error-samples 0 --steps 1)
    for platform in ib tofu; do
      for P in "${ranks[@]}"; do
        if ((P <= 64)); then
          run "tree-$platform-$P" "$platform" "$P" tree --particles $((3000 * P)) "${tree_flags[@]}" \
            --lets alltoallv p2p_exact p2p_fast sparse --json "tree-$platform-$P.json"
        else
          for mode in alltoallv sparse p2p_fast p2p_exact; do
            run "tree-$platform-$P-$mode" "$platform" "$P" tree --particles $((3000 * P)) "${tree_flags[@]}" \
              --lets "$mode" --json "tree-$platform-$P-$mode.json"
          done
        fi
      done
    done ;;
  ring-compute)
    # sim/runs.sh ring-compute [P...]: domex-ring's before/after table with
    # computation charged (DOMEX_SIM_COMPUTE, default 1: this machine's core;
    # one simulation at a time, nothing else running), 2000 particles per
    # rank as the seed's 2 M on 1024 nodes, one thread per rank. At 64 ranks
    # every case in one simulation (--compare-legacy, 44 s); above, all
    # legacy and all fixes, one simulation each (the six cases at 256 ranks
    # did not finish in 10 minutes). A subset (issue 55's rows at 1024 on Tofu, 4096 on IB):
    # RING_COMPUTE_PLATFORMS="tofu", RING_COMPUTE_LEGACY="none", RING_COMPUTE_STEPS=2 (logs then
    # named ...-s2); DOMEX_SIM_CFG (e.g. maxmin/concurrency-limit:16) with its own DOMEX_SIM_RUNS.
    shift
    ranks=("$@")
    [[ $# -eq 0 ]] && ranks=(64 256)
    export OMP_NUM_THREADS=1 DOMEX_SIM_COMPUTE=${DOMEX_SIM_COMPUTE:-1}
    ring_flags=(--threads 1 --image-every 0 --energy-every -1)
    steps=${RING_COMPUTE_STEPS:-8}
    suffix=""
    [[ $steps != 8 ]] && suffix=-s$steps
    for platform in ${RING_COMPUTE_PLATFORMS:-ib tofu}; do
      for P in "${ranks[@]}"; do
        if ((P <= 64)); then
          run "ring-compute-$platform-$P$suffix" "$platform" "$P" ring --particles $((2000 * P)) --steps "$steps" \
            "${ring_flags[@]}" --compare-legacy --output "ring-compute-$platform-$P$suffix"
        else
          for legacy in ${RING_COMPUTE_LEGACY:-all none}; do
            run "ring-compute-$platform-$P-$legacy$suffix" "$platform" "$P" ring --particles $((2000 * P)) \
              --steps "$steps" "${ring_flags[@]}" --legacy "$legacy" --output "ring-compute-$platform-$P-$legacy$suffix"
          done
        fi
      done
    done ;;
  decompose)
    # sim/runs.sh decompose [P...]: Multisection rebalance at scale (issue 27,
    # item 4): Tofu, 2000 uniform particles per rank starting in their own
    # domains, histogram cuts (the default), 5 timed rebalances and migration
    # steps after 2 untimed ones, communication only (with DOMEX_SIM_COMPUTE
    # the rebalance was charged time that grew with P even at 20 particles
    # per rank: sim/README.md). Default P: 64 128 256 512 1024.
    shift
    ranks=("$@")
    [[ $# -eq 0 ]] && ranks=(64 128 256 512 1024)
    for P in "${ranks[@]}"; do
      run "decompose-tofu-$P" tofu "$P" decompose --particles 2000 --inputs uniform --methods histogram --repeats 5 \
        --json "decompose-tofu-$P.json"
    done ;;
  rebalance)
    # sim/runs.sh rebalance [P...]: the decomposition of `decompose` above, with Tofu's bcast named
    # binomial_tree (smpi/bcast). SMPI's ompi selector broadcasts each new communicator's id with
    # mvapich2_knomial_intra_node, which first runs Comm::init_smp (two ring allgathers, P^2
    # messages) on it: 21 % of the 1024-rank simulation's CPU (perf, SimGrid 4.1). Slightly different
    # simulated times (+0.6 % at 1024, +3.5 % at 2048: the rebalance broadcasts too): its own series,
    # in <results>/rebalance-binomial-bcast. Default P: 1024 2048 4096; from 8192 on 2 repeats.
    shift
    ranks=("$@")
    [[ $# -eq 0 ]] && ranks=(1024 2048 4096)
    mkdir -p rebalance-binomial-bcast
    cd rebalance-binomial-bcast || exit 2
    export DOMEX_SIM_CFG="${DOMEX_SIM_CFG:+$DOMEX_SIM_CFG }smpi/bcast:binomial_tree"
    for P in "${ranks[@]}"; do
      repeats=5
      ((P >= 8192)) && repeats=2
      run "decompose-tofu-$P" tofu "$P" decompose --particles 2000 --inputs uniform --methods histogram \
        --repeats "$repeats" --json "decompose-tofu-$P.json"
    done ;;
  rows)
    # sim/runs.sh rows [name...]: the rows of issue 55's item 3 that were out of reach on SimGrid 3.32,
    # one simulation each, under the SimGrid that sim/run chooses (run with the newer one; the log names
    # it). Names: ghost-4096 ghost-16384 let-ib-256-<alltoallv|sparse|p2p_fast|p2p_exact>
    # migration-682-16384 tofu-16384 (default: all), and let-ib-256-<mode>-limit16 (SimGrid's
    # maxmin/concurrency-limit:16: a different sharing model, sim/README.md). The scale settings of "1024 to 16384 ranks"
    # (sim/README.md) where the 3.32 rows used them: equal boxes, rendezvous + overheads, idle polls
    # up to 200 ns for the migration patterns at 16384; Tofu's bcast named (`rebalance` above).
    shift
    names=("$@")
    [[ $# -eq 0 ]] && names=(ghost-4096 ghost-16384 let-ib-256-sparse let-ib-256-p2p_fast let-ib-256-p2p_exact
                             let-ib-256-alltoallv migration-682-16384 tofu-16384)
    scale=(--sizes 64 --seconds-per-row 0 --no-plan --rounds 1 --warm-up 0 --algorithms nbx --migration-samples 0)
    for name in "${names[@]}"; do
      case $name in
        ghost-*)
          run "rows-$name" ib "${name#ghost-}" ghost --particles 200 --cutoffs 0.5 --updates 1 --repeats 1 \
            --warm-up 0 --discovery nbx --measure update --json "rows-$name.json" ;;
        let-ib-256-*-limit16)
          mode=${name#let-ib-256-}
          DOMEX_SIM_CFG=maxmin/concurrency-limit:16 OMP_NUM_THREADS=1 run "rows-$name" ib 256 tree --particles 768000 \
            --threads 1 --error-samples 0 --steps 1 --lets "${mode%-limit16}" --json "rows-$name.json" ;;
        let-ib-256-*)
          OMP_NUM_THREADS=1 run "rows-$name" ib 256 tree --particles 768000 --threads 1 --error-samples 0 --steps 1 \
            --lets "${name#let-ib-256-}" --json "rows-$name.json" ;;
        migration-682-16384)
          DOMEX_SIM_RENDEZVOUS=overheads DOMEX_SIM_IDLE_POLL_NS=200 run "rows-$name" ib 16384 sparse \
            --patterns migration:682^3 "${scale[@]}" --json "rows-$name.json" ;;
        tofu-16384)
          DOMEX_SIM_RENDEZVOUS=overheads DOMEX_SIM_IDLE_POLL_NS=200 DOMEX_SIM_CFG=smpi/bcast:binomial_tree \
            run "rows-$name" tofu 16384 sparse --patterns migration:100^3 "${scale[@]}" --json "rows-$name.json" ;;
        *) echo "sim/runs.sh rows: no row $name" >&2; exit 2 ;;
      esac
    done ;;
  ring-compute-check)
    # What is charged against what is measured: domex-ring at np 1 and 2,
    # natively (mpirun) and simulated with DOMEX_SIM_COMPUTE=1 (one rank per
    # node of the fat tree), the same flags; compare the phase tables (the
    # computation phases should agree within the run-to-run noise).
    export OMP_NUM_THREADS=1
    flags=(--particles 200000 --steps 8 --threads 1 --image-every 0 --energy-every -1 --compare-legacy)
    for P in 1 2; do
      echo "== native np $P"
      "$root/scripts/run" -n "$P" "$root/build/release/apps/ring/domex-ring" "${flags[@]}" --output "native-$P" \
        >"ring-native-$P.txt" 2>&1
      DOMEX_SIM_COMPUTE=1 run "ring-simulated-$P" ib "$P" ring "${flags[@]}" --output "simulated-$P"
      side_by_side "ring-native-$P.txt" "ring-simulated-$P.txt"
    done ;;
  ring-fit)
    # The computation cost model of domex-ring (sim/README.md, "Computation
    # from a fitted model"): native runs on this machine, one thread per
    # rank, every legacy case (--compare-legacy), 1000-16000 particles per
    # rank at np 1 and 2, record every stretch of computation
    # (DOMEX_SIM_RECORD); plus rank 0's legacy cuts at the sample counts of
    # 256-2048 ranks (only that phase kept from those larger runs). sim/fit.py
    # fits and writes ring-model.txt.
    export OMP_NUM_THREADS=1
    rm -f ring-records.* ring-records-cuts.*
    flags=(--threads 1 --image-every 0 --energy-every -1 --output "")
    for P in 1 2; do
      for n in 1000 2000 4000 8000 16000; do
        echo "== $(date -u +%H:%M:%S) native np $P, $n particles per rank"
        DOMEX_SIM_RECORD=$out/ring-records "$root/scripts/run" -n "$P" "$root/build/release/apps/ring/domex-ring" \
          --particles $((n * P)) --steps 8 --compare-legacy "${flags[@]}" >"ring-fit-$P-$n.txt" 2>&1 ||
          { tail "ring-fit-$P-$n.txt"; exit 1; }
      done
    done
    for N in 500000 1000000 2000000; do
      echo "== $(date -u +%H:%M:%S) native np 2, rank 0's cuts of $((N / 50)) samples"
      DOMEX_SIM_RECORD=$out/ring-records-cuts "$root/scripts/run" -n 2 "$root/build/release/apps/ring/domex-ring" \
        --particles "$N" --steps 4 --legacy bcast-decompose "${flags[@]}" >"ring-fit-cuts-$N.txt" 2>&1 ||
        { tail "ring-fit-cuts-$N.txt"; exit 1; }
    done
    grep -h $'\tdecompose: cuts from samples$' ring-records-cuts.* >ring-records.cuts
    python3 "$root/sim/fit.py" --output ring-model.txt --note "$(date -u +%F) $(grep -m1 'model name' /proc/cpuinfo |
      cut -d: -f2 | xargs), sim/runs.sh ring-fit" ring-records ;;
  ring-model-check)
    # The model against what it was fitted on: domex-ring --compare-legacy at
    # np 1 and 2 natively and simulated with the model (DOMEX_SIM_MODEL, F =
    # 1), at a size the fit did not see (3000 particles per rank); the
    # phases side by side.
    export OMP_NUM_THREADS=1
    [[ -f ring-model.txt ]] || { echo "sim/runs.sh ring-model-check: run sim/runs.sh ring-fit first" >&2; exit 2; }
    flags=(--steps 8 --threads 1 --image-every 0 --energy-every -1 --compare-legacy)
    for P in 1 2; do
      "$root/scripts/run" -n "$P" "$root/build/release/apps/ring/domex-ring" --particles $((3000 * P)) "${flags[@]}" \
        --output "" >"ring-model-native-$P.txt" 2>&1
      DOMEX_SIM_MODEL=$out/ring-model.txt run "ring-model-simulated-$P" ib "$P" ring --particles $((3000 * P)) \
        "${flags[@]}" --output "ring-model-simulated-$P"
      echo "== np $P: native | simulated with the model"
      side_by_side "ring-model-native-$P.txt" "ring-model-simulated-$P.txt"
    done ;;
  ring-model)
    # sim/runs.sh ring-model [P...]: domex-ring's before/after table with the
    # computation charged from DOMEX_SIM_MODEL (default sim/models/ring-xeon.txt,
    # the fit of 2026-11-28 on the 2-core Xeon; build/simruns/ring-model.txt
    # after sim/runs.sh ring-fit) times DOMEX_SIM_MODEL_FACTOR (default 1:
    # one core of the machine fitted on), 2000 particles
    # per rank (the seed's 2 M on 1024 nodes), all legacy and all fixes, one
    # simulation each, IB and Tofu (RING_PLATFORMS="ib tofu"). Default P: 64
    # 256. sim/seeds.py ring <all-legacy>/ring.json <all-fixes>/ring.json
    # prints the seed's Fugaku table beside a pair (sim/README.md: at 1024,
    # RING_PLATFORMS=ib DOMEX_SIM_MODEL_FACTOR=2). From 1024 ranks on, 4 steps
    # and every send rendezvous with the point-to-point overheads charged back
    # (DOMEX_SIM_RENDEZVOUS=overheads, or as set; with eager sends one
    # simulation did not finish 8 steps in 10 minutes; the bias that is left,
    # SMPI's collectives: "1024 to 16384 ranks").
    shift
    ranks=("$@")
    [[ $# -eq 0 ]] && ranks=(64 256)
    export OMP_NUM_THREADS=1 DOMEX_SIM_MODEL=${DOMEX_SIM_MODEL:-$root/sim/models/ring-xeon.txt}
    factor=${DOMEX_SIM_MODEL_FACTOR:-1}
    for platform in ${RING_PLATFORMS:-ib tofu}; do
      for P in "${ranks[@]}"; do
        for legacy in all none; do
          name=ring-model-$platform-$P-$legacy-F$factor steps=8 rendezvous=${DOMEX_SIM_RENDEZVOUS:-0}
          ((P >= 1024)) && steps=4 rendezvous=${DOMEX_SIM_RENDEZVOUS:-overheads}
          case $rendezvous in 1) name+=-rdv ;; overheads) name+=-ovh ;; esac
          DOMEX_SIM_RENDEZVOUS=$rendezvous run "$name" "$platform" "$P" ring --particles $((2000 * P)) --steps $steps --threads 1 --image-every 0 \
            --energy-every -1 --legacy "$legacy" --output "$name"
        done
      done
    done ;;
  model)
    # The platform-fitted cost model of the sparse study (sim/README.md):
    # domex-bench calibrate at P = 64 on each platform, then automatic alone
    # at 256 with that model (its choice: the report's `auto->` line).
    for platform in ib tofu; do
      run "model-$platform-64" "$platform" 64 calibrate --messages 1 4 26 --sizes 8 4096 --seconds-per-point 0 \
        --output "model-$platform-64.txt"
      DOMEX_COST_MODEL=$out/model-$platform-64.txt run "sparse-$platform-256-automatic-model" "$platform" 256 sparse \
        "${sparse_flags[@]}" --learning-calls 16 --no-plan --algorithms automatic \
        --json "sparse-$platform-256-automatic-model.json"
    done ;;
  *) awk 'NR < 3 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$root/sim/runs.sh" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# CI stage for the simulations (needs DOMEX_WITH_SIMGRID=1 in scripts/setup.sh):
# builds the SMPI variant (build/smpi, -Werror), prints the calibration check
# and runs domex-sim-check, every algorithm verified byte for byte, at 32
# ranks on the fat tree, 64 ranks on the 6-D torus and 37 ranks (odd, 4 per
# node) on the 3-D torus, and at 64 ranks on the fat tree with all ranks
# sharing one copy of the program (smpi/privatization:no, how 4096 ranks and
# more are simulated: every inbox still checked byte for byte; 3 s). It
# builds only what those programs link (the comm and exchange layers,
# sim/smpi.cmake): 27 build steps, not the 47 of the whole library; 81 s in
# all on the shared 2-core machine (123 s before).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DOMEX_SIM_BUILD:-$root/build/smpi}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=smpicxx \
  -DDOMEX_SMPI=ON -DDOMEX_WERROR=ON -DDOMEX_BUILD_TESTS=OFF -DDOMEX_BUILD_APPS=OFF >/dev/null
cmake --build "$build" --target domex-sim-check domex-sim-pingpong -j"$(nproc)"
"$root/sim/run" pingpong 2>&1 | grep -A4 '^===\|^calibration' | grep -v '^ *bytes\|^ *[0-9]\|^--'
"$root/sim/run" ib 32 check
"$root/sim/run" tofu 64 check
"$root/sim/run" torus3d:4 37 check
DOMEX_SIM_PRIVATIZATION=no "$root/sim/run" ib 64 check

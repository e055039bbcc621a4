#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The test command: installs what is missing, builds domex (Release, warnings
# as errors) and runs every test with ctest; MPI tests run at np = 1, 2, 3, 4
# and 8. Extra CMake arguments: DOMEX_CMAKE_ARGS; build folder: DOMEX_BUILD_DIR.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/setup.sh"
build=${DOMEX_BUILD_DIR:-$root/build/release}
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDOMEX_WERROR=ON ${DOMEX_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
# shellcheck disable=SC2086
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" ${DOMEX_CTEST_ARGS:-}

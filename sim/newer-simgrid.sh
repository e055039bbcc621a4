#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds a SimGrid newer than Debian's 3.32, with SMPI, into a prefix outside
# the repository, once (issue 55; sim/README.md "A newer SimGrid beside
# Debian's"):
#
#   sim/newer-simgrid.sh [VERSION]      # default 4.1; prefix /opt/simgrid-VERSION
#
# The source is PyPI's `simgrid` source distribution (pip download
# simgrid==VERSION --no-binary :all: --no-deps), unpacked under
# DOMEX_SIMGRID_WORK (default /tmp/simgrid-VERSION); nothing of it enters the
# repository. Its setup.py builds only the Python module (CMake with
# -Dminimal-bindings=ON, --enable-smpi passed as -Denable_smpi=ON) and installs
# no smpirun or smpicxx, so this script runs the same CMake on the same source
# itself, with SMPI on and what domex does not use off (Python, Java, model
# checking, sthread, Fortran, LTO, the BMF model's Eigen), then installs it.
# Needs cmake, ninja, g++ and Boost's headers (libboost-dev; installed from
# Debian when missing). Nothing is done when PREFIX/share/domex-simgrid-built
# exists. A stopped build resumes where it stopped (run it again), so it can
# be split into chunks: DOMEX_SIMGRID_BUILD_SECONDS=N stops the compilation
# after N seconds (exit 3: not finished; run again). DOMEX_SIMGRID_JOBS (default 2) parallel
# compilations. sim/run then uses the newest /opt/simgrid-*/bin/smpirun
# (DOMEX_SIMGRID chooses: sim/run's header).
set -euo pipefail
version=${1:-4.1}
prefix=${DOMEX_SIMGRID_PREFIX:-/opt/simgrid-$version}
work=${DOMEX_SIMGRID_WORK:-/tmp/simgrid-$version}
stamp=$prefix/share/domex-simgrid-built

if [[ -f $stamp ]]; then
  echo "sim/newer-simgrid.sh: SimGrid $version already in $prefix ($(cat "$stamp"))"
  exit 0
fi
missing=()
for package in cmake ninja-build g++ libboost-dev python3-pip; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
# python3-pip only where no pip is on PATH (pyenv's, say).
if command -v pip3 >/dev/null || command -v pip >/dev/null; then
  missing=("${missing[@]/python3-pip/}")
fi
read -ra missing <<<"${missing[*]}"
if ((${#missing[@]})); then
  echo "sim/newer-simgrid.sh: installing ${missing[*]}" >&2
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
pip=$(command -v pip3 || command -v pip)

mkdir -p "$work"
source=$work/simgrid-$version
if [[ ! -f $source/CMakeLists.txt ]]; then
  "$pip" download "simgrid==$version" --no-binary :all: --no-deps -d "$work"
  tar -xzf "$work/simgrid-$version.tar.gz" -C "$work"
fi
build=$work/build
# SimGrid's configure leaves a test program (test_stackgrowth) in the current folder: run it in $work.
cd "$work"
if [[ ! -f $build/build.ninja ]]; then
  cmake -S "$source" -B "$build" -G Ninja -DCMAKE_INSTALL_PREFIX="$prefix" \
    -Denable_smpi=ON -Denable_python=OFF -Denable_java=OFF -Denable_model-checking=OFF -Denable_sthread=OFF \
    -Denable_fortran=OFF -Denable_lto=OFF -Denable_documentation=OFF -DEIGEN3_HINT=OFF -Denable_compile_optimizations=ON
fi
jobs=${DOMEX_SIMGRID_JOBS:-2}
if [[ -n ${DOMEX_SIMGRID_BUILD_SECONDS:-} ]]; then
  # ninja removes the outputs of the commands it was stopped in: the next run redoes only those.
  status=0
  timeout "$DOMEX_SIMGRID_BUILD_SECONDS" cmake --build "$build" -j "$jobs" || status=$?
  if ((status == 124)); then
    echo "sim/newer-simgrid.sh: stopped after ${DOMEX_SIMGRID_BUILD_SECONDS} s, not finished: run it again" >&2
    exit 3
  fi
  ((status == 0)) || exit "$status"
else
  cmake --build "$build" -j "$jobs"
fi
cmake --install "$build" >/dev/null
"$prefix/bin/smpirun" -version >/dev/null 2>&1 || true
mkdir -p "$(dirname "$stamp")"
echo "SimGrid $version from PyPI's source distribution, built $(date -u +%F) with $(g++ --version | head -1)" >"$stamp"
echo "sim/newer-simgrid.sh: SimGrid $version installed in $prefix"

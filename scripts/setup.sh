#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian packages domex needs when any is missing (apt-get, as
# root or through sudo), and exports the MPI settings the other scripts use.
# Sourced by scripts/demo.sh, scripts/test.sh and .ci/run.

domex_packages=(build-essential cmake ninja-build pkg-config openmpi-bin libopenmpi-dev
                libfmt-dev libcli11-dev libgtest-dev nlohmann-json3-dev libhwy-dev libpng-dev python3 python3-matplotlib
                gfortran)
if [[ "${DOMEX_WITH_MPICH:-0}" == 1 ]]; then domex_packages+=(mpich libmpich-dev); fi
if [[ "${DOMEX_WITH_FUZZ:-0}" == 1 ]]; then domex_packages+=(clang libclang-rt-dev); fi
# Parallel HDF5 for --snapshot-format hdf5 of domex-mhd, -ring, -lattice (the Open MPI build).
if [[ "${DOMEX_WITH_HDF5:-0}" == 1 ]]; then domex_packages+=(libhdf5-openmpi-dev); fi
# Doxygen for the API reference (cmake --build <dir> --target domex-docs).
if [[ "${DOMEX_WITH_DOCS:-0}" == 1 ]]; then domex_packages+=(doxygen); fi
# SimGrid SMPI (smpicxx, smpirun) for the simulations in sim/.
if [[ "${DOMEX_WITH_SIMGRID:-0}" == 1 ]]; then domex_packages+=(libsimgrid-dev); fi
# ccache: .ci/run compiles the same Release sources twice (its first stage, and the README on a fresh clone).
if [[ "${DOMEX_WITH_CCACHE:-0}" == 1 ]]; then domex_packages+=(ccache); fi

domex_missing=()
for package in "${domex_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || domex_missing+=("$package")
done
if ((${#domex_missing[@]})); then
  echo "domex: installing ${domex_missing[*]}" >&2
  domex_sudo=""
  [[ $(id -u) -ne 0 ]] && domex_sudo="sudo"
  $domex_sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $domex_sudo apt-get install -y -qq --no-install-recommends "${domex_missing[@]}" >/dev/null
fi
# Installing MPICH beside Open MPI must not change which MPI is the default.
if [[ -x /usr/bin/mpicc.openmpi ]] && command -v update-alternatives >/dev/null; then
  update-alternatives --query mpi 2>/dev/null | grep -q "Value: /usr/bin/mpicc.openmpi" ||
    ${domex_sudo:-} update-alternatives --set mpi /usr/bin/mpicc.openmpi >/dev/null 2>&1 || true
  update-alternatives --query mpirun 2>/dev/null | grep -q "Value: /usr/bin/mpirun.openmpi" ||
    ${domex_sudo:-} update-alternatives --set mpirun /usr/bin/mpirun.openmpi >/dev/null 2>&1 || true
fi

# Open MPI refuses to run as root without these, and needs --oversubscribe
# (set through the environment here) for more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# A python3 with matplotlib for the plots: Debian's, unless the first python3
# on PATH already has it.
if python3 -c "import matplotlib" 2>/dev/null; then
  export DOMEX_PYTHON=python3
else
  export DOMEX_PYTHON=/usr/bin/python3
fi

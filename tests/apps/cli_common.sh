# SPDX-License-Identifier: BSD-3-Clause
# What the app CLI tests (mhd_cli.sh, lattice_cli.sh, ring_cli.sh) share.
# Sourced after setting: cli_name (for messages), app (the executable),
# mpiexec and preflags. Checks --version; defines root, work (removed on exit), and:
#   fail MESSAGE...              print "<cli_name>: MESSAGE" and exit 1
#   run NP ARGS...               the app on NP ranks
#   expect_bad NAME NEEDLE ARGS...  exit status 2, the message names NEEDLE
#                                under one prefix, no output folder $work/bad
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "$cli_name: $*" >&2; exit 1; }
# shellcheck disable=SC2086
run() { local np=$1; shift; "$mpiexec" -n "$np" $preflags "$app" "$@"; }
expect_bad() {
  local name=$1 needle=$2; shift 2
  local status=0
  run 2 "$@" > /dev/null 2> "$work/bad.err" || status=$?
  [[ $status -eq 2 ]] || fail "$name: exit status $status, expected 2: $(cat "$work/bad.err")"
  grep -q -- "$needle" "$work/bad.err" || fail "$name: message does not name '$needle': $(cat "$work/bad.err")"
  ! grep -q "domex: rank" "$work/bad.err" || fail "$name: doubled prefix: $(cat "$work/bad.err")"
  [[ ! -e "$work/bad" ]] || fail "$name: the output folder was created"
}
# --version, the same in every application: exit status 0, one line (rank
# 0's) naming the program, domex's version and the MPI library.
version=$(run 2 --version) || fail "--version: exit status $?"
[[ $(grep -c "^$(basename "$app"): domex [0-9]" <<< "$version") -eq 1 && $version == *MPI* ]] ||
  fail "--version: expected one line naming $(basename "$app"), domex and the MPI library: $version"

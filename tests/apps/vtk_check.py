#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks a particle snapshot in legacy binary VTK as domex's apps write it
(apps/common/particles.hpp): N vertices, every POINT_DATA field complete, and
the ids exactly 0..N-1 once each. Prints one line; exits 1 when wrong.

Usage: vtk_check.py FILE N [FIELD ...]   (FIELD: names that must be present)
"""
import struct
import sys


def main():
    path, expected = sys.argv[1], int(sys.argv[2])
    data = open(path, "rb").read()
    at = 0

    def line():
        nonlocal at
        end = data.index(b"\n", at)
        text = data[at:end].decode()
        at = end + 1
        return text

    def skip_blank():
        nonlocal at
        while data[at:at + 1] == b"\n":
            at += 1

    assert line().startswith("# vtk DataFile"), "not legacy VTK"
    line()  # title
    assert line() == "BINARY" and line() == "DATASET UNSTRUCTURED_GRID"
    words = line().split()
    n = int(words[1])
    assert n == expected, f"{n} points, expected {expected}"
    at += 24 * n
    fields = {}
    while True:
        skip_blank()
        if at >= len(data):
            break
        words = line().split()
        if words[0] == "CELLS":
            at += 4 * int(words[2])
        elif words[0] == "CELL_TYPES":
            at += 4 * int(words[1])
        elif words[0] == "POINT_DATA":
            assert int(words[1]) == n
        elif words[0] == "VECTORS":
            fields[words[1]] = struct.unpack(f">{3 * n}d", data[at:at + 24 * n])
            at += 24 * n
        elif words[0] == "SCALARS":
            assert line() == "LOOKUP_TABLE default"
            fields[words[1]] = struct.unpack(f">{n}d", data[at:at + 8 * n])
            at += 8 * n
        else:
            raise AssertionError(f"unexpected section {words[0]}")
    assert at <= len(data), "truncated"
    for name in sys.argv[3:] + ["id"]:
        assert name in fields, f"no field {name} (has {sorted(fields)})"
    assert sorted(int(i) for i in fields["id"]) == list(range(n)), "ids are not 0..N-1 once each"
    print(f"vtk_check: {path}: {n} particles, fields {sorted(fields)}")


if __name__ == "__main__":
    try:
        main()
    except (AssertionError, ValueError, struct.error, IndexError) as error:
        print(f"vtk_check: {sys.argv[1]}: {error}", file=sys.stderr)
        sys.exit(1)

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""domex-md beside LAMMPS's in.lj in one session: the same deck, interleaved
runs, best of N by loop time, `timer sync` on both; then the same physics:
domex-md writes its initial state as a LAMMPS data file, LAMMPS runs from it
(read_data), and the thermo lines of both are compared digit by digit.

LAMMPS is Debian's `lammps` package (installed with apt-get when missing);
nothing of LAMMPS is in this repository.

    python3 bench/md_vs_lammps.py                       # np 1 (29^3), np 2 (37^3)
    python3 bench/md_vs_lammps.py --cases 2:63 --repeats 3   # 1e6 atoms at np 2
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DECK = """units lj
atom_style atomic
{setup}
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify delay 0 every 20 check no
fix 1 all nve
timer sync
thermo {thermo}
run {steps}
"""
LATTICE = """lattice fcc 0.8442
region box block 0 {n} 0 {n} 0 {n}
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom"""


def mpirun(np_, *command, cwd=None):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    result = subprocess.run(["mpirun", "-n", str(np_), *command], cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"md_vs_lammps: {' '.join(command)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


def table(text):
    """Section -> (min, avg, max) seconds, and the loop time, from a LAMMPS-style table."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^(Pair|Neigh|Comm|Output|Modify|Sync|Other)\s*\|\s*([^|]*)\|\s*([^|]*)\|\s*([^|]*)\|", line)
        if m:
            cells = [c.strip() for c in m.groups()[1:]]
            values = [float(c) if c else None for c in cells]
            avg = values[1]
            rows[m.group(1)] = (values[0] if values[0] is not None else avg, avg, values[2] if values[2] is not None else avg)
    loop = float(re.search(r"Loop time of ([0-9.eE+-]+)", text).group(1))
    return loop, rows


def thermo(text):
    lines, on = [], False
    for line in text.splitlines():
        if line.startswith("Step Temp E_pair E_mol TotEng Press"):
            on = True
            continue
        if on:
            fields = line.split()
            if len(fields) == 6 and re.match(r"^-?\d+$", fields[0]):
                lines.append(fields)
            elif line.startswith("Loop time"):
                on = False
    return lines


def comm_detail(text):
    detail = {}
    for line in text.splitlines():
        m = re.match(r"^  (update|reverse|migrate|sort|ghost build|skin check)\s+([0-9.]+)$", line)
        if m:
            detail[m.group(1)] = float(m.group(2))
        m = re.search(r"bound .*update ([0-9.]+) ms -> ([0-9.]+)x, reverse ([0-9.]+) ms -> ([0-9.]+)x", line)
        if m:
            detail["bound"] = [float(g) for g in m.groups()]
    return detail


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=["1:29", "2:37"], help="np:cells (atoms = 4 cells^3)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--domex-md", default=str(ROOT / "build/release/apps/md/domex-md"))
    parser.add_argument("--lammps", default="lmp")
    parser.add_argument("--extra", default="", help="more domex-md flags, e.g. '--overlap off'")
    parser.add_argument("--json", default=str(ROOT / "results/md_vs_lammps.json"))
    args = parser.parse_args()
    if shutil.which(args.lammps) is None:
        print("md_vs_lammps: installing Debian's lammps package", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "lammps"], check=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "lammps"], capture_output=True, text=True).stdout
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    work = Path(tempfile.mkdtemp(prefix="md-vs-lammps-"))
    results = {"cpu": cpu, "lammps": version, "steps": args.steps, "cases": []}
    print(f"domex-md beside LAMMPS {version} (Debian), {cpu}; best of {args.repeats} interleaved runs, timer sync")
    for case in args.cases:
        np_, cells = (int(v) for v in case.split(":"))
        deck = work / f"in.lj.{cells}"
        deck.write_text(DECK.format(setup=LATTICE.format(n=cells), thermo=0, steps=args.steps))
        best = {}
        for _ in range(args.repeats):
            for who in ("domex", "lammps"):
                if who == "lammps":
                    text = mpirun(np_, args.lammps, "-in", str(deck), "-log", "none", "-echo", "none", cwd=work)
                else:
                    text = mpirun(np_, args.domex_md, "--cells", str(cells), "--steps", str(args.steps),
                                  "--timer-sync", "--output", "", *args.extra.split())
                loop, rows = table(text)
                if who not in best or loop < best[who][0]:
                    best[who] = (loop, rows, comm_detail(text) if who == "domex" else {})
        (dl, drows, detail), (ll, lrows, _) = best["domex"], best["lammps"]
        per = 1e3 / args.steps
        print(f"\nnp {np_}, {4 * cells ** 3:,} atoms ({cells}^3 cells, {4 * cells ** 3 // np_:,} per rank), "
              f"{args.steps} steps, ms per step (avg over ranks; Comm min/avg/max)")
        print(f"{'':8} {'domex-md':>10} {'LAMMPS':>10} {'ratio':>7}")
        row = {"np": np_, "cells": cells, "atoms": 4 * cells ** 3, "domex": {}, "lammps": {}}
        for section in ("Pair", "Neigh", "Comm", "Modify", "Sync", "Other"):
            d = drows.get(section, (0, 0, 0))[1] * per
            l = lrows.get(section, (0, 0, 0))[1] * per
            row["domex"][section], row["lammps"][section] = d, l
            print(f"{section:8} {d:10.3f} {l:10.3f} {d / l if l else float('nan'):7.2f}")
        print(f"{'loop':8} {dl * per:10.3f} {ll * per:10.3f} {dl / ll:7.2f}")
        dc, lc = drows["Comm"], lrows["Comm"]
        print(f"Comm min/avg/max: domex {dc[0] * per:.3f}/{dc[1] * per:.3f}/{dc[2] * per:.3f}, "
              f"LAMMPS {lc[0] * per:.3f}/{lc[1] * per:.3f}/{lc[2] * per:.3f}")
        if detail:
            print("domex Comm detail (ms/step, max over ranks): " +
                  ", ".join(f"{k} {v:.3f}" for k, v in detail.items() if k != "bound"))
        row["domex"]["loop"], row["lammps"]["loop"] = dl * per, ll * per
        row["domex_comm_detail"] = detail
        results["cases"].append(row)
    # The same physics: LAMMPS from domex-md's initial state.
    np_, cells = (int(v) for v in args.cases[-1].split(":"))
    data = work / "md.data"
    ours = mpirun(np_, args.domex_md, "--cells", str(cells), "--steps", str(args.steps), "--thermo", "10",
                  "--write-data", str(data), "--output", "")
    deck = work / "in.lj.data"
    deck.write_text(DECK.format(setup=f"read_data {data}", thermo=10, steps=args.steps))
    theirs = mpirun(np_, args.lammps, "-in", str(deck), "-log", "none", "-echo", "none", cwd=work)
    a, b = thermo(ours), thermo(theirs)
    same = sum(1 for x, y in zip(a, b) for u, v in zip(x, y) if u == v)
    total = sum(len(x) for x in a)
    worst = max((abs(float(u) - float(v)) / max(abs(float(v)), 1e-300) for x, y in zip(a, b) for u, v in zip(x, y)),
                default=0)
    print(f"\nthermo from the same data file (np {np_}, {cells}^3 cells, every 10 steps to {args.steps}): "
          f"{same} of {total} printed values identical, largest relative difference {worst:.2g}")
    for x, y in zip(a, b):
        if x != y:
            print(f"  domex {' '.join(x)}\n  lmp   {' '.join(y)}")
    results["thermo"] = {"identical": same, "values": total, "largest_relative_difference": worst,
                         "domex": a, "lammps": b}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    print(f"results {args.json}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

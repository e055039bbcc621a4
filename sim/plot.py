#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plots of the simulated runs (sim/README.md). Every figure is labelled
SIMULATED with its platform, calibration and command.

  sim/plot.py sparse docs/sim-sparse.png ib:64=ib-64.json ib:256=ib-256.json tofu:64=...
  sim/plot.py counts docs/sim-counts.png ib:36=counts-36.txt ...
  sim/plot.py halo docs/sim-halo.png ib/24:64=halo-ib-24-64.json ...   (platform/cells per rank:P)
  sim/plot.py let docs/sim-let.png ib:64=tree-ib-64.json ...
  sim/plot.py migration docs/sim-migration.png build/simruns   (every migration-<platform>-<P>-<algorithm>.json/.txt)
  sim/plot.py decompose docs/sim-decompose.png label=folder ...   (every decompose-<platform>-<P>.json there)
  sim/plot.py wall docs/sim-versions.png label=folder ...   (wall time, peak memory of every decompose-*.txt log there)
  sim/plot.py ring docs/sim-ring-model.png build/simruns ib 2 rdv   (folder, platform, DOMEX_SIM_MODEL_FACTOR, eager|rdv|ovh)
"""
import glob
import json
import os
import re
import sys

# sim/platform.py would shadow the standard library's `platform` (matplotlib imports it).
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CALIBRATION = {
    "ib": "fat tree, IB FDR: target send-recv 2.5 us (simulated 2.44), 3.6 GB/s (o_s = o_r = 0.6 us)",
    "tofu": "6-D torus, Tofu: target send-recv 1.6 us (simulated 1.61), 4.6 GB/s (o_s = o_r = 0.75 us)",
}


def runs(arguments):
    """'platform:P=file' -> [(platform, P, file)]"""
    out = []
    for argument in arguments:
        label, path = argument.split("=", 1)
        platform, ranks = label.split(":")
        out.append((platform, int(ranks), path))
    return out


def footer(fig, platforms, command, computation="no computation", simgrid="3.32"):
    lines = [f"SIMULATED (SimGrid {simgrid} SMPI, {computation}, calibrated per-message overheads)"]
    lines += [f"{p}: {CALIBRATION.get(p, p)}" for p in platforms]
    lines.append(command)
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=7, va="bottom", family="monospace")


def table_of(platform, series, automatic):
    """Markdown: one row per P, microseconds per algorithm, the best, automatic."""
    ranks = sorted({r for points in series.values() for r in points} | set(automatic))
    names = list(series)
    print(f"\n{platform} (simulated, us per call)\n")
    print("| P | " + " | ".join(names) + " | best | automatic (x best) |")
    print("|---" * (len(names) + 3) + "|")
    for r in ranks:
        cells = [f"{series[n][r]:.1f}" if r in series[n] else "-" for n in names]
        present = {n: series[n][r] for n in names if r in series[n]}
        best = min(present, key=present.get) if present else "-"
        auto = "-"
        if r in automatic and present:
            auto = f"{automatic[r][1]} {automatic[r][0]:.1f} ({automatic[r][0] / present[best]:.2f}x)"
        print(f"| {r} | " + " | ".join(cells) + f" | {best} | {auto} |")


def sparse(output, arguments):
    items = runs(arguments)
    platforms = sorted({p for p, _, _ in items}, key=lambda p: ["ib", "tofu"].index(p) if p in ("ib", "tofu") else 9)
    fig, axes = plt.subplots(1, len(platforms), figsize=(6 * len(platforms), 5.2), squeeze=False)
    for axis, platform in zip(axes[0], platforms):
        chosen = sorted((r, path) for p, r, path in items if p == platform)
        series = {}
        automatic = {}
        for ranks, path in chosen:
            rows = json.load(open(path))["rows"]
            for row in rows:
                if row["label"].startswith("plan"):
                    continue
                name = row["algorithm"]
                if name == "automatic":
                    automatic[ranks] = (row["median_s"] * 1e6, row["ran"])
                    continue
                series.setdefault(name, {})[ranks] = row["median_s"] * 1e6
        table_of(platform, series, automatic)
        for name, points in series.items():
            xs = sorted(points)
            axis.plot(xs, [points[x] for x in xs], marker="o", label=name)
        if automatic:
            xs = sorted(automatic)
            axis.plot(xs, [automatic[x][0] for x in xs], "k*", markersize=12, label="automatic (built-in model, bench row)")
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("simulated ranks P (one per node)")
        axis.set_ylabel("time per exchange [us] (slowest rank)")
        axis.set_title(f"SIMULATED sparse exchange, {platform}")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    footer(fig, platforms, "sim/run <platform> <P> sparse --sizes 64 --patterns neighbours26 --seconds-per-row 0 "
                           "(sim/runs.sh sparse: P = 64 in one run; sim/runs.sh split P: one run per algorithm)")
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(output, dpi=110)


def counts(output, arguments):
    items = runs(arguments)
    fig, axis = plt.subplots(figsize=(8, 5.2))
    labels, table = [], {}
    for platform, ranks, path in items:
        label = f"{platform} P={ranks}"
        labels.append(label)
        for line in open(path):
            m = re.match(r"^(MPI_Alltoall|fence \+ MPI_Put|passive .*?|domex \w+)\s+([0-9.]+)\s+([0-9.]+)$", line.strip())
            if m:
                table.setdefault(m.group(1), {})[label] = float(m.group(2))
    width = 0.8 / max(1, len(table))
    for k, (method, values) in enumerate(table.items()):
        xs = [i + k * width for i in range(len(labels))]
        axis.bar(xs, [values.get(l, 0) for l in labels], width, label=method)
    axis.set_xticks([i + 0.4 - width / 2 for i in range(len(labels))], labels)
    axis.set_yscale("log")
    axis.set_ylabel("time per count exchange [us] (slowest rank)")
    axis.set_title("SIMULATED MPS count exchange (8 B to ~14 neighbours)")
    axis.legend(fontsize=8)
    axis.grid(True, axis="y", which="both", alpha=0.3)
    footer(fig, sorted({p for p, _, _ in items}), "sim/run ib:6 36 counts --calls 20 (6 nodes); ib:8 72 (9 nodes); "
                                                  "tofu:6 36; tofu:8 72; ib 1024 counts --calls 2 (sim/runs.sh counts)")
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.savefig(output, dpi=110)


def halo_rows(path):
    """-> {k: row} of the plan/full rows of a domex-bench halo JSON, plus the cells per rank."""
    data = json.load(open(path))
    rows = {r["depth"]: r for r in data["rows"] if r["variant"] == "plan/full"}
    return rows, data["cells_per_rank"], data["dims"]


def halo(output, arguments):
    """Deep halo, weak scaling: per platform and cells per rank (label platform:P or
    platform/cells:P), per k: the compute share compute / (compute + halo) (the seed's
    efficiency) and the parallel efficiency owned-cell work / step time (redundant
    ghost-zone work counts as overhead), against P."""
    items = runs(arguments)
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2))
    series = {}
    for label, ranks, path in items:
        rows, cells, dims = halo_rows(path)
        for k, r in rows.items():
            series.setdefault((label, k), {})[ranks] = (r, cells, dims)
    colors = {}
    print("\n| platform | cells/rank | P | dims | k | step ms | compute ms | halo ms | compute share | "
          "parallel efficiency | weak scaling t(P_min)/t(P) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (label, k), points in sorted(series.items()):
        xs = sorted(points)
        first = points[xs[0]][0]["step_s"]
        share, useful = [], []
        for x in xs:
            r, cells, dims = points[x]
            # the owned cells' work: compute time of the step that updates no ghosts,
            # i.e. compute_s scaled by owned / updated cells averaged over the k steps
            updated = sum((cells + 2 * (k - 1 - s)) ** 3 for s in range(k)) / k
            owned_s = r["compute_s"] * cells**3 / updated
            share.append(100 * r["compute_s"] / (r["compute_s"] + r["halo_s"]))
            useful.append(100 * owned_s / r["step_s"])
            print(f"| {label.split('/')[0]} | {cells}^3 | {x} | {'x'.join(map(str, dims))} | {k} | "
                  f"{1e3 * r['step_s']:.3f} | {1e3 * r['compute_s']:.3f} | {1e3 * r['halo_s']:.3f} | "
                  f"{share[-1]:.1f} % | {useful[-1]:.1f} % | {100 * first / r['step_s']:.1f} % |")
        style = {1: "o-", 2: "s--", 3: "^:"}.get(k, "x-")
        color = colors.setdefault(label, f"C{len(colors)}")
        name = f"{label.replace('/', ', ')}^3, k={k}"
        axes[0].plot(xs, share, style, color=color, label=name)
        axes[1].plot(xs, useful, style, color=color, label=name)
    for axis, what in zip(axes, ["compute share: compute / (compute + halo) [%]",
                                 "parallel efficiency: owned-cell work / step time [%]"]):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("simulated ranks P (one per node), weak scaling")
        axis.set_ylabel(what)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=7)
    axes[0].axhspan(94, 98, color="grey", alpha=0.12, label="seed: 94-98 % (k = 1)")
    axes[0].axhspan(97, 99, color="green", alpha=0.08, label="seed: 97-99 % (deep halo)")
    axes[0].legend(fontsize=7)
    axes[0].set_title("SIMULATED deep halo: compute share\n(redundant ghost-zone work counted as compute)", fontsize=10)
    axes[1].set_title("SIMULATED deep halo: parallel efficiency\n(redundant ghost-zone work counted as overhead)",
                      fontsize=10)
    footer(fig, sorted({l.split("/")[0] for l, _, _ in items}),
           "sim/run <platform> <P> halo --experiments A --exchanged 8 --variants plan/full --depths 1 2 3 --steps 6 "
           "--repeats 1 --back-to-back 1 --cells <n> --cell-seconds 6.2e-7\n(sim/runs.sh halo; at 256 one run per k, "
           "--depths k --steps k): 8 fields, 26 neighbours; "
           "0.62 us of simulated time per cell update = domex-mhd's compute per cell and step (np 1, development machine)",
           computation="computation injected: smpi_execute per step")
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.savefig(output, dpi=110)


def let(output, arguments):
    """LET exchange modes of domex-bench tree: per platform:P, per mode, the slowest
    rank's build LET (allgather of the rank summaries + the walks) and exchange LET."""
    items = runs(arguments)
    fig, axis = plt.subplots(figsize=(10, 5.2))
    labels, table = [], {}
    print("\n| platform | P | particles/rank | mode | LET messages (max rank) | LET items (max rank) | "
          "build LET ms | exchange LET ms | sum ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for platform, ranks, path in items:
        data = json.load(open(path))
        label = f"{platform} P={ranks}"  # several files (one per mode) may share a label
        if label not in labels:
            labels.append(label)
        for row in data["rows"]:
            phases = {p["name"]: p["max_s"] * 1e3 for p in row["phases"]}
            build, exchange = phases.get("build LET", 0), phases.get("exchange LET", 0)
            table.setdefault(row["let"], {})[label] = (build, exchange)
            print(f"| {platform} | {ranks} | {data['particles'] // ranks} | {row['let']} | {row['let_messages']} | "
                  f"{row['let_items']} | {build:.3f} | {exchange:.3f} | {build + exchange:.3f} |")
    width = 0.8 / max(1, len(table))
    for k, (mode, values) in enumerate(table.items()):
        xs = [i + k * width for i in range(len(labels))]
        build = [values.get(l, (0, 0))[0] for l in labels]
        exchange = [values.get(l, (0, 0))[1] for l in labels]
        bars = axis.bar(xs, exchange, width, label=f"{mode}: exchange LET")
        axis.bar(xs, build, width, bottom=exchange, color=bars[0].get_facecolor(), alpha=0.4, hatch="//",
                 label=f"{mode}: build LET" if k == 0 else None)
    axis.set_xticks([i + 0.4 - width / 2 for i in range(len(labels))], labels)
    axis.set_ylabel("ms per step, slowest rank (hatched: build LET)")
    axis.set_title("SIMULATED LET exchange modes of domex-bench tree (uniform cube, 1 thread per rank)")
    axis.legend(fontsize=8)
    axis.grid(True, axis="y", alpha=0.3)
    footer(fig, sorted({p for p, _, _ in items}),
           "sim/run <platform> <P> tree --particles 3000P --threads 1 --error-samples 0 --steps 1 "
           "--lets <mode>\n(sim/runs.sh let: one simulation per mode above P = 64); the host's computation costs no simulated time")
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.savefig(output, dpi=110)


ALGORITHMS = ["alltoall", "sendrecv_reduce", "nbx", "reduce_scatter", "rma_fence", "rma_passive", "grid"]


def migration(output, arguments):
    """The seed's study on real migration patterns (sim/runs.sh migration): per
    platform, P and N, every algorithm's time, the best, automatic's model pick
    (its first calls), the best of the model's first three (what its measuring
    epochs choose from) and, where run, automatic's own row."""
    folder = arguments[0]
    data = {}  # (platform, P, N) -> {"times": {alg: us}, "stats": ..., "model": [...], "auto": (us, ran, how)}
    for path in sorted(glob.glob(os.path.join(folder, "migration-*-*-*.json"))):
        m = re.match(r"migration-([a-z0-9]+)-(\d+)-([a-z_]+)(-\d+)?\.json$", os.path.basename(path))
        if not m:
            continue
        platform, ranks, algorithm = m.group(1), int(m.group(2)), m.group(3)
        log = path[:-5] + ".txt"
        models, moved = {}, {}
        if os.path.exists(log):
            for line in open(log):
                mm = re.match(r"model (migration:\S+) \d+ B: (.*)$", line.strip())
                if mm:
                    models[mm.group(1)] = [item.split()[0] for item in mm.group(2).split(", ")]
                mm = re.match(r"(migration:\S+): N = (\d+) .*leaving ([0-9.]+) \(max (\d+)", line.strip())
                if mm:
                    moved[mm.group(1)] = (int(mm.group(2)), float(mm.group(3)), int(mm.group(4)))
        for row in json.load(open(path))["rows"]:
            n = moved.get(row["pattern"], (0,))[0] or row["pattern"]
            entry = data.setdefault((platform, ranks, n), {"times": {}, "model": [], "auto": None})
            entry["pattern"] = row["pattern"]
            entry["stats"] = (row["max_messages_sent"], row["max_messages_received"], row["max_bytes_sent"],
                              row["max_bytes_received"])
            entry["moved"] = moved.get(row["pattern"])
            entry["model"] = models.get(row["pattern"], entry["model"])
            if row["algorithm"] == "automatic":
                entry["auto"] = (row["median_s"] * 1e6, row["ran"], row["how"])
            else:
                entry["times"][row["algorithm"]] = row["median_s"] * 1e6
    print("\n| platform | P | N | leaving per rank (max) | msgs out / in (max) | KB out / in (max) | "
          + " | ".join(ALGORITHMS) + " | best | model's first (x best) | automatic learned: best of model's first 3 non-RMA (x best) | "
          "automatic row: ran (x best) |")
    print("|---" * (len(ALGORITHMS) + 9) + "|")
    for (platform, ranks, n), entry in sorted(data.items(), key=lambda kv: (kv[0][0], kv[0][1], str(kv[0][2]).zfill(12))):
        times = entry["times"]
        best = min(times, key=times.get)  # of those run
        cells = [f"**{times[a]:.1f}**" if a == best else (f"{times[a]:.1f}" if a in times else "-") for a in ALGORITHMS]
        model = entry["model"]
        pick = f"{model[0]} ({times[model[0]] / times[best]:.2f}x)" if model and model[0] in times else "-"
        # automatic's exploration: the model's first three without a setup
        # (RMA windows), one measuring epoch each; it keeps the fastest.
        first3 = [a for a in model if not a.startswith("rma")][:3]
        run = [a for a in first3 if a in times]
        learned = min(run, key=times.get) if run else None
        learned = f"{learned} ({times[learned] / times[best]:.2f}x)" if learned else "-"
        if run and len(run) < len(first3):
            learned += f" of {', '.join(run)} (not run: {', '.join(a for a in first3 if a not in times)})"
        auto = entry["auto"]
        auto = f"{auto[1]}, {auto[2]} {auto[0]:.1f} ({auto[0] / times[best]:.2f}x)" if auto else "-"
        stats, moved = entry["stats"], entry["moved"] or (0, 0.0, 0)
        side = round(n ** (1 / 3)) if isinstance(n, int) else 0
        print(f"| {platform} | {ranks} | {side}^3 | {moved[1]:.0f} ({moved[2]}) | {stats[0]} / {stats[1]} | "
              f"{stats[2] / 1e3:.1f} / {stats[3] / 1e3:.1f} | " + " | ".join(cells) +
              f" | {best} | {pick} | {learned} | {auto} |")
    platforms = sorted({k[0] for k in data}, key=lambda p: ["ib", "tofu"].index(p) if p in ("ib", "tofu") else 9)
    ranks_all = sorted({k[1] for k in data})
    fig, axes = plt.subplots(len(platforms), len(ranks_all), figsize=(4.6 * len(ranks_all), 4.2 * len(platforms)),
                             squeeze=False)
    for i, platform in enumerate(platforms):
        for j, ranks in enumerate(ranks_all):
            axis = axes[i][j]
            points = {k[2]: v for k, v in data.items() if k[0] == platform and k[1] == ranks}
            for a, algorithm in enumerate(ALGORITHMS):
                xs = sorted(n for n in points if algorithm in points[n]["times"])
                if xs:
                    axis.plot(xs, [points[n]["times"][algorithm] for n in xs], marker="o", color=f"C{a}",
                              label=algorithm)
            xs = sorted(n for n in points if points[n]["auto"])
            if xs:
                axis.plot(xs, [points[n]["auto"][0] for n in xs], "k*", markersize=11, label="automatic (row)")
            axis.set_xscale("log")
            axis.set_yscale("log")
            axis.set_xlabel("particles N (uniform, periodic unit cube)")
            axis.set_ylabel("time per exchange [us] (slowest rank)")
            axis.set_title(f"SIMULATED migration, {platform}, P = {ranks}", fontsize=10)
            axis.grid(True, which="both", alpha=0.3)
            if not points:
                axis.text(0.5, 0.5, "not run", transform=axis.transAxes, ha="center")
            axis.legend(fontsize=6)
    footer(fig, platforms, "sim/run <platform> <P> sparse --patterns migration:100^3 migration:316^3 migration:682^3 "
                           "--sizes 64 --rounds 1 --warm-up 1 --no-plan --algorithms <one>\n(sim/runs.sh migration P "
                           "ib tofu): one step of migration, multisection decomposition, 64 B per particle, "
                           "each coordinate moved uniform in +-1 mean spacing N^(-1/3)")
    fig.tight_layout(rect=(0, 0.16 / len(platforms), 1, 1))
    fig.savefig(output, dpi=110)


def decompose(output, arguments):
    """Multisection rebalance at scale (sim/runs.sh decompose): time and bytes
    received per rank against P, one series per 'label=folder' (every
    decompose-<platform>-<P>.json there), with P^(1/3) and P reference lines
    through the first series' smallest P."""
    series = {}  # "label platform" -> {P: row}
    for argument in arguments:
        label, folder = argument.split("=", 1)
        for path in sorted(glob.glob(os.path.join(folder, "decompose-*.json"))):
            match = re.fullmatch(r"decompose-(\w+)-(\d+)\.json", os.path.basename(path))
            if match:
                rows = json.load(open(path))["rows"]
                series.setdefault(f"{label} ({match[1]})", {})[int(match[2])] = rows[0]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8))
    print("\n| series | P | rebalance ms | migrate ms | bytes received per rank | rounds |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, values in series.items():
        ranks = sorted(values)
        for r in ranks:
            row = values[r]
            print(f"| {name} | {r} | {row['rebalance_s'] * 1e3:.3f} | {row['migrate_s'] * 1e3:.3f} | "
                  f"{row['bytes_received']} | {row['rounds']} |")
        left.plot(ranks, [values[r]["rebalance_s"] * 1e3 for r in ranks], "o-", label=name)
        right.plot(ranks, [values[r]["bytes_received"] / 1e3 for r in ranks], "o-", label=name)
    ranks = sorted({r for values in series.values() for r in values})
    first = next(iter(series.values()))
    for axis, key, scale in ((left, "rebalance_s", 1e3), (right, "bytes_received", 1e-3)):
        base = first[min(first)][key] * scale
        axis.plot(ranks, [base * (r / min(first)) ** (1 / 3) for r in ranks], ":", color="grey", label="P^(1/3)")
        axis.plot(ranks, [base * r / min(first) for r in ranks], "-.", color="grey", label="P")
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.grid(True, which="both", alpha=0.3)
        axis.set_xlabel("simulated ranks P")
        axis.legend(fontsize=8)
    left.axhline(0.4, color="red", lw=0.8)
    left.text(ranks[0], 0.42, "target: 0.4 ms at P = 1024", color="red", fontsize=8)
    left.set_ylabel("ms per rebalance, slowest rank (median of 5)")
    right.set_ylabel("KB received per rank per rebalance (max rank)")
    left.set_title("SIMULATED multisection rebalance, 2000 particles/rank")
    right.set_title("bytes received per rank (histogram reductions)")
    footer(fig, sorted({name.split("(")[-1].rstrip(")") for name in series}),
           "sim/run tofu <P> decompose --particles 2000 --inputs uniform --methods histogram --repeats 5 "
           "(sim/runs.sh decompose; DOMEX_SIMGRID chooses the SimGrid, each label names its own)",
           simgrid=versions_of(arguments))
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(output, dpi=110)


def versions_of(arguments):
    """'3.32 / 4.1': the SimGrid versions that the logs of the 'label=folder' arguments name
    (sim/run's first line, 'sim/run: SimGrid <version> ...'), else 3.32."""
    found = set()
    for argument in arguments:
        for path in glob.glob(os.path.join(argument.split("=", 1)[-1], "*.txt")):
            with open(path, errors="replace") as log:
                match = re.match(r"sim/run: SimGrid (\S+) ", log.readline())
            if match:
                found.add(match[1])
    return " / ".join(sorted(found, key=lambda v: [int(x) for x in re.findall(r"\d+", v)])) or "3.32"


def wall(output, arguments):
    """What a simulation costs the machine that runs it: wall time and peak memory (the last line of
    each log of sim/runs.sh, 'wall <s> s, peak memory <KB> KB') of the decompose-<platform>-<P>.txt
    logs in each 'label=folder', against P, with a P^2 line through the first series."""
    series = {}
    for argument in arguments:
        label, folder = argument.split("=", 1)
        for path in sorted(glob.glob(os.path.join(folder, "decompose-*.txt"))):
            match = re.fullmatch(r"decompose-(\w+)-(\d+)\.txt", os.path.basename(path))
            text = open(path, errors="replace").read()
            last = text.strip().splitlines()[-1:]
            cost = re.match(r"wall ([0-9.]+) s, peak memory (\d+) KB", last[0]) if last else None
            if match and cost:
                # A simulation stopped by the timeout: its wall time is the limit, its memory unknown.
                stopped = "exited with non-zero status" in text
                series.setdefault(label, {})[int(match[2])] = (float(cost[1]), None if stopped else int(cost[2]) / 1e6)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8))
    print("\n| series | P | wall s | peak memory GB |")
    print("|---|---:|---:|---:|")
    for label, values in series.items():
        ranks = sorted(values)
        for r in ranks:
            memory = "stopped" if values[r][1] is None else f"{values[r][1]:.2f}"
            print(f"| {label} | {r} | {values[r][0]:.1f} | {memory} |")
        done = [r for r in ranks if values[r][1] is not None]
        line, = left.plot(done, [values[r][0] for r in done], "o-", label=label)
        stopped = [r for r in ranks if values[r][1] is None]
        if stopped:
            left.plot(stopped, [values[r][0] for r in stopped], "x", ms=10, color=line.get_color(),
                      label=f"{label}: stopped at 600 s, no row")
        right.plot(done, [values[r][1] for r in done], "o-", label=label)
    first = next(iter(series.values()))
    ranks = sorted({r for values in series.values() for r in values})
    low = min(first)
    left.plot(ranks, [first[low][0] * (r / low) ** 2 for r in ranks], ":", color="grey", label="P^2 (from the first point)")
    left.axhline(600, color="red", lw=0.8)
    left.text(ranks[0], 650, "10 minutes", color="red", fontsize=8)
    right.axhline(20, color="red", lw=0.8)
    for axis in (left, right):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.grid(True, which="both", alpha=0.3)
        axis.set_xlabel("simulated ranks P")
        axis.legend(fontsize=8)
    left.set_ylabel("wall time of the simulation [s]")
    right.set_ylabel("peak memory of the simulation [GB]")
    left.set_title("cost of simulating decompose (2 + 5 rebalances, 2 + 2 at 8192)")
    right.set_title("peak resident memory (/usr/bin/time)")
    footer(fig, ["tofu"], "sim/run tofu <P> decompose --particles 2000 --inputs uniform --methods histogram "
           "--repeats 5 (sim/runs.sh decompose), one simulation at a time on a 2-core machine",
           simgrid=versions_of(arguments))
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(output, dpi=110)


def ring(output, arguments):
    """domex-ring with computation charged from the fitted model (sim/runs.sh
    ring-model): step and phases against P for all legacy and all fixes, from
    every ring-model-<platform>-<P>-<all|none>-F<factor><suffix>/ring.json in
    the folder of one platform, factor and send model ('folder platform factor
    [eager|rdv|ovh]', default rdv: suffix "", "-rdv" or "-ovh", as
    sim/runs.sh names them; one model, so that no P has two runs), with the
    seed's Fugaku figures (seed 001) at 1024."""
    folder, platform, factor, *model = arguments
    suffix = {"eager": "", "rdv": "-rdv", "ovh": "-ovh"}[model[0] if model else "rdv"]
    runs = {}  # (legacy, P) -> run
    for path in glob.glob(os.path.join(folder, f"ring-model-{platform}-*-F{factor}{suffix}/ring.json")):
        match = re.fullmatch(rf"ring-model-{platform}-(\d+)-(all|none)-F{re.escape(factor)}{re.escape(suffix)}",
                             os.path.basename(os.path.dirname(path)))
        if match:
            runs[(match[2], int(match[1]))] = json.load(open(path))
    if not runs:
        sys.exit(f"sim/plot.py ring: no ring-model-{platform}-<P>-<all|none>-F{factor}{suffix}/ring.json in {folder}")
    phases = [("step", "step"), ("exchange particles", "exchange"), ("decompose", "decomposition"),
              ("build tree", "tree"), ("kernel", "kernel")]
    seed = {"all": {"step": 105, "exchange": 10.5, "decomposition": 1.5},
            "none": {"step": 7.2, "exchange": 0.78, "decomposition": 0.41, "tree": 1.0, "kernel": 1.57}}
    # ms per step, slowest rank, of each run: the step and every phase.
    ms = {key: {"step": run["step_ms"], **{q["phase"]: q["max_ms"] for q in run["phases"]}}
          for key, run in runs.items()}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
    print("\n| legacy | P | step ms | " + " | ".join(p for p, _ in phases[1:]) + " |")
    print("|---|---:|---:|" + "---:|" * (len(phases) - 1))
    for axis, legacy, title in ((axes[0], "all", "all legacy"), (axes[1], "none", "all fixes")):
        ranks = sorted(P for (l, P) in runs if l == legacy)
        for P in ranks:
            print(f"| {legacy} | {P} | " + " | ".join(f"{ms[(legacy, P)].get(p, 0):.3f}" for p, _ in phases) + " |")
        for (phase, seed_name), marker in zip(phases, "osD^v"):
            values = [ms[(legacy, P)].get(phase, 0) for P in ranks]
            line, = axis.plot(ranks, values, marker + "-", label=f"domex {phase}")
            if seed_name in seed[legacy]:
                axis.plot([1024], [seed[legacy][seed_name]], marker, mfc="none", ms=11, color=line.get_color(),
                          label=f"seed (FDPS, Fugaku) {seed_name}")
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.grid(True, which="both", alpha=0.3)
        axis.set_xlabel("simulated ranks P (2000 particles each)")
        axis.set_title(f"SIMULATED domex-ring, {title}, F = {factor}")
        axis.legend(fontsize=7)
    axes[0].set_ylabel("ms per step, slowest rank")
    footer(fig, [platform],
           f"DOMEX_SIM_MODEL=sim/models/ring-xeon.txt DOMEX_SIM_MODEL_FACTOR={factor} sim/runs.sh ring-model <P> "
           "(" + {"": "SMPI's eager sends", "-rdv": "every send rendezvous (DOMEX_SIM_RENDEZVOUS=1)",
                  "-ovh": "every send rendezvous, overheads charged back"}[suffix] + ")",
           computation=f"computation from the fitted model x {factor}")
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(output, dpi=110)


if __name__ == "__main__":
    kind, output, *rest = sys.argv[1:]
    {"sparse": sparse, "counts": counts, "halo": halo, "let": let, "migration": migration,
     "decompose": decompose, "ring": ring, "wall": wall}[kind](output, rest)
    print(f"wrote {output}")

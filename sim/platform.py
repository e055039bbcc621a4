#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""SimGrid platforms for domex's simulations: writes <out>/<name>-<P>.xml and
<out>/<name>-<P>.hosts and prints the SMPI --cfg options of the platform's
calibration (per-message software overheads), one per line.

  sim/platform.py ib 256 --out build/sim            # 2-level fat tree, IB FDR
  sim/platform.py tofu 1024 --out build/sim         # 6-D torus, Tofu
  sim/platform.py torus3d 512 --out build/sim       # 3-D torus, IB FDR links
  sim/platform.py crossbar3d 2560 --out build/sim   # 16 x 16 x 10 hyper-crossbar, IB FDR links
  sim/platform.py ib 1024 --ranks-per-node 16 ...   # multi-core nodes

Calibration (sim/README.md, checked by `sim/run pingpong`): the seeds'
measured ping-pong, InfiniBand FDR with Intel MPI 5.1.3 (send-recv 2.5 us,
3.6 GB/s at 2 MiB, put 0.8 us) and Tofu with Fujitsu MPI (send-recv 1.6 us,
4.6 GB/s). A message's one-way time in the simulation is
  o_send + o_recv + hops * link_latency + bytes / link_bandwidth
(SMPI's piecewise latency and bandwidth factors are set to 1).
"""
import argparse
import math
import os

# name: topology, link bandwidth (B/s), link latency (s), per-message
# overheads send (blocking and Isend) and receive (s), SMPI collective
# selector, targets.
PLATFORMS = {
    "ib": dict(topology="fattree", bandwidth=3.616e9, latency=0.307e-6, o_send=0.6e-6, o_recv=0.6e-6,
               leaf=16, collectives="mpich", targets=dict(latency_us=2.5, bandwidth_gbs=3.6, put_us=0.8),
               about="2-level fat tree (16 nodes per leaf switch, non-blocking), InfiniBand FDR as measured "
                     "by the seed (Intel MPI 5.1.3)"),
    "tofu": dict(topology="tofu", bandwidth=4.627e9, latency=0.1e-6, o_send=0.75e-6, o_recv=0.75e-6,
                 collectives="ompi", targets=dict(latency_us=1.6, bandwidth_gbs=4.6),
                 about="6-D torus (X,Y,Z x 2,3,2 like Tofu), Tofu as measured by the seed (Fujitsu MPI)"),
    # The lattice QCD seed's machine: a hyper-crossbar (each node has one link
    # per dimension into the crossbar switch of its line along it); IB FDR
    # links and overheads, as torus3d.
    **{f"crossbar{d}d": dict(topology="crossbar", dims=d, bandwidth=3.616e9, latency=0.325e-6, o_send=0.6e-6,
                            o_recv=0.6e-6, collectives="mpich", targets=dict(),
                            about=f"{d}-D hyper-crossbar (one link per node and dimension into its line's "
                                  f"crossbar switch) with the IB FDR links and overheads (no seed figures: no "
                                  f"targets)")
       for d in (1, 2, 3)},
    "torus3d": dict(topology="torus3d", bandwidth=3.616e9, latency=0.325e-6, o_send=0.6e-6, o_recv=0.6e-6,
                    collectives="mpich", targets=dict(),
                    about="3-D torus with the IB FDR links and overheads (no seed figures: no targets)"),
}


def balanced(n, dims):
    """n nodes (or more) as `dims` factors as equal as possible (powers of 2 when n is one)."""
    sides = [1] * dims
    while math.prod(sides) < n:
        sides[sides.index(min(sides))] *= 2
    return sorted(sides, reverse=True)


def factors(n, dims):
    """n as `dims` factors as equal as possible, largest first (MPI_Dims_create's choice)."""
    sides = [1] * dims
    primes, m, p = [], n, 2
    while p * p <= m:
        while m % p == 0:
            primes.append(p)
            m //= p
        p += 1
    if m > 1:
        primes.append(m)
    for prime in sorted(primes, reverse=True):
        sides[sides.index(min(sides))] *= prime
    return sorted(sides, reverse=True)


def crossbar(dims, nodes, bw, lat, ranks_per_node, f):
    """Writes a hyper-crossbar of sides factors(nodes, dims): node n at coordinates
    (n // (Y Z), (n // Z) % Y, n % Z), the last fastest, as MPI_Cart_create
    numbers a process grid. A message between two nodes of one line goes up
    the sender's link of that dimension and down the receiver's (full
    duplex: SimGrid's SPLITDUPLEX); others route through nodes, dimension by
    dimension (shortest paths, Dijkstra)."""
    sides = factors(nodes, dims) + [1] * (3 - dims)
    _, Y, Z = sides
    f.write(' <zone id="world" routing="DijkstraCache">\n')
    for n in range(nodes):
        f.write(f'  <host id="node-{n}" speed="1Gf" core="{ranks_per_node}"/>\n')
    switches, links, routes = {}, [], []  # (the DTD wants a zone's routes after its routers and links)
    for n in range(nodes):
        at = [n // (Y * Z), (n // Z) % Y, n % Z]
        for axis in range(3):
            if sides[axis] == 1:
                continue
            rest = tuple(c for a, c in enumerate(at) if a != axis)
            switch = switches.setdefault((axis, rest), f"xbar-{axis}-{rest[0]}-{rest[1]}")
            links.append(f'  <link id="l-{n}-{axis}" bandwidth="{bw}" latency="{lat}" sharing_policy="SPLITDUPLEX"/>\n')
            routes.append(f'  <route src="node-{n}" dst="{switch}" symmetrical="YES">'
                          f'<link_ctn id="l-{n}-{axis}" direction="UP"/></route>\n')
    f.writelines(f'  <router id="{switch}"/>\n' for switch in switches.values())
    f.writelines(links + routes)
    f.write(" </zone>\n")


def tofu_sides(n):
    """Tofu: (X, Y, Z) x (a, b, c) = (2, 3, 2): units of 12 nodes."""
    units = math.ceil(n / 12)
    xyz = [1, 1, 1]
    while math.prod(xyz) < units:
        xyz[xyz.index(min(xyz))] += 1
    return sorted(xyz, reverse=True) + [2, 3, 2]


def write(name, ranks, ranks_per_node, out):
    spec = PLATFORMS[name]
    nodes = math.ceil(ranks / ranks_per_node)
    bw, lat = f"{spec['bandwidth']:.6g}Bps", f"{spec['latency'] * 1e6:.6g}us"
    # Ranks on one node: shared memory, modelled as a loopback link.
    loop = 'loopback_bw="20GBps" loopback_lat="0.2us"'
    if spec["topology"] == "fattree":
        leaf = min(spec["leaf"], nodes)
        leaves = math.ceil(nodes / leaf)
        spines = leaf if leaves > 1 else 1  # one uplink per down port: non-blocking
        # levels; down ports per switch (per level); up ports; parallel links
        params = f"2;{leaf},{leaves};1,{spines};1,1"
        hosts = leaf * leaves
        topo = f'topology="FAT_TREE" topo_parameters="{params}"'
    elif spec["topology"] == "tofu":
        sides = [s for s in tofu_sides(nodes) if s > 1]  # SimGrid rejects sides of 1
        hosts = math.prod(sides)
        topo = f'topology="TORUS" topo_parameters="{",".join(map(str, sides))}"'
    elif spec["topology"] == "torus3d":
        sides = [s for s in balanced(nodes, 3) if s > 1] or [2]
        hosts = math.prod(sides)
        topo = f'topology="TORUS" topo_parameters="{",".join(map(str, sides))}"'
    base = os.path.join(out, f"{name}-{ranks}" + (f"x{ranks_per_node}" if ranks_per_node > 1 else ""))
    with open(base + ".xml", "w") as f:
        f.write('<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n')
        f.write(f"<!-- domex sim/platform.py {name} {ranks} (ranks per node {ranks_per_node}): {spec['about']} -->\n")
        f.write('<platform version="4.1">\n')
        if spec["topology"] == "crossbar":
            crossbar(spec["dims"], nodes, bw, lat, ranks_per_node, f)
        else:
            f.write(' <zone id="world" routing="Full">\n')
            f.write(f'  <cluster id="c" prefix="node-" radical="0-{hosts - 1}" suffix="" speed="1Gf" '
                    f'core="{ranks_per_node}" bw="{bw}" lat="{lat}" {topo} {loop}/>\n')
            f.write(" </zone>\n")
        f.write("</platform>\n")
    with open(base + ".hosts", "w") as f:
        for r in range(ranks):
            f.write(f"node-{r // ranks_per_node}\n")
    return base


def cfg(name, ranks_per_node=1):
    spec = PLATFORMS[name]
    send, recv = spec["o_send"], spec["o_recv"]
    # Collective algorithms chosen as the seed's MPI would: Intel MPI is
    # MPICH-derived, Fujitsu MPI Open MPI-derived (SMPI's selectors).
    options = [f"smpi/os:0:{send:.6g}:0", f"smpi/ois:0:{send:.6g}:0", f"smpi/or:0:{recv:.6g}:0",
               f"smpi/coll-selector:{spec['collectives']}"]
    # SMPI's mpich bcast and allreduce first learn each new communicator's
    # nodes (Comm::init_smp: two ring allgathers, 2 P^2 messages; every
    # MPI_Comm_dup broadcasts its id): minutes at 1024 ranks, never done at
    # 4096. With one rank per node they then run the flat algorithm on all
    # ranks (SMP_binomial = binomial tree; two-level allreduce = recursive
    # doubling among the node leaders), so name those directly: the same
    # simulated times (checked at 64 and 256, sim/README.md), no P^2 setup.
    if spec["collectives"] == "mpich" and ranks_per_node == 1:
        options += ["smpi/bcast:binomial_tree", "smpi/allreduce:rdb"]
    return options


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("platform", choices=sorted(PLATFORMS))
    parser.add_argument("ranks", type=int)
    parser.add_argument("--ranks-per-node", type=int, default=1)
    parser.add_argument("--out", default=".")
    parser.add_argument("--targets", action="store_true", help="print the calibration targets as flags instead")
    args = parser.parse_args()
    if args.targets:
        t = PLATFORMS[args.platform]["targets"]
        flags = []
        for key, flag in (("latency_us", "--target-latency-us"), ("bandwidth_gbs", "--target-bandwidth-gbs"),
                          ("put_us", "--target-put-us")):
            if key in t:
                flags += [flag, str(t[key])]
        print("\n".join(flags))
        return
    os.makedirs(args.out, exist_ok=True)
    base = write(args.platform, args.ranks, args.ranks_per_node, args.out)
    print(base)
    print("\n".join(cfg(args.platform, args.ranks_per_node)))


if __name__ == "__main__":
    main()

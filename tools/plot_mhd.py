#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plots a domex-mhd VTK snapshot: log10 density and pressure in the equator
(z = 0), and density with magnetic field lines in the noon-midnight meridian
(y = 0); axes in planet radii.

    python3 tools/plot_mhd.py results/mhd/snapshot_001500.vtk -o results/mhd.png
"""
import argparse
import sys

try:
    import matplotlib
    import numpy as np
except ImportError as missing:
    print(f"plot_mhd.py: needs {missing.name}, which {sys.executable} lacks: "
          "run /usr/bin/python3 after scripts/setup.sh, or apt-get install python3-matplotlib",
          file=sys.stderr)
    sys.exit(2)

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402


def read_vtk(path):
    """Legacy binary STRUCTURED_POINTS as written by domex-mhd: returns
    (title, dims, origin, spacing, {name: array[z, y, x] or [z, y, x, 3]})."""
    with open(path, "rb") as handle:
        data = handle.read()
    fields, at = {}, 0

    def line():
        nonlocal at
        end = data.index(b"\n", at)
        text = data[at:end].decode("ascii").strip()
        at = end + 1
        return text

    line()  # "# vtk DataFile Version 3.0"
    title = line()
    if line() != "BINARY" or line() != "DATASET STRUCTURED_POINTS":
        raise ValueError("not a binary STRUCTURED_POINTS file")
    dims = origin = spacing = None
    count = 0
    while at < len(data):
        words = line().split()
        if not words:
            continue
        key = words[0]
        if key == "DIMENSIONS":
            dims = [int(w) for w in words[1:4]]
        elif key == "ORIGIN":
            origin = [float(w) for w in words[1:4]]
        elif key == "SPACING":
            spacing = [float(w) for w in words[1:4]]
        elif key == "POINT_DATA":
            count = int(words[1])
        elif key in ("SCALARS", "VECTORS"):
            components = 1 if key == "SCALARS" else 3
            if key == "SCALARS":
                line()  # LOOKUP_TABLE default
            size = 4 * count * components
            values = np.frombuffer(data, dtype=">f4", count=count * components, offset=at)
            at += size
            shape = (dims[2], dims[1], dims[0]) + ((3,) if components == 3 else ())
            fields[words[1]] = values.reshape(shape).astype(np.float64)
        else:
            raise ValueError(f"unexpected line starting with {key!r}")
    if dims is None or not fields:
        raise ValueError("no DIMENSIONS or no data")
    return title, dims, origin, spacing, fields


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vtk", help="a snapshot_NNNNNN.vtk written by domex-mhd")
    parser.add_argument("-o", "--output", default="mhd.png", help="PNG to write")
    args = parser.parse_args()
    try:
        title, dims, origin, spacing, fields = read_vtk(args.vtk)
    except (OSError, ValueError, KeyError) as error:
        print(f"plot_mhd: cannot read {args.vtk}: {error}", file=sys.stderr)
        sys.exit(2)

    k = int(round(-origin[2] / spacing[2]))  # layer nearest z = 0
    k = min(max(k, 0), dims[2] - 1)
    x = origin[0] + spacing[0] * np.arange(dims[0])
    y = origin[1] + spacing[1] * np.arange(dims[1])
    extent = [x[0] - spacing[0] / 2, x[-1] + spacing[0] / 2, y[0] - spacing[1] / 2, y[-1] + spacing[1] / 2]
    j = int(round(-origin[1] / spacing[1]))  # layer nearest y = 0 (noon-midnight meridian)
    j = min(max(j, 0), dims[1] - 1)
    z = origin[2] + spacing[2] * np.arange(dims[2])
    meridian_extent = [extent[0], extent[1], z[0] - spacing[2] / 2, z[-1] + spacing[2] / 2]
    panels = [
        ("log10 density, equator z = 0", np.log10(fields["rho"][k]), "viridis", extent, "y"),
        ("log10 pressure, equator z = 0", np.log10(fields["p"][k]), "magma", extent, "y"),
        ("log10 density and B lines, meridian y = 0", np.log10(fields["rho"][:, j, :]), "viridis", meridian_extent,
         "z"),
    ]
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.2), constrained_layout=True)
    for axis, (name, values, cmap, box, vertical) in zip(axes, panels):
        image = axis.imshow(values, origin="lower", extent=box, cmap=cmap, aspect="equal")
        figure.colorbar(image, ax=axis, shrink=0.85)
        axis.set_title(name, fontsize=10)
        axis.set_xlabel("x (planet radii; solar wind from the left)")
        axis.set_ylabel(vertical)
    b = fields["B"][:, j, :]
    axes[2].streamplot(x, z, b[..., 0], b[..., 2], color="w", linewidth=0.5, density=1.2, arrowsize=0.5)
    axes[2].set_xlim(meridian_extent[:2])
    axes[2].set_ylim(meridian_extent[2:])
    figure.suptitle(title)
    figure.savefig(args.output, dpi=90)
    print(f"plot_mhd: wrote {args.output}")


if __name__ == "__main__":
    main()

"""What-if: an HDR adapter on PCIe gen4 against the 2008 DDR + Longbow wide-area testbed
(the ib-wan study's), RDMA write bandwidth against distance and window, swept on a Dask
LocalCluster and saved as a matplotlib figure.

    pip install ./python matplotlib "dask[distributed]"
    python examples/python/what_if_distance.py [FIGURE.png]
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from dask.distributed import Client, LocalCluster

import interlab

SPEC = {
    "experiment": {"name": "what-if-distance", "description": "RDMA write bandwidth against distance: 2008 DDR + Longbow vs HDR"},
    "pattern": {"kind": "pipelined", "op": "rdma_write", "sizes": [1048576], "warmup": 16, "iterations": 256, "service": "rc"},
    "series": [
        {"label": "DDR + Longbow (2008)", "profile": "woodcrest-infinihost-longbow"},
        {"label": "HDR what-if", "profile": "epyc-hdr-pcie4"},
    ],
}
GRID = {
    "pattern.distance_miles": [1, 10, 50, 100, 200, 400, 621, 1000, 2000],  # miles
    "pattern.window": [8, 32, 128],  # messages outstanding
}


def main(out: str = "what_if_distance.png") -> None:
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, Client(cluster) as client:
        df = interlab.sweep(SPEC, GRID, client=client, seed=1)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (series, window), g in df.groupby(["series", "pattern.window"]):
        g = g.sort_values("distance_miles")
        style = "-" if series.startswith("HDR") else "--"
        ax.plot(g["distance_miles"], g["value"], style, marker="o", ms=3, label=f"{series}, window {window}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("Distance (miles)")
    ax.set_ylabel(f"RDMA write bandwidth, 1 MiB messages ({df['unit'].iloc[0]})")
    ax.set_title("HDR vs the 2008 DDR wide-area testbed (model)")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"{len(df)} points -> {out}")
    print(df.pivot_table(index="distance_miles", columns=["series", "pattern.window"], values="value").round(0).to_string())


if __name__ == "__main__":
    main(*sys.argv[1:])

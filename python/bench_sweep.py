"""Benchmark (not a test): throughput of a sweep on a 2-worker Dask LocalCluster against
the CLI running the same points locally.

    python python/bench_sweep.py [--sizes 20] [--cli target/release/interlab]

The grid is profiles x windows x message sizes x iteration counts of a bandwidth test;
the CLI runs the same points as one spec with one [[series]] per grid point. Prints
points per second of each and their ratio (sweep / CLI).
"""

import argparse
import itertools
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import interlab
from interlab import _core

BASE = {
    "experiment": {"name": "bench-sweep", "profile": "xeon-mt25208-pcie"},
    "pattern": {"kind": "bandwidth", "op": "rdma_write", "warmup": 1},
    "series": [{"label": "p"}],
}


def grid_of(nsizes: int) -> dict:
    """2 profiles x 5 windows x `nsizes` message sizes (8 B up) x 5 iteration counts."""
    return {
        "series.profile": ["xeon-mt25208-pcie", "epyc-hdr-pcie4"],
        "pattern.window": [4, 8, 16, 32, 64],
        "pattern.sizes": [[2 ** k] for k in range(3, 3 + nsizes)],
        "pattern.iterations": [2, 3, 4, 5, 6],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, default=20, help="message sizes: 50 points each (20: 1,000 points)")
    ap.add_argument("--cli", default=str(Path(__file__).resolve().parents[1] / "target" / "release" / "interlab"))
    a = ap.parse_args()
    grid = grid_of(a.sizes)
    keys = list(grid)
    combos = list(itertools.product(*grid.values()))
    n = len(combos)

    # The CLI: one spec, one series per grid point.
    series = []
    for i, c in enumerate(combos):
        p = dict(zip(keys, c))
        series.append({"label": f"p{i}", "profile": p["series.profile"], "window": p["pattern.window"],
                       "sizes": p["pattern.sizes"], "iterations": p["pattern.iterations"]})
    spec = {**BASE, "series": series}
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "bench.toml"
        f.write_text(_core.toml_of_json(str(f), __import__("json").dumps(spec)))
        t = time.perf_counter()
        subprocess.run([a.cli, "run", str(f), "--out", str(Path(d) / "out"), "-q"], check=True, capture_output=True)
        cli_s = time.perf_counter() - t

    from dask.distributed import Client, LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
            client.run(lambda: __import__("interlab"))  # workers import the package before timing
            t = time.perf_counter()
            df = interlab.sweep(BASE, grid, client=client, progress=False)
            dask_s = time.perf_counter() - t
    t = time.perf_counter()
    interlab.sweep(BASE, grid, progress=False)
    threads_s = time.perf_counter() - t
    assert len(df) == n, (len(df), n)
    print(f"{n} points")
    print(f"CLI, one spec, local threads : {cli_s:7.2f} s  {n / cli_s:8.1f} points/s")
    print(f"sweep, 2-worker LocalCluster : {dask_s:7.2f} s  {n / dask_s:8.1f} points/s")
    print(f"sweep, local threads         : {threads_s:7.2f} s  {n / threads_s:8.1f} points/s")
    print(f"ratio LocalCluster / CLI     : {cli_s / dask_s:.2f}")


if __name__ == "__main__":
    main()

"""Tests of the Python package: DataFrames equal to the CLI's files, errors with file and
key, profiles, sweeps on threads and on Dask giving the same DataFrame."""

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pandas as pd
import pytest

import interlab

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def cli() -> str:
    exe = os.environ.get("INTERLAB_BIN") or str(ROOT / "target" / "release" / "interlab")
    if not Path(exe).exists():
        pytest.skip(f"no CLI at {exe} (cargo build --release, or set INTERLAB_BIN)")
    return exe


SPEC = {
    "experiment": {"name": "py-small", "profile": "xeon-mt25208-pcie"},
    "pattern": {"kind": "latency", "op": "send", "sizes": [8, 1024], "iterations": 20, "warmup": 2},
    "series": [{"label": "rc"}, {"label": "uc", "service": "uc"}],
}

SPEC_TOML = """\
[experiment]
name = "py-small"
profile = "xeon-mt25208-pcie"

[pattern]
kind = "bandwidth"
op = "rdma_write"
window = 16
warmup = 2
iterations = 4
sizes = [64, 4096, 65536]

[[series]]
label = "SDR"

[[series]]
label = "HDR"
profile = "epyc-hdr-pcie4"
"""


@pytest.fixture
def spec_file(tmp_path):
    p = tmp_path / "small.toml"
    p.write_text(SPEC_TOML)
    return p


def test_run_dict_has_the_columns_and_units_of_results_csv():
    df = interlab.run(SPEC)
    assert list(df.columns) == interlab.CSV_COLUMNS
    assert len(df) == 4
    assert set(df["unit"]) == {"us"} and set(df["metric"]) == {"latency_us"}
    assert list(df["size_bytes"]) == [8, 1024, 8, 1024]
    assert list(df["series"]) == ["rc", "rc", "uc", "uc"]
    assert (df["value"] > 0).all()
    assert set(df["spec"]) == {"<dict>"}


def test_run_path_equals_the_cli_results_csv(spec_file, tmp_path):
    df = interlab.run(spec_file)
    out = tmp_path / "out"
    subprocess.run([cli(), "run", str(spec_file), "--out", str(out), "-q"], check=True, capture_output=True)
    pd.testing.assert_frame_equal(df, pd.read_csv(out / "results.csv"))
    assert set(df["unit"]) == {"MB/s"} and set(df["metric"]) == {"bandwidth_MBps"}
    assert df["spec"][0] == str(spec_file)


def test_dict_and_path_give_the_same_numbers(spec_file):
    a = interlab.run(spec_file)
    b = interlab.run(tomllib.loads(SPEC_TOML))
    pd.testing.assert_frame_equal(a.drop(columns="spec"), b.drop(columns="spec"))


def test_overrides_set_spec_keys(spec_file):
    df = interlab.run(spec_file, pattern__window=4, **{"series.profile": "epyc-hdr-pcie4"}, seed=7)
    assert set(df["window"]) == {4}
    assert set(df["profile"]) == {"epyc-hdr-pcie4"}
    assert set(df["seed"]) == {7}


def test_a_bad_key_raises_with_file_and_key(tmp_path):
    with pytest.raises(interlab.SpecError) as e:
        interlab.run({**SPEC, "series": [{"lable": "x"}]})
    assert e.value.file == "<dict>" and e.value.key == "series[0].lable"
    assert "did you mean `label`" in str(e.value)
    bad = tmp_path / "bad.toml"
    bad.write_text(SPEC_TOML.replace("window = 16", "window = 0"))
    with pytest.raises(interlab.SpecError) as e:
        interlab.run(bad)
    assert e.value.file == str(bad) and e.value.key.endswith("window")
    # The CLI says the same.
    r = subprocess.run([cli(), "run", str(bad), "--out", str(tmp_path / "o"), "-q"], capture_output=True, text=True)
    assert r.returncode == 2 and str(e.value) in r.stderr


def test_unreadable_and_wrong_engine_raise(tmp_path):
    with pytest.raises(interlab.UsageError, match="cannot read spec"):
        interlab.run(tmp_path / "missing.toml")
    with pytest.raises(interlab.UsageError, match="engine `nope`"):
        interlab.run(SPEC, engine="nope")
    with pytest.raises(interlab.UsageError, match="needs daemons"):
        interlab.run(SPEC, engine="live")
    assert issubclass(interlab.SpecError, interlab.InterlabError)


def test_check():
    assert interlab.check(SPEC) == ("py-small", 2, 4)


def test_profiles_and_provenance(tmp_path):
    ps = interlab.profiles()
    assert list(ps.columns) == ["id", "description"] and "epyc-hdr-pcie4" in set(ps["id"])
    p = interlab.profile("epyc-hdr-pcie4")
    assert p.id == "epyc-hdr-pcie4" and p.description
    row = p.parameters.set_index(["section", "parameter"]).loc[("bus", "read_latency_ns")]
    assert row["value"] == 500 and row["unit"] == "ns" and row["src"].startswith("V")
    assert p.parameters["src"].notna().sum() > 20
    bad = tmp_path / "bad-profile.toml"
    bad.write_text((ROOT / "profiles" / "epyc-hdr-pcie4.toml").read_text().replace("[bus]", "[bus]\nbogus_ns = 1", 1))
    with pytest.raises(interlab.SpecError) as e:
        interlab.profile(bad)
    assert e.value.file == str(bad) and "bogus_ns" in e.value.key


def test_reproduce_equals_the_cli(tmp_path):
    rep = interlab.reproduce("sdp")
    out = tmp_path / "cli"
    subprocess.run([cli(), "reproduce", "--study", "sdp", "--out", str(out), "-q"], check=True, capture_output=True)
    pd.testing.assert_frame_equal(rep.records, pd.read_csv(out / "results.csv"))
    pd.testing.assert_frame_equal(rep.claims, interlab.claims_frame(out / "claims.json"))
    assert set(rep.claims["status"]) >= {"not_run"}
    assert (rep.claims[rep.claims["paper"] == "sdp"]["status"] != "not_run").all()
    w = rep.write(tmp_path / "copy")
    assert (w / "report.html").exists() and (w / "results.csv").exists()
    with pytest.raises(interlab.UsageError, match="unknown study"):
        interlab.reproduce(["nope"])


GRID = {"series.profile": ["xeon-mt25208-pcie", "epyc-hdr-pcie4"], "pattern.window": [4, 16], "pattern.sizes": [[64], [4096]]}


def test_sweep_on_threads():
    df = interlab.sweep(SPEC_TOML_DICT(), GRID, progress=False)
    assert len(df) == 8 * 2  # 8 grid points, 2 series of one size each
    assert list(df.columns) == ["point"] + interlab.CSV_COLUMNS + list(GRID)
    assert (df["profile"] == df["series.profile"]).all() and (df["window"] == df["pattern.window"]).all()
    assert df.attrs["failures"] == []
    # The seeds are per point and do not depend on the batches.
    assert df.groupby("point")["seed"].nunique().eq(1).all() and df["seed"].nunique() == 8
    one = interlab.sweep(SPEC_TOML_DICT(), GRID, progress=False, batch_size=1)
    pd.testing.assert_frame_equal(df, one)
    # A point equals the same spec run alone with its seed.
    p = df[df["point"] == 5]
    params = {k: p[k].iloc[0] for k in GRID}
    alone = interlab.run(SPEC_TOML_DICT(), seed=interlab.point_seed(1, params), **params)
    pd.testing.assert_frame_equal(p.drop(columns=["point", *GRID]).reset_index(drop=True), alone)


def SPEC_TOML_DICT():
    return tomllib.loads(SPEC_TOML)


def test_a_failing_point_is_reported_and_the_rest_kept():
    grid = {"series.profile": ["xeon-mt25208-pcie", "no-such-profile", "epyc-hdr-pcie4"], "pattern.sizes": [[64]]}
    with pytest.warns(interlab.SweepWarning, match="1 of 3 sweep points failed"):
        df = interlab.sweep(SPEC_TOML_DICT(), grid, progress=False)
    assert sorted(df["point"].unique()) == [0, 2]
    (f,) = df.attrs["failures"]
    assert f["point"] == 1 and f["series.profile"] == "no-such-profile" and f["kind"] == "spec"
    assert "series[0].profile" in f["error"]
    with pytest.raises(interlab.SpecError, match="no-such-profile"):
        interlab.sweep(SPEC_TOML_DICT(), grid, progress=False, errors="raise")


def test_sweep_on_dask_equals_threads():
    distributed = pytest.importorskip("distributed")
    local = interlab.sweep(SPEC_TOML_DICT(), GRID, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.Client(processes=False, dashboard_address=None) as client:
            inproc = interlab.sweep(SPEC_TOML_DICT(), GRID, client=client, progress=False, batch_size=3)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            with distributed.Client(cluster) as client:
                procs = interlab.sweep(SPEC_TOML_DICT(), GRID, client=client, progress=True)
    pd.testing.assert_frame_equal(local, inproc)
    pd.testing.assert_frame_equal(local, procs)


def test_live_and_both_against_a_loopback_daemon():
    import socket
    import time

    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    daemon = subprocess.Popen([cli(), "serve", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        spec = ROOT / "examples" / "tcp-latency-both.toml"
        small = {"pattern.sizes": [1, 64], "pattern.iterations": 50, "pattern.warmup": 5}
        df = interlab.live(spec, f"127.0.0.1:{port}", **small)
        assert list(df.columns) == interlab.CSV_COLUMNS
        assert set(df["engine"]) == {"live"} and list(df["size_bytes"]) == [1, 64]
        assert set(df["unit"]) == {"us"} and (df["value"] > 0).all()
        both = interlab.run(spec, engine="both", peers=[f"127.0.0.1:{port}"], **small)
        assert list(both["engine"]) == ["model", "model", "live", "live"]
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


def test_sweep_equals_four_cli_shards_merged(spec_file, tmp_path):
    """The same points swept from Python and run as 4 CLI shards (a job array), merged."""
    exe = cli()
    dirs = []
    for i in range(1, 5):
        d = tmp_path / f"shard{i}"
        subprocess.run([exe, "run", str(spec_file), "--points", f"{i}/4", "--out", str(d), "-q"], check=True, capture_output=True)
        dirs.append(str(d))
    merged = tmp_path / "merged"
    subprocess.run([exe, "merge", *dirs, "--out", str(merged)], check=True, capture_output=True)
    full = tmp_path / "full"
    subprocess.run([exe, "run", str(spec_file), "--out", str(full), "-q"], check=True, capture_output=True)
    assert (merged / "results.jsonl").read_bytes() == (full / "results.jsonl").read_bytes()
    shards = pd.read_csv(merged / "results.csv", keep_default_na=False)
    sweep = interlab.sweep(SPEC_TOML_DICT(), {"pattern.sizes": [[64], [4096], [65536]]}, progress=False)
    # The sweep's points carry their own seeds and spec source; everything measured agrees.
    keys = ["series", "size_bytes"]
    cols = [c for c in shards.columns if c not in ("seed", "spec")]
    a = sweep[cols].sort_values(keys).reset_index(drop=True)
    b = shards[cols].sort_values(keys).reset_index(drop=True)
    assert len(a) == len(b) == 6
    for c in ["series", "size_bytes", "metric", "unit", "events"]:
        assert list(a[c].astype(str)) == list(b[c].astype(str)), c
    assert (a["value"] - b["value"]).abs().max() == 0.0

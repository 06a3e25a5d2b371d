"""interlab from Python: experiment specs to pandas DataFrames.

The model runs in Rust (the same code as the ``interlab`` CLI); every DataFrame here is
read from exactly the text the CLI writes, so its columns, values and units are those of
``results.csv`` / ``claims.csv``:

* ``value`` is in ``unit`` (``us`` for latency and connection set-up, ``MB/s`` = 10^6
  bytes per second for bandwidth); ``metric`` names it (``latency_us``,
  ``bandwidth_MBps``, ``connect_us``);
* ``size_bytes`` is the message size in bytes, ``distance_miles`` in miles,
  ``server_cpu_percent`` in percent, ``summary_*`` the latency summary in ``unit``;
* ``x_name`` / ``x_value`` name the swept variable of distance, client and process sweeps.

Functions: :func:`run`, :func:`sweep`, :func:`reproduce`, :func:`profiles`,
:func:`profile`. Errors are :class:`SpecError` (with ``.file``, ``.key``, ``.message``,
the CLI's words), :class:`UsageError` and :class:`RunError`, all :class:`InterlabError`.
"""

from __future__ import annotations

import copy
import hashlib
import io
import itertools
import json
import math
import os
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

from . import _core
from ._core import InterlabError, RunError, SpecError, UsageError

__version__: str = _core.VERSION

__all__ = [
    "run",
    "live",
    "sweep",
    "reproduce",
    "Reproduction",
    "profiles",
    "profile",
    "Profile",
    "InterlabError",
    "SpecError",
    "UsageError",
    "RunError",
    "SweepWarning",
    "LiveWarning",
    "CSV_COLUMNS",
    "check",
    "claims_frame",
    "point_seed",
    "set_key",
]

#: A spec: a path to a TOML file, or a dict in the same schema
#: (``{"experiment": {...}, "pattern": {...}, "transport": {...}, "series": [{...}]}``).
SpecLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]

#: The columns of results.csv, in order.
CSV_COLUMNS: List[str] = [
    "schema", "version", "engine", "experiment", "series", "profile", "pattern", "op", "transport", "ports",
    "processes", "size_bytes", "metric", "value", "unit", "seed", "warmup", "iterations", "window", "events",
    "spec", "distance_miles", "clients", "server_cpu_percent", "x_name", "x_value", "summary_count",
    "summary_mean", "summary_min", "summary_max", "summary_stddev", "summary_p50", "summary_p90",
    "summary_p99", "summary_p999",
]


class LiveWarning(UserWarning):
    """Some live points failed; the DataFrame holds the others
    (``df.attrs["failures"]`` lists the errors)."""


class SweepWarning(UserWarning):
    """Some points of a sweep failed; the DataFrame holds the others
    (``df.attrs["failures"]`` lists the failed ones with their parameters)."""


# ---------------------------------------------------------------------------------------
# Specs


@dataclass
class _Spec:
    file: str  # as errors and the `spec` column name it
    base: Optional[str]  # directory relative profile paths resolve against
    text: Optional[str]  # TOML text (a path spec), or None
    table: Optional[Dict[str, Any]]  # the spec as a dict (a dict spec), or None

    def as_dict(self) -> Dict[str, Any]:
        if self.table is not None:
            return copy.deepcopy(self.table)
        try:
            import tomllib  # type: ignore[import-not-found]
        except ImportError:  # Python < 3.11
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            return tomllib.loads(self.text or "")
        except Exception:
            # Let the Rust parser name the file and line as the CLI does.
            _core.check(self.file, self.text or "", self.base)
            raise


def _load(spec: SpecLike) -> _Spec:
    if isinstance(spec, Mapping):
        return _Spec(file="<dict>", base=None, text=None, table=copy.deepcopy(dict(spec)))
    if isinstance(spec, (str, os.PathLike)):
        path = os.fspath(spec)
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise UsageError(f"{path}: cannot read spec: {e.strerror or e}") from None
        parent = os.path.dirname(path)
        return _Spec(file=path, base=parent or None, text=text, table=None)
    raise TypeError(f"spec: expected a path or a dict, got {type(spec).__name__}")


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):  # numpy scalars
        return o.item()
    if hasattr(o, "tolist"):  # numpy arrays
        return o.tolist()
    if isinstance(o, os.PathLike):
        return os.fspath(o)
    raise TypeError(f"{o!r} ({type(o).__name__}) cannot be a spec value")


def _dotted(key: str) -> str:
    """`pattern__window` (a keyword argument) -> `pattern.window`; a bare key is in [experiment]."""
    key = key.replace("__", ".")
    return key if "." in key else f"experiment.{key}"


def set_key(table: Dict[str, Any], key: str, value: Any) -> None:
    """Sets dotted spec key `key` (``pattern.distance_miles``, ``series.profile``,
    ``experiment.seed``) in spec dict `table`, creating tables as needed. Where a part
    names an array of tables (``series``), the rest is set in every element; a bare key
    (no dot) is in ``[experiment]``."""
    parts = _dotted(key).split(".")
    _set(table, parts, value, key)


def _set(t: Any, parts: List[str], value: Any, key: str) -> None:
    head, rest = parts[0], parts[1:]
    if not rest:
        t[head] = value
        return
    nxt = t.get(head)
    if nxt is None:
        if head == "series":
            nxt = t[head] = [{}]
        else:
            nxt = t[head] = {}
    if isinstance(nxt, list):
        for item in nxt:
            if not isinstance(item, dict):
                raise UsageError(f"{key}: `{head}` is not an array of tables")
            _set(item, rest, value, key)
    elif isinstance(nxt, dict):
        _set(nxt, rest, value, key)
    else:
        raise UsageError(f"{key}: `{head}` is a value, not a table")


def _csv_frame(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


# ---------------------------------------------------------------------------------------
# run


def _spec_text(s: _Spec, overrides: Mapping[str, Any]) -> str:
    if s.table is None and not overrides:
        return s.text or ""
    d = s.as_dict()
    for k, v in overrides.items():
        set_key(d, k, v)
    return _core.toml_of_json(s.file, json.dumps(d, default=_json_default))


def run(
    spec: SpecLike,
    engine: str = "model",
    *,
    peers: Optional[Sequence[str]] = None,
    auth_token: Optional[str] = None,
    connect_timeout: float = 5.0,
    **overrides: Any,
) -> pd.DataFrame:
    """Runs an experiment spec; one row per point, the columns of results.csv.

    Parameters
    ----------
    spec:
        A path to a TOML spec, or a dict in the same schema.
    engine:
        ``"model"`` (the discrete-event model, whatever the spec's ``engine``), ``"live"``
        (against ``interlab serve`` daemons) or ``"both"`` (model rows, then live rows;
        ``engine`` column tells them apart), as ``interlab run --engine``.
    peers:
        Live: daemons, ``"HOST[:PORT]"`` (default port 7400); default: the spec's
        ``[live] peers``.
    auth_token:
        Live: the daemons' shared secret (default: ``INTERLAB_AUTH_TOKEN``).
    connect_timeout:
        Live: seconds to wait for a daemon.
    **overrides:
        Spec keys to set before running: ``pattern__window=16`` or
        ``**{"pattern.distance_miles": 100}``; a bare name is an ``[experiment]`` key
        (``seed=3``); ``series.KEY`` sets KEY in every ``[[series]]``.

    Returns
    -------
    pandas.DataFrame
        As ``interlab run SPEC --out DIR`` writes ``DIR/results.csv``: ``value`` in
        ``unit`` (us or MB/s), ``size_bytes`` in bytes, ``distance_miles`` in miles,
        ``server_cpu_percent`` in percent. Live points that failed are left out, warned
        about (:class:`LiveWarning`) and listed in ``df.attrs["failures"]``.

    Raises
    ------
    SpecError
        A bad key or value, with ``.file`` and ``.key`` (``str(e)`` is the CLI's message).
    UsageError
        An unknown engine, an unreadable file, no daemons, a spec live cannot run.
    RunError
        The model could not run a point, or a daemon could not be reached.
    """
    s = _load(spec)
    text = _spec_text(s, overrides)
    if engine == "model":
        return _csv_frame(_core.run_model(s.file, text, s.base))
    csv, failed = _core.run_engine(s.file, text, s.base, engine, list(peers or []), auth_token, float(connect_timeout))
    df = _csv_frame(csv)
    df.attrs["failures"] = list(failed)
    if failed:
        warnings.warn(f"{len(failed)} live point(s) failed (left out):\n  " + "\n  ".join(failed), LiveWarning, stacklevel=2)
    return df


def live(spec: SpecLike, peer: Optional[Union[str, Sequence[str]]] = None, *, both: bool = False, **kwargs: Any) -> pd.DataFrame:
    """Runs `spec` live against ``interlab serve`` daemons: :func:`run` with
    ``engine="live"`` (``"both"`` with `both`), `peer` one ``"HOST[:PORT]"`` or a list
    (default: the spec's ``[live] peers``). Other keyword arguments as :func:`run`."""
    peers = [peer] if isinstance(peer, str) else list(peer or [])
    return run(spec, engine="both" if both else "live", peers=peers, **kwargs)


def check(spec: SpecLike, **overrides: Any) -> Tuple[str, int, int]:
    """Checks a spec without running it: (experiment name, series, points). Raises
    :class:`SpecError` as :func:`run` would."""
    s = _load(spec)
    if s.table is None and not overrides:
        return _core.check(s.file, s.text or "", s.base)
    d = s.as_dict()
    for k, v in overrides.items():
        set_key(d, k, v)
    return _core.check(s.file, _core.toml_of_json(s.file, json.dumps(d, default=_json_default)), s.base)


# ---------------------------------------------------------------------------------------
# sweep


def point_seed(seed: int, params: Mapping[str, Any]) -> int:
    """The seed of one sweep point: a hash of the sweep's `seed` and the point's parameters,
    so a point has the same seed (and the same numbers) however the sweep is split, ordered
    or scheduled. Below 2^62."""
    key = json.dumps([seed, sorted(params.items())], default=_json_default, sort_keys=True)
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little") >> 2


def _run_batch(batch: Sequence[Tuple[int, str, str, Optional[str]]]) -> List[Tuple[int, bool, str, str]]:
    """One task: runs the points of `batch` [(index, file, spec JSON, base)] in parallel;
    [(index, ok, results.csv text or error message, error kind)]. Module-level so that
    Dask can ship it to workers."""
    out = _core.run_batch([(f, j, b) for _, f, j, b in batch])
    return [(i, ok, text, kind) for (i, _, _, _), (ok, text, kind) in zip(batch, out)]


class _Progress:
    def __init__(self, total: int, show: bool, what: str) -> None:
        self.total, self.done, self.show, self.bar = total, 0, show, None
        if show:
            try:
                from tqdm.auto import tqdm  # type: ignore[import-not-found]

                self.bar = tqdm(total=total, desc=what, unit="pt")
            except ImportError:
                self.what = what
                self._draw()

    def _draw(self) -> None:
        sys.stderr.write(f"\r{self.what}: {self.done}/{self.total} points")
        sys.stderr.flush()

    def update(self, n: int) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif self.show:
            self._draw()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.show:
            sys.stderr.write("\n")


def sweep(
    spec: SpecLike,
    grid: Mapping[str, Iterable[Any]],
    client: Any = None,
    seed: int = 1,
    batch_size: Optional[int] = None,
    progress: bool = True,
    errors: str = "report",
) -> pd.DataFrame:
    """Runs `spec` at every point of the cartesian product of `grid`.

    Parameters
    ----------
    spec:
        A path or a dict (see :func:`run`); each grid point runs all of its points.
    grid:
        Spec keys to their values, e.g. ``{"series.profile": ["xeon-mt25208-pcie",
        "epyc-hdr-pcie4"], "pattern.distance_miles": [0, 100, 1000], "pattern.window":
        [16, 64]}``: the product is run (``series.KEY`` is set in every ``[[series]]``; a
        bare key is an ``[experiment]`` key).
    client:
        ``None``: run on this machine's threads. A ``dask.distributed.Client``: one task
        per batch of grid points, gathered into one DataFrame.
    seed:
        The sweep's seed; every point's ``experiment.seed`` is :func:`point_seed` of it and
        the point's parameters, so the numbers do not depend on workers or batches (a grid
        key ``experiment.seed`` overrides it).
    batch_size:
        Grid points per task (default: about four tasks per worker or core).
    progress:
        Show progress (tqdm when installed, else a line on standard error).
    errors:
        ``"report"``: failed points are left out, listed in ``df.attrs["failures"]`` (one
        dict per point: ``point``, the grid keys, ``error``, ``kind``) and warned about
        (:class:`SweepWarning`); ``"raise"``: the first failure raises.

    Returns
    -------
    pandas.DataFrame
        The rows of results.csv of every grid point (units as in :func:`run`), in grid
        order, with a ``point`` column (the grid point's index) and one column per grid key.
    """
    if errors not in ("report", "raise"):
        raise ValueError(f"errors: expected 'report' or 'raise', got {errors!r}")
    s = _load(spec)
    base = s.as_dict()
    keys = list(grid)
    values = [list(grid[k]) for k in keys]
    for k, v in zip(keys, values):
        if not v:
            raise ValueError(f"grid[{k!r}]: no values")
    combos = list(itertools.product(*values))
    # Workers may run elsewhere: relative profile paths resolve against an absolute base.
    base_dir = os.path.abspath(s.base or ".")
    jobs: List[Tuple[int, str, str, Optional[str]]] = []
    params: List[Dict[str, Any]] = []
    for i, combo in enumerate(combos):
        p = dict(zip(keys, combo))
        d = copy.deepcopy(base)
        set_key(d, "experiment.seed", point_seed(seed, p))
        for k, v in p.items():
            set_key(d, k, v)
        jobs.append((i, s.file, json.dumps(d, default=_json_default), base_dir))
        params.append(p)
    n = len(jobs)
    if client is not None:
        workers = max(1, sum(client.nthreads().values()))
    else:
        workers = os.cpu_count() or 1
    if batch_size is None:
        batch_size = max(1, math.ceil(n / (4 * workers)))
    batches = [jobs[i : i + batch_size] for i in range(0, n, batch_size)]
    bar = _Progress(n, progress, "interlab sweep")
    results: Dict[int, Tuple[bool, str, str]] = {}

    def collect(finished: Any) -> None:
        """Takes the batches' results as they finish (threads or Dask futures alike)."""
        for f in finished:
            out = f.result()
            for i, ok, text, kind in out:
                results[i] = (ok, text, kind)
            bar.update(len(out))

    try:
        if client is None:
            from concurrent.futures import ThreadPoolExecutor, as_completed

            with ThreadPoolExecutor(max_workers=workers) as pool:
                collect(as_completed([pool.submit(_run_batch, b) for b in batches]))
        else:
            from distributed import as_completed as dask_as_completed  # type: ignore[import-not-found]

            collect(dask_as_completed(client.map(_run_batch, batches, pure=False)))
    finally:
        bar.close()
    rows: List[str] = []
    counts: List[int] = []
    failures: List[Dict[str, Any]] = []
    header = ",".join(CSV_COLUMNS)
    for i in range(n):
        ok, text, kind = results[i]
        if ok:
            lines = text.splitlines()[1:]
            rows.extend(lines)
            counts.append(len(lines))
        else:
            if errors == "raise":
                exc = {"spec": SpecError, "usage": UsageError}.get(kind, RunError)
                raise exc(f"sweep point {i} {params[i]}: {text}")
            failures.append({"point": i, **params[i], "error": text, "kind": kind})
            counts.append(0)
    df = _csv_frame("\n".join([header] + rows) + "\n")
    point_col = [i for i, c in enumerate(counts) for _ in range(c)]
    df.insert(0, "point", point_col)
    for k in keys:
        df[k] = pd.Series([params[i][k] for i in point_col], index=df.index, dtype=object).infer_objects()
    df.attrs["failures"] = failures
    if failures:
        lines = "\n".join(f"  point {f['point']} {params[f['point']]}: {f['error']}" for f in failures[:10])
        more = f"\n  ... and {len(failures) - 10} more" if len(failures) > 10 else ""
        warnings.warn(
            f"{len(failures)} of {n} sweep points failed (left out; df.attrs['failures'] lists them):\n{lines}{more}",
            SweepWarning,
            stacklevel=2,
        )
    return df


# ---------------------------------------------------------------------------------------
# reproduce


@dataclass
class Reproduction:
    """What :func:`reproduce` produced.

    ``records``: results.csv (one row per point of every figure, in the unit the figure
    shows: ``value`` in ``unit``). ``claims``: claims.json's claims (see :func:`claims_frame`). ``dir``: the directory
    holding every file of the report (report.html, SVGs, claims.json, results.jsonl).
    """

    records: pd.DataFrame
    claims: pd.DataFrame
    dir: Path
    _tmp: Any = field(default=None, repr=False)

    def write(self, dir: Union[str, "os.PathLike[str]"]) -> Path:
        """Copies every file of the report into directory `dir` (created if needed), as
        ``interlab reproduce --out DIR`` writes them; returns the path."""
        dest = Path(dir)
        shutil.copytree(self.dir, dest, dirs_exist_ok=True)
        return dest


def reproduce(studies: Optional[Union[str, Sequence[str]]] = None) -> Reproduction:
    """Reproduces the published studies in the model (``interlab reproduce``).

    `studies`: a study id or a list of them (``"pcie"``, ``"ib-wan"``, ``"sdp"``,
    ``"vpi"``, ``"ipoib-offload"``); ``None`` runs all. Raises :class:`UsageError` for an
    unknown study (naming the known ones).
    """
    if studies is None:
        ids: List[str] = []
    elif isinstance(studies, str):
        ids = [studies]
    else:
        ids = list(studies)
    tmp = tempfile.TemporaryDirectory(prefix="interlab-reproduce-")
    _core.reproduce(ids, tmp.name)
    d = Path(tmp.name)
    return Reproduction(records=pd.read_csv(d / "results.csv"), claims=claims_frame(d / "claims.json"), dir=d, _tmp=tmp)


def claims_frame(path: Union[str, "os.PathLike[str]"]) -> pd.DataFrame:
    """The claims of a claims.json (as ``interlab reproduce`` writes it) as a DataFrame: one
    row per claim with ``id``, ``paper``, ``figure``, ``description``, ``unit``, ``value``
    (the model's, in ``unit``), ``published``, ``tolerance`` (a fraction), ``deviation``
    (a fraction), ``status`` and ``note``."""
    with open(path) as f:
        doc = json.load(f)
    cols = ["id", "paper", "figure", "description", "unit", "value", "published", "tolerance", "deviation", "status", "note"]
    df = pd.DataFrame(doc["claims"])
    return df[[c for c in cols if c in df.columns] + [c for c in df.columns if c not in cols]]


# ---------------------------------------------------------------------------------------
# profiles

_UNITS = ("ns", "us", "ms", "s", "bytes", "gts", "gbps", "mbps", "percent", "miles", "hz", "mhz", "ghz", "bits", "fraction")


@dataclass
class Profile:
    """A testbed profile. ``parameters``: one row per parameter with ``section``,
    ``parameter``, ``value``, ``unit`` (from the name's suffix: ``read_latency_ns`` is in
    ns; empty when the name has none) and ``src`` (its provenance: V verified, D derived,
    R reasoned estimate, with the reference). ``tables``: the profile as a dict."""

    id: str
    description: str
    parameters: pd.DataFrame
    tables: Dict[str, Any]


def profiles() -> pd.DataFrame:
    """The built-in profiles: columns ``id`` and ``description``."""
    return pd.DataFrame(_core.profiles(), columns=["id", "description"])


def _flatten(prefix: str, t: Mapping[str, Any], rows: List[Dict[str, Any]]) -> None:
    for k, v in t.items():
        if isinstance(v, Mapping) and "value" in v and not any(isinstance(x, Mapping) for x in v.values()):
            unit = k.rsplit("_", 1)[-1] if "_" in k and k.rsplit("_", 1)[-1] in _UNITS else ""
            rows.append({"section": prefix, "parameter": k, "value": v["value"], "unit": unit, "src": v.get("src")})
        elif isinstance(v, Mapping):
            _flatten(f"{prefix}.{k}" if prefix else k, v, rows)
        else:
            unit = k.rsplit("_", 1)[-1] if "_" in k and k.rsplit("_", 1)[-1] in _UNITS else ""
            rows.append({"section": prefix, "parameter": k, "value": v, "unit": unit, "src": None})


def profile(id_or_path: Union[str, "os.PathLike[str]"]) -> Profile:
    """A built-in profile by id, or a profile file by path (validated as
    ``interlab profiles FILE`` does: a bad one raises :class:`SpecError` with file and
    key); every parameter with its provenance."""
    pid, desc, tables_json = _core.profile(os.fspath(id_or_path))
    tables = json.loads(tables_json)
    rows: List[Dict[str, Any]] = []
    _flatten("", tables, rows)
    df = pd.DataFrame(rows, columns=["section", "parameter", "value", "unit", "src"])
    return Profile(id=pid, description=desc, parameters=df, tables=tables)

#!/usr/bin/env bash
# interlab's live MPI ping-pong against `python3 -m mpi4py.bench pingpong`, in the same run,
# as ratios: latency = interlab / mpi4py (target <= 1.05), ping-pong bandwidth (size / one-way
# latency) = interlab / mpi4py (target >= 0.95). Both run 2 ranks under the same mpirun
# options on the same library, alternately (A B A B ...), ROUNDS times; the best of each
# (lowest mean latency per size) is compared, so a burst of load on a shared machine hits
# neither side alone. Both report the mean one-way latency (round trip / 2) over the same
# counts: 100 + 2000 round trips up to 16 KiB, 10 + 200 up to 1 MiB, then 5 + 40 (mpi4py's
# size classes, shorter than its defaults so that a round fits between bursts of load).
#
#   scripts/bench-mpi-vs-mpi4py.sh [ROUNDS]        (default 5)
#
# Needs Open MPI (apt-get install openmpi-bin libopenmpi-dev) and mpi4py 4 or later (Debian's
# python3-mpi4py 3.1 has no `bench pingpong`): when `python3 -m mpi4py.bench pingpong` is not
# available, mpi4py is installed from PyPI into a virtual environment at
# ${INTERLAB_MPI4PY_VENV:-$HOME/.cache/interlab-mpi4py} (its wheels load the system's Open MPI).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
case "$rounds" in ''|*[!0-9]*) echo "ROUNDS must be a number (1 to 20), got '$rounds'" >&2; exit 2;; esac
[ "$rounds" -ge 1 ] && [ "$rounds" -le 20 ] || { echo "ROUNDS must be 1 to 20" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "mpirun not found: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 1; }
bin=./target/release/interlab
[ -x "$bin" ] || cargo build --release -q -p interlab-cli
mpirun_opts=(-np 2 --oversubscribe)
[ "$(id -u)" = 0 ] && mpirun_opts+=(--allow-run-as-root)

py=python3
has_pingpong() { "$1" -c 'import mpi4py.bench as b, sys; sys.exit(0 if hasattr(b, "pingpong") else 1)' 2>/dev/null; }
if ! has_pingpong "$py"; then
  venv=${INTERLAB_MPI4PY_VENV:-$HOME/.cache/interlab-mpi4py}
  if ! has_pingpong "$venv/bin/python"; then
    echo "installing mpi4py (>= 4, for bench pingpong) into $venv" >&2
    base=python3; [ -x /usr/bin/python3 ] && base=/usr/bin/python3
    "$base" -m venv "$venv" >&2 && "$venv/bin/pip" install -q "mpi4py>=4" >&2 \
      || { echo "could not install mpi4py >= 4 (needs python3-venv and PyPI)" >&2; exit 1; }
  fi
  py=$venv/bin/python
fi

tmp=$(mktemp -d /tmp/interlab-bench-mpi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# interlab with mpi4py's counts: one run per count class.
run_interlab() {
  local out=$1
  : >"$out"
  timeout 600 mpirun "${mpirun_opts[@]}" "$bin" mpi latency --sizes 1..16K --warmup 100 --iterations 2000 --json "$tmp/a.jsonl" --quiet >/dev/null
  timeout 600 mpirun "${mpirun_opts[@]}" "$bin" mpi latency --sizes 32K..1M --warmup 10 --iterations 200 --json "$tmp/b.jsonl" --quiet >/dev/null
  timeout 600 mpirun "${mpirun_opts[@]}" "$bin" mpi latency --sizes 2M..4M --warmup 5 --iterations 40 --json "$tmp/c.jsonl" --quiet >/dev/null
  cat "$tmp/a.jsonl" "$tmp/b.jsonl" "$tmp/c.jsonl" >"$out"
}
run_mpi4py() {
  timeout 600 mpirun "${mpirun_opts[@]}" "$py" -m mpi4py.bench pingpong -m 1 -n 4194304 -a none -s 100 -l 2000 \
    --skip-large 10 --loop-large 200 --skip-huge 5 --loop-huge 40 --no-header >"$1"
}
for r in $(seq 1 "$rounds"); do
  echo "round $r/$rounds" >&2
  run_interlab "$tmp/interlab.$r"
  run_mpi4py "$tmp/mpi4py.$r"
done

python3 - "$tmp" "$rounds" "$("$py" -c 'import mpi4py; print(mpi4py.__version__)')" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)" <<'EOF'
import json, math, sys
tmp, rounds, version, load, cpus = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
il, mp = {}, {}
for r in range(1, rounds + 1):
    for line in open(f"{tmp}/interlab.{r}"):
        rec = json.loads(line)
        s, v = rec["size_bytes"], rec["value"]   # mean one-way latency, us
        il[s] = min(il.get(s, math.inf), v)
    for line in open(f"{tmp}/mpi4py.{r}"):
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        s, t = int(f[0]), float(f[3]) * 1e6      # size, mean one-way time (s -> us)
        mp[s] = min(mp.get(s, math.inf), t)
print(f"interlab mpi latency vs mpi4py {version} bench pingpong; 2 ranks, best of {rounds} alternating runs; load average {load} on {cpus} CPUs")
print(f"{'bytes':>9} {'interlab us':>12} {'mpi4py us':>12} {'lat ratio':>10} {'interlab MB/s':>14} {'mpi4py MB/s':>12} {'bw ratio':>9}")
lat_r, bw_r = [], []
for s in sorted(set(il) & set(mp)):
    a, b = il[s], mp[s]
    print(f"{s:>9} {a:>12.3f} {b:>12.3f} {a / b:>10.3f} {s / a:>14.1f} {s / b:>12.1f} {b / a:>9.3f}")
    (lat_r if s <= 8192 else bw_r).append(a / b)
g = lambda v: math.exp(sum(math.log(x) for x in v) / len(v))
lat, bw = g(lat_r), 1 / g(bw_r)
print(f"latency ratio, geometric mean over 1 B..8 KiB: {lat:.3f}x (target <= 1.05): {'met' if lat <= 1.05 else 'MISSED'}")
print(f"bandwidth ratio, geometric mean over 16 KiB..4 MiB: {bw:.3f}x (target >= 0.95): {'met' if bw >= 0.95 else 'MISSED'}")
EOF

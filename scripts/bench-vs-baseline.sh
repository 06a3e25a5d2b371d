#!/usr/bin/env bash
# Model speed against a baseline commit, measured side by side in one run (issue 21).
#
#   scripts/bench-vs-baseline.sh [COMMIT] [RUNS]
#
# COMMIT defaults to cf072a4 (the baseline of issue 21), RUNS to 3. Builds COMMIT in a
# temporary git worktree (or takes the binary BASELINE_BIN, built from COMMIT earlier, to
# repeat a measurement without rebuilding) and this checkout as it is, then runs both binaries in turn,
# A B A B ..., RUNS times each: `interlab reproduce` (wall seconds, CPU seconds, events),
# `interlab bench kernel` (event-kernel M events/s on one core) and `interlab bench model`
# (simulated packets per wall second, packet by packet and in trains). Prints per figure the
# median of each binary and the ratio new/baseline (above 1 = the new build is faster for
# rates, below 1 for times), and each binary's model efficiency: events per wall second of
# `reproduce` over (cores it kept busy x its own kernel events/s). Absolute numbers vary 2x
# between machines of one kind; the ratios taken in one run do not.
set -euo pipefail
base="${1:-cf072a4}"
runs="${2:-3}"
case "$runs" in ''|*[!0-9]*) echo "RUNS must be a whole number, got '$runs'" >&2; exit 2;; esac
[ "$runs" -ge 1 ] || { echo "RUNS must be at least 1" >&2; exit 2; }
root="$(git rev-parse --show-toplevel)"
cd "$root"
git rev-parse --verify -q "$base^{commit}" >/dev/null || { echo "unknown commit: $base" >&2; exit 2; }
work="$(mktemp -d /tmp/interlab-bench.XXXXXX)"
cleanup() { git -C "$root" worktree remove --force "$work/baseline" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

if [ -n "${BASELINE_BIN:-}" ]; then
  # A baseline binary built earlier from COMMIT (to repeat a measurement without rebuilding).
  [ -x "$BASELINE_BIN" ] || { echo "BASELINE_BIN=$BASELINE_BIN: not an executable" >&2; exit 2; }
  A="$BASELINE_BIN"
else
  echo "building baseline $base in $work/baseline ..." >&2
  git worktree add -q --detach "$work/baseline" "$base"
  (cd "$work/baseline" && CARGO_TARGET_DIR="$work/target-base" cargo build --release -q -p interlab-cli)
  A="$work/target-base/release/interlab"
fi
echo "building this checkout ..." >&2
cargo build --release -q -p interlab-cli
B="$root/target/release/interlab"
out="$work/samples.tsv"
: > "$out"

sample() { # bin label
  local bin="$1" who="$2" t0 line
  # reproduce: wall, CPU (user + system of the process and its threads), events
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$bin" reproduce --out "$work/rep-$who" -q > "$work/rep.txt" 2>&1
  read -r wall user sys < "$work/time"
  line="$(grep -m1 '^interlab reproduce:' "$work/rep.txt")"
  events="$(sed -E 's/.* ([0-9.]+) M events.*/\1/' <<<"$line")"
  echo -e "$who\treproduce_wall_s\t$wall" >> "$out"
  echo -e "$who\treproduce_cores_busy\t$(awk -v u="$user" -v s="$sys" -v w="$wall" 'BEGIN{printf "%.3f", (u+s)/w}')" >> "$out"
  echo -e "$who\treproduce_Mevents_per_s\t$(awk -v e="$events" -v w="$wall" 'BEGIN{printf "%.3f", e/w}')" >> "$out"
  echo -e "$who\treproduce_Mevents\t$events" >> "$out"
  "$bin" bench kernel > "$work/k.txt" 2>&1
  echo -e "$who\tkernel_Mevents_per_s\t$(sed -nE 's/^kernel: ([0-9.]+) M events.*/\1/p' "$work/k.txt")" >> "$out"
  "$bin" bench model > "$work/m.txt" 2>&1
  echo -e "$who\tmodel_packets_per_s\t$(sed -nE 's/^interlab bytes=.* packets_per_s=([0-9]+).*/\1/p' "$work/m.txt")" >> "$out"
  echo -e "$who\tmodel_trains_packets_per_s\t$(sed -nE 's/^interlab-trains bytes=.* packets_per_s=([0-9]+).*/\1/p' "$work/m.txt")" >> "$out"
}

for i in $(seq 1 "$runs"); do
  echo "round $i of $runs: baseline" >&2; sample "$A" baseline
  echo "round $i of $runs: current" >&2; sample "$B" current
done

python3 - "$out" "$base" <<'EOF'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
data = {}
for who, fig, v in rows:
    if v:
        data.setdefault(fig, {}).setdefault(who, []).append(float(v))
order = ["reproduce_wall_s", "reproduce_cores_busy", "reproduce_Mevents", "reproduce_Mevents_per_s",
         "kernel_Mevents_per_s", "model_packets_per_s", "model_trains_packets_per_s"]
print(f"baseline {sys.argv[2]} vs current checkout: medians of {max(len(v) for d in data.values() for v in d.values())} runs each, interleaved")
print(f"{'figure':30s} {'baseline':>14s} {'current':>14s} {'current/baseline':>17s}")
med = {}
for fig in order:
    d = data.get(fig, {})
    a, b = d.get("baseline"), d.get("current")
    if not a or not b:
        print(f"{fig:30s} {'n/a':>14s} {'n/a':>14s}")
        continue
    ma, mb = st.median(a), st.median(b)
    med[fig] = (ma, mb)
    print(f"{fig:30s} {ma:14.3f} {mb:14.3f} {mb / ma if ma else float('nan'):17.3f}")
if all(k in med for k in ("reproduce_Mevents_per_s", "reproduce_cores_busy", "kernel_Mevents_per_s")):
    for i, who in enumerate(("baseline", "current")):
        eff = med["reproduce_Mevents_per_s"][i] / (med["reproduce_cores_busy"][i] * med["kernel_Mevents_per_s"][i])
        print(f"model efficiency ({who}): reproduce events/s over cores busy x kernel events/s = {eff:.3f}")
w = med.get("reproduce_wall_s")
if w:
    print(f"reproduce speed-up (baseline wall / current wall): {w[0] / w[1]:.2f}x")
EOF

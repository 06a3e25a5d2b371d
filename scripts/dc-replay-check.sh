#!/usr/bin/env bash
# Model replay vs live TPC-W on this machine (loopback): calibrate a profile of the host,
# run the bookstore (all tiers) and the browser emulator into saturation with a trace,
# replay that trace in the model with every tier and the browsers on one host of this
# machine's cores, and print live WIPS, predicted WIPS and their ratio (target: within 15%).
#
#   scripts/dc-replay-check.sh                      # 20 browsers, think 0.002 x 7 s, 30 s
#   scripts/dc-replay-check.sh --browsers 10 --think-scale 0.05 --duration 40
#   KEEP=/tmp/dccheck scripts/dc-replay-check.sh    # keep profile, trace, JSON there
#
# Needs: jq. Uses ports 18080 (bookstore) and 19999 (calibration daemon) on 127.0.0.1.
# Exit status 0 when the prediction is within 15% of the live WIPS, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

browsers=20 think=0.002 duration=30 items=10000 mix=browsing
while [ $# -gt 0 ]; do
    case "$1" in
        --browsers) browsers=$2; shift 2 ;;
        --think-scale) think=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --items) items=$2; shift 2 ;;
        --mix) mix=$2; shift 2 ;;
        *) echo "dc-replay-check: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done
command -v jq >/dev/null || { echo "dc-replay-check: needs jq (apt-get install jq)" >&2; exit 2; }

cargo build --release -q -p interlab-cli
bin=$PWD/target/release/interlab
dir=${KEEP:-$(mktemp -d)}
mkdir -p "$dir"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT

echo "== calibrating a profile of this host over loopback"
"$bin" serve --port 19999 -q & pids+=($!)
sleep 0.5
"$bin" calibrate --peer 127.0.0.1:19999 --profile "$dir/host.toml" | tail -2

echo "== live: bookstore (all tiers, SQLite, $items items) and $browsers browsers for ${duration}s"
"$bin" datacenter serve --tier all --items "$items" --ebs 10 --db "$dir/bs.sqlite" --listen 127.0.0.1:18080 >"$dir/serve.log" 2>&1 & pids+=($!)
"$bin" datacenter drive --url http://127.0.0.1:18080/ --browsers "$browsers" --mix "$mix" --think-scale "$think" \
    --duration "${duration}s" --wait 300s --trace "$dir/trace.jsonl" --json "$dir/live.json" -q >"$dir/live.txt"
head -4 "$dir/live.txt"

cores=$(nproc)
cat >"$dir/replay.toml" <<EOF
# Every tier and the browsers on one host of $cores cores over loopback, as in the live run.
[datacenter]
name = "replay of the live run"
profile = "$dir/host.toml"
workload = "tpcw"
mix = "$mix"
think_scale = $think
warmup_s = 2.0
measure_s = $duration
browsers = [$browsers]
host_cores = $cores
client_web_connections = 0
web_app_connections = 64
app_db_connections = 16
protocol = "10gige"
EOF
echo "== replay of the trace in the model"
"$bin" datacenter replay --spec "$dir/replay.toml" --trace "$dir/trace.jsonl" --json "$dir/replay.json" | sed -n 3,4p

live=$(jq '.wips' "$dir/live.json")
model=$(jq '.points[0].throughput_per_s' "$dir/replay.json")
errors=$(jq '.errors.total // 0' "$dir/live.json")
awk -v l="$live" -v m="$model" -v e="$errors" 'BEGIN {
    r = m / l
    printf "live WIPS %.1f (%d errors), replay WIPS %.1f: replay / live = %.3f (%+.1f%%)\n", l, e, m, r, (r - 1) * 100
    exit (r >= 0.85 && r <= 1.15) ? 0 : 1
}'

#!/usr/bin/env bash
# `interlab calibrate --compare` across two network namespaces joined by a veth pair with a
# token-bucket rate limit on both ends (default 200 Mbit/s, MTU 1500): calibrate a profile
# from the primitive measurements, then compare the model's multi-stream, hot-spot and
# fan-in predictions with live runs of the same patterns. Needs root (ip netns, tc).
#
#   scripts/calibrate-netns.sh                 # 200 Mbit/s
#   scripts/calibrate-netns.sh 500mbit --quick
#   KEEP=/tmp/caln scripts/calibrate-netns.sh  # keep the profile and the comparison JSON
#
# Traffic stays in the namespaces this script creates (10.213.77.0/24); they are deleted
# on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-200mbit}
shift || true
cargo build --release -q -p interlab-cli
bin=$PWD/target/release/interlab
dir=${KEEP:-$(mktemp -d)}
mkdir -p "$dir"
a=ilcal$$a b=ilcal$$b
cleanup() {
    ip netns del "$a" 2>/dev/null || true
    ip netns del "$b" 2>/dev/null || true
    [ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$a"
ip netns add "$b"
ip link add "v$$a" type veth peer name "v$$b"
ip link set "v$$a" netns "$a"
ip link set "v$$b" netns "$b"
ip -n "$a" addr add 10.213.77.1/24 dev "v$$a"
ip -n "$b" addr add 10.213.77.2/24 dev "v$$b"
for n in "$a" "$b"; do ip -n "$n" link set lo up; done
ip -n "$a" link set "v$$a" up
ip -n "$b" link set "v$$b" up
ip netns exec "$a" tc qdisc add dev "v$$a" root tbf rate "$rate" burst 32kbit latency 50ms
ip netns exec "$b" tc qdisc add dev "v$$b" root tbf rate "$rate" burst 32kbit latency 50ms
head -c 24 /dev/urandom | od -An -tx1 | tr -d " \n" >"$dir/token"
ip netns exec "$b" "$bin" serve --bind 10.213.77.2 --port 7400 --auth-token-file "$dir/token" -q &
sleep 0.5
ip netns exec "$a" "$bin" calibrate --peer 10.213.77.2:7400 --auth-token-file "$dir/token" --profile "$dir/netns.toml" --compare "$@"
kill %1 2>/dev/null || true

#!/usr/bin/env bash
# Live engine vs the reference tools on loopback, in one run: TCP and UDP 64-byte ping-pong
# latency (interlab / sockperf, target <= 1.05) and TCP 64 KiB 1- and 2-stream bandwidth
# (interlab / iperf3, target >= 0.95); qperf for information.
#   scripts/compare.sh            # 2 s per measurement, A B B A A B B A
#   scripts/compare.sh --quick    # 1 s per measurement, A B B A (CI)
#   scripts/compare.sh --seconds 5 --rounds 2
# Needs: apt-get install sockperf qperf iperf3 (missing tools are reported, not fatal).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p interlab-cli
exec ./target/release/interlab bench compare "$@"

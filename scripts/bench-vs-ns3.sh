#!/usr/bin/env bash
# Model speed against ns-3 in the same run: a bulk transfer of BYTES over one 8 Gb/s link,
# in simulated data packets per wall-clock second. ns-3 runs TCP over a point-to-point
# link (bench/ns3/bulk.cc); interlab runs the same TCP bulk transfer (8 Gb/s Ethernet, 2 KiB
# segments, MTU 2100, `interlab-tcp` rows of `bench model`), and RC over a 4X SDR InfiniBand
# link, each packet by packet and with packet trains. Prints the TCP-against-TCP ratio beside
# the RC one. Usage: scripts/bench-vs-ns3.sh [BYTES]   (default 200 MB)
set -euo pipefail
cd "$(dirname "$0")/.."
BYTES=${1:-200000000}
if ! pkg-config --exists ns3-core 2>/dev/null || [ ! -e /usr/lib/x86_64-linux-gnu/libgsl.so ]; then
  echo "installing libns3-dev and libgsl-dev (Debian packages)..." >&2
  apt-get update -qq && apt-get install -y -qq libns3-dev libgsl-dev >/dev/null
fi
mkdir -p target/bench
if [ ! -x target/bench/ns3bulk ] || [ bench/ns3/bulk.cc -nt target/bench/ns3bulk ]; then
  g++ -O2 -std=c++17 -o target/bench/ns3bulk bench/ns3/bulk.cc \
    $(pkg-config --cflags --libs ns3-core ns3-network ns3-internet ns3-point-to-point ns3-applications)
fi
cargo build --release -q -p interlab-cli
ns3=$(target/bench/ns3bulk "$BYTES")
# interlab moves ten times the bytes: at BYTES its trains rows take about 10 ms of wall time,
# too short to time steadily; both figures are rates (data packets per wall second).
il=$(target/release/interlab bench model --bytes "$((BYTES * 10))")
echo "$ns3"
echo "$il"
pps() { sed -n 's/.*packets_per_s=\([0-9]*\).*/\1/p'; }
n=$(echo "$ns3" | pps)
p=$(echo "$il" | grep '^interlab ' | pps)
t=$(echo "$il" | grep '^interlab-trains ' | pps)
tp=$(echo "$il" | grep '^interlab-tcp ' | pps)
tt=$(echo "$il" | grep '^interlab-tcp-trains ' | pps)
awk -v n="$n" -v p="$p" -v t="$t" -v tp="$tp" -v tt="$tt" 'BEGIN {
  printf "ratio interlab/ns-3 (data packets per wall second), TCP against TCP: %.1fx packet by packet, %.1fx with packet trains\n", tp / n, tt / n
  printf "ratio interlab/ns-3 (data packets per wall second), RC against TCP:  %.1fx packet by packet, %.1fx with packet trains\n", p / n, t / n
}'

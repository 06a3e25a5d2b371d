#!/usr/bin/env python3
# Usage: scripts/records-moved.py BASE/results.jsonl NEW/results.jsonl [BASE/claims.json,NEW/claims.json [THRESHOLD]]
# (branch h-st; THRESHOLD a fraction, default 0.001 = 0.1 %)
"""List every record value (numeric fields, summary included, events excluded) that moved
between two results.jsonl files, with its relative change; and every claim value that moved."""
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b), (len(a), len(b))
def flat(r, pre=""):
    out = {}
    for k, v in r.items():
        if k == "events": continue
        if isinstance(v, dict): out.update(flat(v, pre + k + "."))
        elif isinstance(v, (int, float)) and not isinstance(v, bool): out[pre + k] = v
    return out
moves = []
for x, y in zip(a, b):
    key = (x["experiment"], x["series"], x.get("size_bytes"), x.get("processes"), x.get("clients"), x.get("distance_miles"))
    fx, fy = flat(x), flat(y)
    for k in fx:
        if fx[k] != fy.get(k):
            d = (fy[k] - fx[k]) / abs(fx[k]) if fx[k] else float("inf")
            moves.append((abs(d), d, key, k, fx[k], fy[k]))
moves.sort(key=lambda m: -m[0])
thr = float(sys.argv[4]) if len(sys.argv) > 4 else 0.001
print(f"records {len(a)}, values moved {len(moves)}, > {thr*100:.2f} %: {sum(1 for m in moves if m[0] > thr)}")
vals = [m for m in moves if m[3] == "value"]
print(f"  of them field `value`: {len(vals)}; largest {vals[0][1]*100:+.3f} % {vals[0][2]}" if vals else "  no `value` moved")
for m in moves:
    if m[0] > thr:
        print(f"{m[1]*100:+8.3f} %  {m[2][0]:22} {m[2][1]:28} size={m[2][2]} procs={m[2][3]} {m[3]}: {m[4]:.6g} -> {m[5]:.6g}")
if len(sys.argv) > 3:
    ca = {c["id"]: c for c in json.load(open(sys.argv[3].split(",")[0]))["claims"]}
    cb = {c["id"]: c for c in json.load(open(sys.argv[3].split(",")[1]))["claims"]}
    for i in ca:
        x, y = ca[i], cb[i]
        if x.get("value") != y.get("value") or x.get("status") != y.get("status"):
            xv, yv = x.get("value"), y.get("value")
            rel = (yv - xv) / abs(xv) * 100 if isinstance(xv, (int, float)) and isinstance(yv, (int, float)) and xv else float("nan")
            print(f"claim {i}: {xv} -> {yv} ({rel:+.3f} %) {x.get('status')} -> {y.get('status')}")

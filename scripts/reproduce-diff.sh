#!/usr/bin/env bash
# Proves a refactor: runs a full `interlab reproduce` of a base commit and of this checkout
# and compares their records (results.jsonl) and claims (claims.json) byte for byte. When they
# differ it lists, per experiment, how many records changed, and every claim whose value or
# status moved, so a change note can name them.
#   scripts/reproduce-diff.sh [BASE]      # default: HEAD (compares uncommitted changes)
# The base is built in a temporary git worktree (its target directory seeded from this one's,
# so the build is incremental). Exit status 0 when identical, 1 when they differ.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:-HEAD}
rev=$(git rev-parse --verify "$BASE^{commit}")
work=$(mktemp -d /tmp/interlab-reproduce-diff.XXXXXX)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/base" "$rev"
if [ -d target/release ]; then
  mkdir -p "$work/base/target" && cp -r target/release "$work/base/target/" 2>/dev/null || true
fi
echo "building base $(git rev-parse --short "$rev") and this checkout..." >&2
(cd "$work/base" && cargo build --release -q -p interlab-cli)
cargo build --release -q -p interlab-cli
echo "reproduce (base)..." >&2
"$work/base/target/release/interlab" reproduce --quiet --out "$work/a" >/dev/null
echo "reproduce (this checkout)..." >&2
./target/release/interlab reproduce --quiet --out "$work/b" >/dev/null
same=1
for f in results.jsonl claims.json; do
  if cmp -s "$work/a/$f" "$work/b/$f"; then echo "$f: identical"; else echo "$f: differs"; same=0; fi
done
[ "$same" = 1 ] && exit 0
python3 - "$work/a" "$work/b" <<'PY'
import collections, json, sys
a, b = sys.argv[1], sys.argv[2]
ra = [json.loads(l) for l in open(f"{a}/results.jsonl")]
rb = [json.loads(l) for l in open(f"{b}/results.jsonl")]
if len(ra) != len(rb):
    print(f"records: {len(ra)} in the base, {len(rb)} now")
changed = collections.Counter(x.get("experiment") for x, y in zip(ra, rb) if x != y)
for exp, n in sorted(changed.items()):
    print(f"  {exp}: {n} records changed")
ca = {c["id"]: c for c in json.load(open(f"{a}/claims.json"))["claims"]}
cb = {c["id"]: c for c in json.load(open(f"{b}/claims.json"))["claims"]}
for k in ca:
    x, y = ca[k], cb.get(k, {})
    if x.get("value") != y.get("value") or x.get("status") != y.get("status"):
        print(f"  claim {k}: {x.get('value')} ({x.get('status')}) -> {y.get('value')} ({y.get('status')}), published {x.get('published')}")
PY
exit 1

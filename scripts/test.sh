#!/usr/bin/env bash
# The README's test command: every Rust test of the workspace, then the Python package's
# tests (scripts/python-test.sh: a virtualenv with maturin, pandas, dask[distributed],
# pytest). Set INTERLAB_SKIP_PYTHON=1 to run the Rust tests alone.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --profile test-opt
if [ "${INTERLAB_SKIP_PYTHON:-0}" != 1 ]; then
  scripts/python-test.sh
fi

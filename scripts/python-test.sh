#!/usr/bin/env bash
# Builds and installs the Python package `interlab` (python/, PyO3 + maturin) into a
# virtualenv and runs its tests (python/tests, pytest). Needs python3 (3.8+, with venv)
# and a Rust toolchain; fetches maturin, pandas, dask[distributed] and pytest from PyPI.
#
#   scripts/python-test.sh [PYTEST ARGS...]
#
# The virtualenv is $INTERLAB_VENV (default: .venv in the repository). The tests compare
# against the CLI, so the CLI is built first (cargo build --release).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
venv="${INTERLAB_VENV:-$root/.venv}"
py="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv" || { echo "python-test: cannot create a virtualenv (on Debian: apt-get install python3-venv)" >&2; exit 1; }
fi
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q "maturin>=1.5,<2" pandas "dask[distributed]" pytest
cargo build --release
"$venv/bin/python" -m pip install -q "$root/python"
export INTERLAB_BIN="$root/target/release/interlab"
# From the repository root, so that `import interlab` is the installed package, not the
# python/interlab source folder.
cd "$root"
"$venv/bin/python" -c 'import interlab, sys; print("python-test: interlab", interlab.__version__, "from", interlab.__file__, file=sys.stderr)'
exec "$venv/bin/python" -m pytest python/tests "$@"

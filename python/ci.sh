#!/usr/bin/env bash
# CI for the Python package, on a fresh machine with the Rust toolchain and
# CPython 3: formatting and lints of the native crate, then the package built
# and installed into .venv-python by scripts/python-dev, then its tests. The
# last line is pytest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
scripts/python-dev
echo "python: environment and build took $((SECONDS - start)) s"

# pyo3's build script needs the interpreter it builds for.
export PYO3_PYTHON="$(pwd)/.venv-python/bin/python"
export CARGO_TARGET_DIR="$(pwd)/target"
cargo fmt --manifest-path python/Cargo.toml --check
cargo clippy --manifest-path python/Cargo.toml -- -D warnings

.venv-python/bin/python -m pytest python/tests -q -p no:cacheprovider

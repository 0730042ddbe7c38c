#!/usr/bin/env bash
# The test command: builds the guide and checks its links (docs.sh), installs nvcc 13.0 from PyPI
# if needed (see nvcc-env.sh), then runs every CPU test, including the ones that compile
# instrumented CUDA with real nvcc.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "wmfix: building the guide (docs/) and checking links: scripts/docs.sh" >&2
scripts/docs.sh
source scripts/nvcc-env.sh
nvcc --version | tail -n 1
cargo fmt --check
# Each test binary's "Running" line as it starts, and a line every 25 s while one is silent.
cargo test --release --locked "$@" 2>&1 | scripts/heartbeat.py "cargo test"

#!/usr/bin/env bash
# The test command: checks that the generated tables match their result files (results.py
# --check), builds the guide and checks its links (docs.sh), installs nvcc 13.0 from PyPI
# if needed (see nvcc-env.sh), then runs every CPU test, including the ones that compile
# instrumented CUDA with real nvcc, and those that need Chromium or Slurm where they are here
# (test-select.sh; elsewhere the runner reports them skipped, and CI=true fails).
set -euo pipefail
cd "$(dirname "$0")/.."
# cargo-nextest where installed: each test's line as it ends, a SLOW line every 20 s
# (.config/nextest.toml), the longest tests first; else cargo test, each binary's "Running" line.
# Either way, heartbeat.py says something after 25 s of silence.
runner=cargo label="cargo test"
if cargo nextest --version >/dev/null 2>&1; then
  runner=nextest label="cargo nextest"
fi
# Tests that need Chromium or Slurm run where they are here, else the runner reports them
# skipped; under CI=true a missing one stops here (test-select.sh).
selection="$(scripts/test-select.sh "$runner" "$@")"
notes="$(grep '^# ' <<<"$selection" | sed 's/^# /wmfix: /' || true)"
mapfile -t commands < <(grep -v '^# ' <<<"$selection")
echo "$notes" >&2
python3 scripts/results.py --check
echo "wmfix: building the guide (docs/) and checking links: scripts/docs.sh" >&2
scripts/docs.sh
source scripts/nvcc-env.sh
nvcc --version | tail -n 1
cargo fmt --check
# The test-fast profile (Cargo.toml): the tests' build takes a quarter of the release one's CPU.
status=0
for command in "${commands[@]}"; do
  echo "wmfix: $command" >&2
  eval "$command" 2>&1 | scripts/heartbeat.py "$label" || status=$?
done
echo "$notes" >&2
exit "$status"

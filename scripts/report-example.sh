#!/usr/bin/env bash
# The guide's example of `wmfix report`: docs/src/examples/report-ls-bh-nf.html, made from committed
# H100 results of ls-bh-nf (its test under the shipped profile and its reduction, 2026-11-27; the
# cost of the same three fences, 2026-11-25), and its screenshot report-ls-bh-nf.png, taken with
# headless Chromium (Debian's `chromium` package). tests/report_cli.rs checks that the page is
# what `wmfix report` makes of these results now; run this after a change that alters it.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=(
  results/2026-11-27-nvidia-h100-80gb-hbm3/stress-ls-bh-nf-sys-shipped
  results/2026-11-27-nvidia-h100-80gb-hbm3/reduce-ls-bh-nf
  results/2026-11-25-nvidia-h100-80gb-hbm3/cost-ls-bh-nf
)
from=()
for s in "${steps[@]}"; do from+=(--from "$s"); done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cargo run --release --offline -q -- report case-studies/ls-bh-nf "${from[@]}" --out "$tmp/page"
page=docs/src/examples/report-ls-bh-nf.html
cp "$tmp/page/report.html" "$page"
chromium="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$chromium" ]; then
  echo "wmfix: no chromium on PATH (apt-get install -y chromium): $page made, its screenshot not" >&2
  exit 1
fi
"$chromium" --headless --disable-gpu --no-sandbox --hide-scrollbars --window-size=1000,3100 \
  --screenshot="$tmp/shot.png" "file://$PWD/$page" 2>/dev/null
cp "$tmp/shot.png" docs/src/examples/report-ls-bh-nf.png
echo "wmfix: $page and its screenshot docs/src/examples/report-ls-bh-nf.png"

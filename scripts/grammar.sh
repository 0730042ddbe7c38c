#!/usr/bin/env bash
# Regenerates grammar/src/parser.c from grammar/grammar.js: tree-sitter-cuda 0.21.2's generated
# grammar (its src/grammar.json, from the crate on crates.io, checked against its checksum; not
# kept in this repository) extended with our rules, by tree-sitter's CLI 0.25.9 (from PATH, else
# built once with cargo into .tree-sitter-cli/). Needs node, curl and cargo; CI does not run it.
# Offline, the crate and its checksum come from cargo's own cache (~/.cargo/registry: the .crate
# file and the index entry cargo fetched with it), and the CLI is built with --offline (without
# --locked: its lock file names crates the cache may lack).
#
#   scripts/grammar.sh            regenerate grammar/src
#   scripts/grammar.sh --check    regenerate into a temporary folder and fail if grammar/src differs
set -euo pipefail
cd "$(dirname "$0")/.."
BASE_CRATE=tree-sitter-cuda-0.21.2
REGISTRY=${CARGO_HOME:-$HOME/.cargo}/registry
# The published checksum of 0.21.2 from one crates.io index entry (one JSON object a version; in
# cargo's cache they are separated by NUL bytes).
cksum() { python3 -c 'import json,re,sys; print(next(json.loads(l)["cksum"] for l in re.split(rb"[\0\n]", sys.stdin.buffer.read()) if l.startswith(b"{") and json.loads(l).get("vers") == "0.21.2"))'; }
if index=$(curl -sf "https://index.crates.io/tr/ee/tree-sitter-cuda"); then
  BASE_SHA256=$(cksum <<< "$index")
  offline=
else
  BASE_SHA256=$(cksum < "$(ls "$REGISTRY"/index/*/.cache/tr/ee/tree-sitter-cuda | head -n 1)")
  offline=--offline
fi
CLI_VERSION=0.25.9

cli=$(command -v tree-sitter || true)
if [ -z "$cli" ] || ! "$cli" --version | grep -q "^tree-sitter $CLI_VERSION"; then
  cli=$PWD/.tree-sitter-cli/bin/tree-sitter
  [ -x "$cli" ] || cargo install tree-sitter-cli --version "$CLI_VERSION" --no-default-features ${offline:---locked} --root .tree-sitter-cli
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -sfL -o "$work/base.crate" "https://static.crates.io/crates/tree-sitter-cuda/$BASE_CRATE.crate" ||
  cp "$(ls "$REGISTRY"/cache/*/$BASE_CRATE.crate | head -n 1)" "$work/base.crate"
echo "$BASE_SHA256  $work/base.crate" | sha256sum -c --quiet
tar -xzf "$work/base.crate" -C "$work"
mkdir -p "$work/gen"
cp "$work/$BASE_CRATE/src/grammar.json" "$work/gen/base.json"
cp grammar/grammar.js grammar/tree-sitter.json "$work/gen/"
(cd "$work/gen" && "$cli" generate --abi 15)
cp "$work/$BASE_CRATE/src/scanner.c" "$work/gen/src/"
out=grammar/src
if [ "${1:-}" = --check ]; then
  for f in parser.c scanner.c node-types.json tree_sitter/parser.h tree_sitter/alloc.h tree_sitter/array.h; do
    # The first line names the generator's version.
    cmp <(tail -n +2 "$work/gen/src/$f") <(tail -n +2 "$out/$f") || { echo "grammar/src/$f is not generated from grammar/grammar.js" >&2; exit 1; }
  done
  echo "grammar/src matches grammar/grammar.js"
  exit 0
fi
cp "$work/gen/src/parser.c" "$work/gen/src/scanner.c" "$work/gen/src/node-types.json" "$out/"
cp "$work/gen/src/tree_sitter/"*.h "$out/tree_sitter/"
echo "regenerated $out from grammar/grammar.js"

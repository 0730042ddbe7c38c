#!/bin/sh
# Makes nf-include/cub/agent/single_pass_scan_operators.cuh: the toolkit's own CUB tile state
# with the release of its two-word form removed (SetInclusive's and SetPartial's status stores,
# `detail::store_release`, made `detail::store_relaxed`), so a tile's status may be seen before
# its aggregate. The copy is made from whatever CUB the nvcc on PATH ships; nothing of CUB is
# committed. The build finds it first through -Inf-include. Run once, from this folder.
set -eu
cd "$(dirname "$0")"
rel=cub/agent/single_pass_scan_operators.cuh
src=$(echo "#include <$rel>" | nvcc -x cu -arch=sm_90 -M -E - 2>/dev/null |
  tr ' \\' '\n\n' | grep "/$rel\$" | head -n 1)
[ -n "$src" ] && [ -f "$src" ] || { echo "prepare.sh: nvcc does not find $rel" >&2; exit 1; }
mkdir -p "nf-include/$(dirname "$rel")"
out=nf-include/$rel
sed 's/detail::store_release(d_tile_status + TILE_STATUS_PADDING + tile_idx, StatusWord(SCAN_TILE_/detail::store_relaxed(d_tile_status + TILE_STATUS_PADDING + tile_idx, StatusWord(SCAN_TILE_/' \
  "$src" > "$out.tmp"
n=$(grep -c 'detail::store_relaxed(d_tile_status + TILE_STATUS_PADDING + tile_idx, StatusWord(SCAN_TILE_' "$out.tmp" || true)
[ "$n" = 2 ] || { rm -f "$out.tmp"; echo "prepare.sh: expected 2 status releases in $src, changed $n" >&2; exit 1; }
printf '\n#define WMFIX_CUB_SCAN_LIB_NF 1 // made by prepare.sh from %s\n' "$src" >> "$out.tmp"
mv "$out.tmp" "$out"
echo "prepare.sh: $out from $src (2 releases removed)"

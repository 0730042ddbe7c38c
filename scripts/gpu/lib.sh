# Shared by the GPU scripts: a deadline ($DEADLINE, epoch seconds) and logged, time-limited steps
# into the file $L.
left() { echo $((DEADLINE - $(date +%s))); }
step() { # step TITLE LIMIT CMD...: runs CMD (ctrl-c at LIMIT s or the deadline), logs it to $L
  local title=$1 limit=$2; shift 2
  local l; l=$(left); [ "$limit" -lt "$l" ] && l=$limit
  [ "$l" -gt 5 ] || { echo "## $title: skipped, no time left" >> "$L"; return; }
  { echo; echo "## $title ($(date -u +%T), limit $l s)"; echo "\$ $*"; } >> "$L"
  local t0; t0=$(date +%s.%N)
  timeout -s INT "$l" "$@" 2>&1 | grep -v '^\s*$' >> "$L"
  echo "(exit ${PIPESTATUS[0]}; $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s)" >> "$L"
}

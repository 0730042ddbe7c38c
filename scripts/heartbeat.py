#!/usr/bin/env python3
"""Copies stdin to stdout line by line and, after 25 s without a line, says on stderr that the
command is still running and what it printed last: no stretch of the tests is silent for more
than 30 s. Usage: CMD 2>&1 | scripts/heartbeat.py LABEL (with `set -o pipefail` for CMD's status);
WMFIX_HEARTBEAT_S sets the silence (25 s)."""
import os
import select
import sys
import time

QUIET_S = float(os.environ.get("WMFIX_HEARTBEAT_S", "25"))


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else "the command"
    start = time.monotonic()
    last, buf = "", b""
    fd = sys.stdin.fileno()
    while True:
        ready, _, _ = select.select([fd], [], [], QUIET_S)
        if not ready:
            said = f" (last: {last.strip()[:100]})" if last.strip() else ""
            print(f"wmfix: {label} still running after {time.monotonic() - start:.0f} s{said}",
                  file=sys.stderr, flush=True)
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            text = line.decode(errors="replace")
            print(text, flush=True)
            if text.strip():
                last = text
    if buf:
        print(buf.decode(errors="replace"), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Starts (start) or stops (stop) the Wine session the Windows tests share (their CTest fixture "wine"):
# the prefix $WINEPREFIX made once, and one persistent wineserver for all of them. Without it every test
# started and stopped a server of its own, and a test that started while the last one's server was shutting
# down could be killed after its first line of output.
set -euo pipefail
server=$(command -v wineserver || ls /usr/lib/wine/wineserver64 /usr/lib/wine/wineserver 2>/dev/null | head -n 1)
[ -n "$server" ] || { echo "no wineserver found"; exit 1; }
case "$1" in
  start)
    # No output may stay connected to CTest's pipe: CTest waits for whoever holds it, and the server and
    # Wine's services outlive this script.
    mkdir -p "$WINEPREFIX"
    "$server" -k </dev/null >/dev/null 2>&1 || true           # one a run that stopped early left behind
    "$server" -p </dev/null >/dev/null 2>&1                  # persistent until stop
    wineboot -i </dev/null >/dev/null 2>&1 || true           # makes the prefix the first time
    wine cmd /c exit 0 </dev/null >/dev/null 2>&1            # the session works
    echo "wine session ready in $WINEPREFIX"
    ;;
  stop)
    "$server" -k || true
    ;;
  *)
    echo "usage: $0 start|stop"
    exit 2
    ;;
esac

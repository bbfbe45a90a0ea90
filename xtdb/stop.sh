#!/usr/bin/env bash
# Stop the node started by xtdb/start.sh: SIGTERM, wait (bounded) for exit,
# SIGKILL as a last resort. Idempotent: no pid file or a dead pid is success.
# Usage: bash xtdb/stop.sh   Env: XTDB_STOP_TIMEOUT (seconds, default 30).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
pid_file="${XTDB_STATE_DIR:-$DIR}/node.pid"

[[ -f $pid_file ]] || exit 0
pid=$(cat "$pid_file")
# Only signal the process we started (the pid may have been reused).
if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null \
  && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'xtdb.main'; then
  kill -TERM "$pid"
  # tail --pid blocks until the process exits (no polling of our own).
  if ! timeout "${XTDB_STOP_TIMEOUT:-30}" tail --pid="$pid" -f /dev/null; then
    printf 'xtdb/stop: pid %s ignored SIGTERM for %ss, killing it\n' "$pid" "${XTDB_STOP_TIMEOUT:-30}" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
fi
rm -f "$pid_file"

#!/usr/bin/env bash
# A PostgreSQL server of our own for the multi-node XTDB deployment (the
# shared tx log and document store). Debian's package, a data directory under
# xtdb/cluster/pg (git-ignored), bound to 127.0.0.1 only, on a free port.
# No password lives in the repo: `start` on a fresh data directory generates
# one (kept in xtdb/cluster/pg/password, 0600) and every connection over TCP
# must present it (scram-sha-256); Unix sockets are switched off.
# Usage: bash xtdb/pg.sh start   -> prints postgresql://scm:PASS@127.0.0.1:PORT/xtdb
#        bash xtdb/pg.sh url     -> the same URL for a running server
#        bash xtdb/pg.sh stop    -> fast shutdown, idempotent
#        bash xtdb/pg.sh wipe    -> stop, then delete the data directory
# Env: XTDB_CLUSTER_DIR (default xtdb/cluster), PG_PORT (default: the port of
# the last start of this data directory, else a free one).
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
CLUSTER=${XTDB_CLUSTER_DIR:-$DIR/cluster}
PGSTATE=$CLUSTER/pg
# A link when the repo is not reachable by the server's user (see start).
[[ -L $PGSTATE ]] && PGSTATE=$(readlink -f "$PGSTATE")
DATA=$PGSTATE/data

log() { printf 'xtdb/pg: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

pg_bin() {
  local b
  b=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
  [[ -n $b && -x $b/initdb ]] || return 1
  echo "$b"
}

ensure_installed() {
  pg_bin >/dev/null && return 0
  log "installing postgresql with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends postgresql >&2
  # Debian's package starts its own cluster on 5432; we do not use it.
  pg_bin >/dev/null || die "postgresql installed but no initdb found"
}

# initdb refuses to run as root: as root, the server runs as an unprivileged
# user (Debian's `postgres`, else a system user `scm-pg` created here).
RUN_AS=
as_pg() {
  if [[ -n $RUN_AS ]]; then runuser -u "$RUN_AS" -- "$@"; else "$@"; fi
}
pick_user() {
  ((EUID == 0)) || return 0
  if id -u postgres >/dev/null 2>&1; then
    RUN_AS=postgres
  else
    id -u scm-pg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin scm-pg
    RUN_AS=scm-pg
  fi
}

running() { [[ -f $DATA/postmaster.pid ]] && as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

url() {
  printf 'postgresql://scm:%s@127.0.0.1:%s/xtdb\n' "$(cat "$PGSTATE/password")" "$(cat "$PGSTATE/port")"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cmd=${1:-}
case $cmd in
  start)
    ensure_installed
    BIN=$(pg_bin)
    pick_user
    mkdir -p "$CLUSTER"
    # The server's user must reach its data directory; a clone under a
    # private home (e.g. /root) is not reachable, so the state then lives in
    # /var/tmp/scm-pg-<hash of this path>, linked from xtdb/cluster/pg.
    if [[ -n $RUN_AS && ! -L $CLUSTER/pg ]] && ! runuser -u "$RUN_AS" -- test -x "$CLUSTER"; then
      alt=/var/tmp/scm-pg-$(printf '%s' "$CLUSTER" | sha256sum | cut -c1-12)
      log "$CLUSTER is not reachable by $RUN_AS; PostgreSQL state goes to $alt"
      rm -rf "$CLUSTER/pg"
      mkdir -p "$alt"
      ln -s "$alt" "$CLUSTER/pg"
      PGSTATE=$alt DATA=$alt/data
    fi
    mkdir -p "$PGSTATE"
    chmod 700 "$PGSTATE"
    if running; then
      log "already running"
      url
      exit 0
    fi
    if [[ ! -f $DATA/PG_VERSION ]]; then
      rm -rf "$DATA"
      mkdir -p "$DATA"
      [[ -n $RUN_AS ]] && chown "$RUN_AS" "$PGSTATE" "$DATA"
      # A fresh password per data directory: 32 hex chars, never in the repo.
      (umask 077; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$PGSTATE/password")
      pwfile=$PGSTATE/pwfile
      (umask 077; cp "$PGSTATE/password" "$pwfile")
      [[ -n $RUN_AS ]] && chown "$RUN_AS" "$pwfile"
      log "initdb in $DATA (as ${RUN_AS:-$(id -un)})"
      as_pg "$BIN/initdb" -D "$DATA" -U scm --pwfile="$pwfile" --auth=scram-sha-256 \
        --encoding=UTF8 --no-locale >"$PGSTATE/initdb.log" 2>&1 \
        || { rm -f "$pwfile"; cat "$PGSTATE/initdb.log" >&2; die "initdb failed"; }
      rm -f "$pwfile"
    fi
    # A restart keeps the port: the nodes' connection pools reconnect to it.
    if [[ -n ${PG_PORT:-} ]]; then
      port=$PG_PORT
    elif [[ -f $PGSTATE/port ]]; then
      port=$(cat "$PGSTATE/port")
    else
      port=$(free_port)
    fi
    echo "$port" >"$PGSTATE/port"
    # Only 127.0.0.1, no Unix socket; fsync stays on (a node killed mid-write
    # must find the log intact), small shared memory for a 2-core box.
    [[ -n $RUN_AS ]] && { touch "$PGSTATE/server.log"; chown "$RUN_AS" "$PGSTATE/server.log"; }
    as_pg "$BIN/pg_ctl" -D "$DATA" -l "$PGSTATE/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='' -c max_connections=60 -c shared_buffers=32MB" \
      start >&2 || { tail -n 30 "$PGSTATE/server.log" >&2; die "pg_ctl start failed"; }
    # The database XTDB uses (its tables are created by the first node).
    export PGPASSWORD; PGPASSWORD=$(cat "$PGSTATE/password")
    if [[ $(psql -h 127.0.0.1 -p "$port" -U scm -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='xtdb'") != 1 ]]; then
      psql -h 127.0.0.1 -p "$port" -U scm -d postgres -qc 'CREATE DATABASE xtdb' >&2
    fi
    log "ready on 127.0.0.1:$port"
    url
    ;;
  url)
    [[ -f $PGSTATE/password && -f $PGSTATE/port ]] || die "no server state in $PGSTATE"
    url
    ;;
  stop|wipe)
    if BIN=$(pg_bin) && [[ -f $DATA/postmaster.pid ]]; then
      pick_user
      as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >&2 || true
    fi
    if [[ $cmd == wipe ]]; then rm -rf "$PGSTATE" "$CLUSTER/pg"; fi
    ;;
  *)
    sed -n '2,12p' "$0" >&2
    exit 2
    ;;
esac

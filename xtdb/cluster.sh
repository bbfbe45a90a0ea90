#!/usr/bin/env bash
# N XTDB nodes on one PostgreSQL (tx log + documents shared, a RocksDB index
# per node): the multi-node deployment, on one machine for tests and soaks.
# Usage:
#   bash xtdb/cluster.sh start N [--fresh]  PG (pg.sh) + N nodes, started in
#                                           parallel; prints one URL per line
#                                           (--fresh: wipe PG and indexes first)
#   bash xtdb/cluster.sh urls               the nodes' URLs, one per line
#   bash xtdb/cluster.sh kill I             SIGKILL node I (1-based): a crash
#   bash xtdb/cluster.sh restart I          start node I again (same port and
#                                           index); returns once it caught up
#   bash xtdb/cluster.sh stop               SIGTERM every node, then stop PG
#   bash xtdb/cluster.sh pg-stop|pg-start   stop / start PG alone (an outage)
# State: xtdb/cluster/ (git-ignored; XTDB_CLUSTER_DIR overrides): pg/ and
# node-I/{node.pid,node.log,node.edn,port,data/}.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)
export XTDB_CLUSTER_DIR=${XTDB_CLUSTER_DIR:-$DIR/cluster}
CLUSTER=$XTDB_CLUSTER_DIR

log() { printf 'xtdb/cluster: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

node_dir() { echo "$CLUSTER/node-$1"; }
nodes() { ls -d "$CLUSTER"/node-* 2>/dev/null | sed 's|.*/node-||' | sort -n; }

# Start node I (port: its recorded one, or a free one the first time).
start_node() {
  local i=$1 nd port_args=()
  nd=$(node_dir "$i")
  mkdir -p "$nd"
  [[ -f $nd/port ]] && port_args=(--port "$(cat "$nd/port")")
  local url
  url=$(XTDB_STATE_DIR=$nd XTDB_PG_URL=$(bash "$DIR/pg.sh" url) \
    bash "$DIR/start.sh" --config jdbc --data-dir "$nd/data" "${port_args[@]}") || return 1
  echo "${url##*:}" >"$nd/port"
  echo "$url"
}

check_index() {
  [[ $1 =~ ^[0-9]+$ && -d $(node_dir "$1") ]] || die "no node $1 (nodes: $(nodes | tr '\n' ' '))"
}

cmd=${1:-}
case $cmd in
  start)
    n=${2:?start needs a node count}
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "node count must be a positive number, got '$n'"
    if [[ ${3:-} == --fresh ]]; then
      bash "$0" stop || true
      bash "$DIR/pg.sh" wipe
      rm -rf "$CLUSTER"/node-*
    fi
    bash "$DIR/pg.sh" start >/dev/null
    # Parallel cold starts: each JVM compiles Clojure for ~20 s.
    pids=()
    for ((i = 1; i <= n; i++)); do
      start_node "$i" >"$CLUSTER/.url-$i" &
      pids+=($!)
    done
    failed=0
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    if ((failed)); then
      bash "$0" stop || true
      die "a node failed to start (see $CLUSTER/node-*/node.log)"
    fi
    for ((i = 1; i <= n; i++)); do cat "$CLUSTER/.url-$i"; rm -f "$CLUSTER/.url-$i"; done
    ;;
  urls)
    for i in $(nodes); do
      nd=$(node_dir "$i")
      [[ -f $nd/port ]] && echo "http://127.0.0.1:$(cat "$nd/port")"
    done
    ;;
  kill)
    i=${2:?kill needs a node index}; check_index "$i"
    pid_file=$(node_dir "$i")/node.pid
    if [[ -f $pid_file ]]; then
      pid=$(cat "$pid_file")
      # Only our node (the pid may have been reused).
      if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'xtdb.main'; then
        kill -KILL "$pid"
        timeout 30 tail --pid="$pid" -f /dev/null || true
      fi
      rm -f "$pid_file"
    fi
    ;;
  restart)
    i=${2:?restart needs a node index}; check_index "$i"
    XTDB_STATE_DIR=$(node_dir "$i") bash "$DIR/stop.sh"
    start_node "$i"
    ;;
  stop)
    for i in $(nodes); do XTDB_STATE_DIR=$(node_dir "$i") bash "$DIR/stop.sh" || true; done
    bash "$DIR/pg.sh" stop
    ;;
  pg-stop) bash "$DIR/pg.sh" stop ;;
  pg-start) bash "$DIR/pg.sh" start >/dev/null ;;
  *)
    sed -n '2,16p' "$0" >&2
    exit 2
    ;;
esac

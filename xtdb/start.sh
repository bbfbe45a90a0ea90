#!/usr/bin/env bash
# Start one XTDB 1.24.5 node in the background and print ONLY its base URL
# (e.g. http://127.0.0.1:41235) on stdout. Everything else goes to stderr.
# Usage: bash xtdb/start.sh [--config mem|rocksdb|jdbc] [--port N] [--data-dir DIR]
#                           [--pg postgresql://USER:PASS@HOST:PORT/DB]   (jdbc only;
#                            or the env XTDB_PG_URL, which ps does not show)
# jdbc: tx log + documents in PostgreSQL (see pg.sh), RocksDB index in DIR;
# several nodes share one PG, each with its own XTDB_STATE_DIR and DIR.
# Env: XTDB_START_TIMEOUT (seconds, default 240), XTDB_XMX (default 1g).
# Requires bash xtdb/setup.sh first. Stop with bash xtdb/stop.sh.
set -euo pipefail
DIR=$(cd "$(dirname "$0")" && pwd)

log() { printf 'xtdb/start: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# XTDB_PG_URL keeps the password off the command line (cluster.sh uses it).
config=mem port= data_dir="$DIR/data" pg_url=${XTDB_PG_URL:-}
while (($#)); do
  case $1 in
    --config) config=${2:?--config needs mem|rocksdb|jdbc}; shift 2 ;;
    --pg) pg_url=${2:?--pg needs a postgresql:// URL}; shift 2 ;;
    --port) port=${2:?--port needs a number}; shift 2 ;;
    --data-dir) data_dir=${2:?--data-dir needs a path}; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" >&2; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ $config == mem || $config == rocksdb || $config == jdbc ]] || die "--config must be mem, rocksdb or jdbc, got '$config'"
if [[ $config == jdbc ]]; then
  # Only URL-safe characters, so the values go into the EDN template as is
  # (pg.sh generates hex passwords).
  re='^postgres(ql)?://([A-Za-z0-9._~-]+):([A-Za-z0-9._~-]+)@([A-Za-z0-9.-]+):([0-9]+)/([A-Za-z0-9_-]+)$'
  [[ $pg_url =~ $re ]] || die "--config jdbc needs --pg postgresql://USER:PASS@HOST:PORT/DB (letters, digits, . _ ~ -), got '${pg_url%%:*}:…'"
  pg_user=${BASH_REMATCH[2]} pg_pass=${BASH_REMATCH[3]} pg_host=${BASH_REMATCH[4]} pg_port=${BASH_REMATCH[5]} pg_db=${BASH_REMATCH[6]}
fi
[[ -z $port || $port =~ ^[0-9]+$ ]] || die "--port must be a number, got '$port'"
ls "$DIR"/lib/xtdb-core-*.jar >/dev/null 2>&1 || die "xtdb/lib is empty: run bash xtdb/setup.sh first"
command -v curl >/dev/null 2>&1 || die "curl is required"

# XTDB_STATE_DIR lets several nodes run side by side (one pid/log/config each).
STATE=${XTDB_STATE_DIR:-$DIR}
mkdir -p "$STATE"
pid_file="$STATE/node.pid" log_file="$STATE/node.log" edn_file="$STATE/node.edn"
if [[ -f $pid_file ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
  die "a node is already running (pid $(cat "$pid_file")); run bash xtdb/stop.sh first"
fi
rm -f "$pid_file"

if [[ -z $port ]]; then
  # Ask the kernel for a free port; the tiny race until the JVM binds it is
  # caught below (the process dies and we print its log).
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null) || {
    port=$((20000 + RANDOM % 40000))
    while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((20000 + RANDOM % 40000)); done
  }
fi

if [[ $config != mem ]]; then
  mkdir -p "$data_dir"
  data_dir=$(cd "$data_dir" && pwd)
fi
# 0600: a jdbc node's config holds the PostgreSQL password.
(umask 077
 sed -e "s|@PORT@|$port|g" -e "s|@DATA_DIR@|$data_dir|g" \
   -e "s|@PG_HOST@|${pg_host:-}|g" -e "s|@PG_PORT@|${pg_port:-0}|g" -e "s|@PG_DB@|${pg_db:-}|g" \
   -e "s|@PG_USER@|${pg_user:-}|g" -e "s|@PG_PASSWORD@|${pg_pass:-}|g" \
   "$DIR/$config.edn" >"$edn_file")

url="http://127.0.0.1:$port"
log "starting $config node on $url (log: $log_file)"
# MALLOC_ARENA_MAX=2 stops glibc reserving a malloc arena per thread (RocksDB's
# native memory balloons otherwise); heap and direct memory are capped too.
# nodelay: the JDK HTTP server behind our HTTP front leaves Nagle on, which
# stalls every small response ~40 ms behind the client's delayed ACK.
# A temp directory per node: RocksDB's JNI loader extracts its .so under
# java.io.tmpdir, and two nodes starting at once on one shared /tmp overwrite
# the file the other is mapping (SIGBUS in ld.so, seen in a cluster start).
node_tmp="$STATE/tmp"
mkdir -p "$node_tmp"
MALLOC_ARENA_MAX=2 nohup java \
  -Xmx"${XTDB_XMX:-1g}" -XX:MaxDirectMemorySize=512m -XX:+UseSerialGC \
  -Djava.io.tmpdir="$node_tmp" \
  -Dclojure.main.report=stderr \
  -Dsun.net.httpserver.nodelay=true \
  -cp "$DIR/lib/*:$DIR/src" clojure.main -m xtdb.main -f "$edn_file" \
  </dev/null >"$log_file" 2>&1 &
pid=$!
echo "$pid" >"$pid_file"

# Readiness: XTDB has no push notification for "HTTP server up", so poll
# /_xtdb/status with a deadline, failing fast if the JVM exits.
deadline=$((SECONDS + ${XTDB_START_TIMEOUT:-240}))
status=
until status=$(curl -fsS --max-time 5 -H 'Accept: application/json' "$url/_xtdb/status" 2>/dev/null); do
  if ! kill -0 "$pid" 2>/dev/null; then
    rm -f "$pid_file"
    log "node exited during start-up; its log:"
    tail -n 60 "$log_file" >&2
    exit 1
  fi
  if ((SECONDS >= deadline)); then
    log "node not ready after ${XTDB_START_TIMEOUT:-240}s; stopping it. Log tail:"
    tail -n 60 "$log_file" >&2
    bash "$DIR/stop.sh" >&2 || true
    exit 1
  fi
  sleep 0.5
done

if [[ $config != mem ]]; then
  if [[ $status != *'"kvStore":"xtdb.rocksdb'* ]]; then
    log "expected a RocksDB kvStore, status says: $status"
    bash "$DIR/stop.sh" >&2 || true
    exit 1
  fi
  # A persistent node replays its tx-log on start (a jdbc node: the shared
  # log from where its own index stopped); wait until indexes caught up.
  curl -fsS --max-time 130 -H 'Accept: application/json' "$url/_xtdb/sync?timeout=120000" >/dev/null \
    || { bash "$DIR/stop.sh" >&2 || true; die "sync after start failed"; }
fi

log "ready in ${SECONDS}s (pid $pid)"
echo "$url"

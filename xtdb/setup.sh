#!/usr/bin/env bash
# Fetch the XTDB 1.24.5 classpath (see pom.xml) from Maven Central into
# xtdb/lib/. Idempotent: skips when lib/ already holds a complete copy for the
# current pom.xml. Installs Java, Maven and curl (start.sh's readiness probe)
# with apt-get when missing.
# Usage: bash xtdb/setup.sh
set -euo pipefail
cd "$(dirname "$0")"

log() { printf 'xtdb/setup: %s\n' "$*" >&2; }

need_pkgs=()
command -v java >/dev/null 2>&1 || need_pkgs+=(default-jre-headless)
command -v mvn >/dev/null 2>&1 || need_pkgs+=(maven)
command -v curl >/dev/null 2>&1 || need_pkgs+=(curl)
if ((${#need_pkgs[@]})); then
  log "installing ${need_pkgs[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >&2
fi

# The marker holds the pom's hash and is written only after a successful copy,
# so an interrupted fetch (or an edited pom) triggers a fresh one.
want=$(sha256sum pom.xml | cut -d' ' -f1)
marker=lib/.complete
if [[ -f $marker && $(cat "$marker") == "$want" ]] && ls lib/xtdb-core-*.jar >/dev/null 2>&1; then
  log "lib/ is complete ($(ls lib/*.jar | wc -l) jars), nothing to do"
  exit 0
fi

log "fetching dependencies from Maven Central (first run takes a minute or two)"
rm -rf lib.partial
mvn -B -q dependency:copy-dependencies -DoutputDirectory=lib.partial -DincludeScope=runtime >&2
rm -rf lib
mv lib.partial lib
echo "$want" >"$marker"
log "done: $(ls lib/*.jar | wc -l) jars in xtdb/lib"

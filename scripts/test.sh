#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what it needs, builds,
# lints, starts one XTDB node for the run, runs every suite, stops the node.
# Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

step() { printf '\n==> %s\n' "$*"; }
# shellcheck source=retry.sh
source "$ROOT/scripts/retry.sh"

# Free disk first: the suite needs several GB (Rust build, pi installs, pack
# tarballs); a full disk shows up later as an npm ENOSPC far from its cause.
df -h "$ROOT" "${TMPDIR:-/tmp}" 2>/dev/null || true

step "node dependencies"
# Not `npm ci`: the package's own per-platform addons (its
# optionalDependencies, npm/*) are not published yet, so the lock cannot
# hold them and `npm ci` rejects it as out of sync. `npm install` installs
# the locked versions of the rest and leaves the lock as committed.
retry npm install --no-audit --no-fund

step "hash vectors: committed fixture matches the JS reference implementation"
node scripts/gen-hash-vectors.mjs --check

step "rust format + lint"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings

step "js lint (oxlint: facade, pi entry, tests, benches, scripts)"
npm run lint:js

step "build native addon"
npm run build:debug

step "xtdb: fetch 1.24.5 from Maven Central and start one node for this run"
bash xtdb/setup.sh
XTDB_URL=$(bash xtdb/start.sh --config mem)
trap 'bash "$ROOT/xtdb/stop.sh" || true' EXIT
export SCM_TEST_XTDB_URL="$XTDB_URL" SCM_REQUIRE_XTDB=1

step "cargo test (core + store conformance on embedded and XTDB)"
cargo test --workspace

step "multi-node: PostgreSQL + two XTDB nodes on it (xtdb/cluster.sh), agents on both, one node killed"
# A fresh cluster for the run (pg.sh installs Debian's postgresql when missing);
# stopped right after, so its JVMs do not sit beside the JS suites.
trap 'bash "$ROOT/xtdb/cluster.sh" stop || true; bash "$ROOT/xtdb/stop.sh" || true' EXIT
mapfile -t NODES < <(bash xtdb/cluster.sh start 2 --fresh)
((${#NODES[@]} == 2)) || { echo "xtdb/cluster.sh did not start two nodes" >&2; exit 1; }
SCM_TEST_XTDB_NODES=$(IFS=,; echo "${NODES[*]}") SCM_REQUIRE_XTDB_NODES=1 SCM_TEST_XTDB_KILLABLE=1 \
  cargo test -p scm-core --test multinode --test multinode_crash
bash xtdb/cluster.sh stop
trap 'bash "$ROOT/xtdb/stop.sh" || true' EXIT

step "pi 0.73.1 + 1.5.2 + 1.6.0, Node 22, rg/fd (the e2e suites and vitest's jiti-load test use them)"
bash scripts/pi/setup.sh

step "chromium (the session report is checked in a headless browser)"
bash scripts/setup-chromium.sh

step "vitest (addon, both stores)"
npx vitest run

step "replay benchmark instrument tests"
retry npm ci --prefix bench/replay --no-audit --no-fund
node --test bench/replay/

step "pi end-to-end (real pi 0.73.1, 1.5.2 and 1.6.0, scripted model, offline)"
node --test --test-concurrency=1 e2e/

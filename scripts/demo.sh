#!/usr/bin/env bash
# The main job on a fresh machine: build the addon, install pi (0.73.1 and
# 1.5.2, offline-capable), and run a real pi session with this package loaded
# against a scripted model on the embedded store; prints what the model saw
# on every call next to what pi alone would have sent; then, when the recorded
# workload is beside the repo, replays that real session and prints the
# token/cost table against raw pi.
# Usage: bash scripts/demo.sh [--line 0.73|1.5] [--full] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
npm install --no-audit --no-fund --silent
npm run --silent build
bash scripts/pi/setup.sh
node scripts/pi/demo.mjs "$@"

# At scale: replay a real recorded pi session (484 model calls) through the
# engine next to raw pi and two published baselines, when the workload is
# beside the repo (shared/workloads/, as in CI).
workload=../shared/workloads/pi-session-refactor.jsonl
if [[ -f $workload ]]; then
  printf '\n==> replay of %s (tokens per model call, prompt caching counted)\n' "$workload"
  npm ci --prefix bench/replay --no-audit --no-fund --silent
  node bench/replay/replay.mjs "$workload" --strategies raw,masking,strawman,self-context-manager
fi

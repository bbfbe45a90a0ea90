#!/usr/bin/env bash
# The main job on a fresh machine: build the addon, install pi (0.73.1, 1.5.2
# and 1.6.0, offline-capable), and run a real pi session with this package loaded
# against a scripted model on the embedded store; prints what the model saw
# on every call next to what pi alone would have sent; then replays a real
# recorded pi session (the 484-call one beside the repo, as in CI, else the
# 453-call one kept in bench/replay/workloads) and prints the token/cost
# table against raw pi.
# Usage: bash scripts/demo.sh [--line 0.73|1.5|1.6] [--full] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."

# Phase banners with the time each phase took (a first run spends most of it building the Rust core).
T0=$SECONDS PHASE= PHASE_T=$SECONDS
phase() {
  [[ -n $PHASE ]] && printf '    (%s: %ds)\n' "$PHASE" $((SECONDS - PHASE_T))
  PHASE=$1 PHASE_T=$SECONDS
  [[ -n $1 ]] && printf '\n==> [%4ds] %s\n' $((SECONDS - T0)) "$1"
  return 0
}

phase "npm dependencies"
npm install --no-audit --no-fund --silent
if bash scripts/addon-fresh.sh; then
  phase "native addon: up to date, not rebuilt ($(ls ./*.node))"
else
  phase "native addon: building the Rust core (first time: several minutes; later only what changed)"
  npm run --silent build
fi
phase "pi 0.73.1, 1.5.2 and 1.6.0 (installed once under .tools/)"
bash scripts/pi/setup.sh
phase "a real pi session, scripted model, offline: what the model saw on each call vs pi alone"
node scripts/pi/demo.mjs "$@"

# At scale: replay a real recorded pi session through the engine next to raw
# pi and two published baselines: the 484-call session when it is beside the
# repo (shared/workloads/, as in CI), else the 453-call one the repo keeps.
workload=../shared/workloads/pi-session-refactor.jsonl
[[ -f $workload ]] || workload=bench/replay/workloads/pi-session-themes.jsonl
phase "replay of $workload (tokens per model call, prompt caching counted)"
npm ci --prefix bench/replay --no-audit --no-fund --silent
node bench/replay/replay.mjs "$workload" --strategies raw,masking,strawman,self-context-manager
printf '\nplot: bench/replay/out/tokens-per-call.svg (input tokens per model call for each strategy; open it in a browser)\n'
printf 'tables: bench/replay/out/summary.md, per call: bench/replay/out/calls.csv\n'
phase ""
printf '\ndone in %ds\n' $((SECONDS - T0))

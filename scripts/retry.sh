# Sourced by scripts/test.sh and scripts/pi/setup.sh.
# retry CMD…: a registry step, up to three tries. The registry now and then
# answers without a version it serves (ETARGET for a published dependency of
# pi 0.73.1, seen on 2026-11-27, fine a minute later). A pause between tries,
# not a consistency wait.
retry() {
	local try
	for try in 1 2 3; do
		"$@" && return 0
		[ "$try" = 3 ] || { printf 'failed (try %s of 3): %s; again in %s s\n' "$try" "$*" $((try * 10)) >&2; sleep $((try * 10)); }
	done
	return 1
}

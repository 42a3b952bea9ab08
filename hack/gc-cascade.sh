#!/usr/bin/env bash
# Measures the garbage collector of `customapi serve`: the time to collect
# the dependents of one deleted owner and the server's RSS meanwhile, and
# what the collector costs an idle server: docs/performance.md, "Garbage
# collection".
#
# Usage:
#   hack/gc-cascade.sh [--customapi PATH] [--dependents N] [--idle SECONDS] [-- SERVE FLAGS...]
#
#   --customapi   a customapi binary; default: go build ./cmd/customapi
#   --dependents  ConfigMaps owned by the deleted owner (default 10000)
#   --idle        seconds of idleness measured per case (default 30)
#   after --      more flags for customapi serve
#
# Two servers in turn (--secure-port 0, loopback, a temporary data dir, the
# embedded etcd): with --enable-garbage-collector=false, then true. Each stays
# idle for --idle seconds once ready and reports the CPU time it used
# meanwhile (utime+stime of /proc/PID/stat) and its VmRSS. Each then runs
# hack/gc-cascade: an owner and --dependents ConfigMaps are created; with
# the collector the owner is deleted in the background, without it the
# client deletes the dependents itself, 8 at a time (what the collector's
# 8 workers do, for comparison); the time until the last dependent's
# deletion is reported, with the server's RSS before and at its peak
# during it (and VmHWM, the process's lifetime peak).
# Run it on a quiet machine: the figures are wall time.
set -euo pipefail

customapi=""
dependents=10000
idle=30
while [[ $# -gt 0 ]]; do
	case "$1" in
	--customapi) customapi="$2"; shift 2 ;;
	--dependents) dependents="$2"; shift 2 ;;
	--idle) idle="$2"; shift 2 ;;
	--) shift; break ;;
	*) echo "unknown flag $1" >&2; exit 2 ;;
	esac
done
extra=("$@")

# prepare, start and stop
source "$(dirname "${BASH_SOURCE[0]}")/lib-serve.sh"
prepare gc-cascade

# cpu_ticks: utime+stime of $pid in clock ticks (fields 14 and 15 of
# /proc/PID/stat, counted after the parenthesised command name).
cpu_ticks() {
	awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$pid/stat"
}

status_mib() { # FIELD: VmRSS or VmHWM of $pid in MiB
	awk -v f="$1:" '$1 == f {printf "%d", $2 / 1024}' "/proc/$pid/status"
}

hz=$(getconf CLK_TCK)
for gc in off on; do
	dir="$work/gc-$gc"
	enable=false
	[[ "$gc" == on ]] && enable=true
	start "$dir" "--enable-garbage-collector=$enable"
	t0=$(cpu_ticks)
	sleep "$idle"
	t1=$(cpu_ticks)
	awk -v d=$((t1 - t0)) -v hz="$hz" -v s="$idle" -v gc="$gc" -v rss="$(status_mib VmRSS)" \
		'BEGIN {printf "collector %s: idle %ds: CPU %.2f s (%.1f%% of one core), VmRSS %d MiB\n", gc, s, d / hz, 100 * d / hz / s, rss}'
	by_client=()
	[[ "$gc" == off ]] && by_client=(--by-client)
	"$loader" --kubeconfig "$dir/admin.kubeconfig" --dependents "$dependents" --pid "$pid" "${by_client[@]}"
	echo "server VmHWM (lifetime peak): $(status_mib VmHWM) MiB"
	stop
done

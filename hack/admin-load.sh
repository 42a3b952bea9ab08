#!/usr/bin/env bash
# Loads `customapi serve` as its generated admin and reports what the
# in-flight limits do: docs/performance.md, "Admin load and in-flight limits".
#
# Usage:
#   hack/admin-load.sh [--customapi PATH] [--objects N] [--duration D] [--case NAME] [--heap-profile DIR] [-- SERVE FLAGS...]
#
#   --customapi     a customapi binary; default: go build ./cmd/customapi
#   --objects       Custom objects to write first (default 10000)
#   --duration      how long each case loads the server (default 60s; at most 10m)
#   --case          run only this case: lists or lists+watches (default both)
#   --heap-profile  write a heap profile of the server, taken halfway through each case, into DIR
#   after --        more flags for customapi serve (for example --max-requests-inflight=100)
#
# Two cases, each on a new server (--secure-port 0, loopback, a temporary
# data dir), after writing the objects and waiting until the server has
# counted them (apiserver_storage_objects: the count prices each LIST's
# in-flight seats):
#   lists:         600 concurrent LIST workers of every object, one writer;
#   lists+watches: 200 LIST workers, 500 watches of the namespace, one writer.
# Every LIST worker loops for --duration, waiting Retry-After after a 429 as
# client-go does; the writer patches one object in a loop. For each case it
# reports the status codes (429s and how many had Retry-After), the LIST and
# write latencies, the longest gap between two successful writes, and the
# server's peak RSS (VmHWM of /proc/PID/status) and RSS at the end. It
# talks only to the server it started, on 127.0.0.1, and stops by itself.
set -euo pipefail

customapi=""
objects=10000
duration=60s
profiles=""
only=""
while [[ $# -gt 0 ]]; do
	case "$1" in
	--customapi) customapi="$2"; shift 2 ;;
	--objects) objects="$2"; shift 2 ;;
	--duration) duration="$2"; shift 2 ;;
	--heap-profile) profiles="$2"; shift 2 ;;
	--case) only="$2"; shift 2 ;;
	--) shift; break ;;
	*) echo "unknown flag $1" >&2; exit 2 ;;
	esac
done
extra=("$@")

# prepare, start and stop
source "$(dirname "${BASH_SOURCE[0]}")/lib-serve.sh"
prepare admin-load

status() { awk -v k="$1:" '$1 == k {print $2 / 1024 " MiB"}' "/proc/$pid/status"; }

run_case() {
	local name="$1"
	shift
	[[ -z "$only" || "$only" == "$name" ]] || return 0
	local dir="$work/$name" profile=()
	start "$dir"
	# The break-glass credential reads the heap profile (the admin of an
	# older data dir is system:masters itself).
	if [[ -n "$profiles" ]]; then
		mkdir -p "$profiles"
		local pk="$dir/super-admin.kubeconfig"
		[[ -s "$pk" ]] || pk="$dir/admin.kubeconfig"
		profile=(--profile-kubeconfig "$pk" --heap-profile "$profiles/$name.heap")
	fi
	echo "== $name ($("$customapi" version 2>/dev/null | head -1))"
	"$loader" --kubeconfig "$dir/admin.kubeconfig" --objects "$objects" --duration "$duration" "${profile[@]}" "$@"
	echo "server: VmHWM (peak RSS) $(status VmHWM), VmRSS at the end $(status VmRSS)"
	stop
}

run_case lists --lists 600 --watches 0
run_case lists+watches --lists 200 --watches 500

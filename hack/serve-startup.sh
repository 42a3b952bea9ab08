#!/usr/bin/env bash
# Measures the start-up time and idle memory of `customapi serve` with its
# defaults (embedded etcd, batteries, RBAC): docs/performance.md, "Start-up
# and idle memory".
#
# Usage:
#   hack/serve-startup.sh [--customapi PATH] [--runs N] [--idle SECONDS] [-- SERVE FLAGS...]
#
#   --customapi  a customapi binary; default: go build ./cmd/customapi
#   --runs       runs per case (default 5)
#   --idle       seconds to stay idle before reading the memory (default 30)
#   after --     more flags for customapi serve (for example --batteries=false)
#
# Each run starts serve on a free port (--secure-port 0) and reports the
# time from starting the process until /readyz answers 200 to the admin
# token, polled every 10 ms with curl: "first start" on an empty data dir
# (certificates, tokens, etcd and the bootstrap objects are created),
# "restart" on the data dir of the first start. After the restart it stays
# idle for --idle seconds and reports VmRSS and VmHWM of the process
# (/proc/PID/status). Run it on a quiet machine: the figures are wall time.
set -euo pipefail

customapi=""
runs=5
idle=30
while [[ $# -gt 0 ]]; do
	case "$1" in
	--customapi) customapi="$2"; shift 2 ;;
	--runs) runs="$2"; shift 2 ;;
	--idle) idle="$2"; shift 2 ;;
	--) shift; break ;;
	*) echo "unknown flag $1" >&2; exit 2 ;;
	esac
done
extra=("$@")

work="$(mktemp -d)"
trap 'kill "${pid:-0}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
if [[ -z "$customapi" ]]; then
	customapi="$work/customapi"
	go build -o "$customapi" ./cmd/customapi
fi

now() { date +%s.%N; }

# start DATADIR: starts serve and waits for /readyz; leaves the pid in $pid
# and the seconds taken in $elapsed.
start() {
	local dir="$1" t0 url token
	t0="$(now)"
	"$customapi" serve --data-dir "$dir" --secure-port 0 "${extra[@]}" >"$dir.log" 2>&1 &
	pid=$!
	until [[ -s "$dir/admin.kubeconfig" ]] && url="$(sed -n 's/^ *server: //p' "$dir/admin.kubeconfig" | head -1)" && [[ -n "$url" ]] &&
		token="$(sed -n "s/^\([^,]*\),admin,.*/\1/p" "$dir/tokens.csv" 2>/dev/null)" &&
		[[ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$dir/ca.crt" -H "Authorization: Bearer $token" "$url/readyz")" == 200 ]]; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "serve exited; log:" >&2
			cat "$dir.log" >&2
			exit 1
		fi
		sleep 0.01
	done
	elapsed="$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')"
}

stop() {
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}

printf '%-4s %-12s %-10s %-12s %-12s\n' run "first start" restart "idle RSS" "peak RSS"
for i in $(seq 1 "$runs"); do
	dir="$work/data-$i"
	start "$dir"
	first="$elapsed"
	stop
	start "$dir"
	again="$elapsed"
	sleep "$idle"
	rss="$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")"
	hwm="$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")"
	stop
	printf '%-4s %-12s %-10s %-12s %-12s\n' "$i" "${first}s" "${again}s" "$((rss / 1024)) MiB" "$((hwm / 1024)) MiB"
done

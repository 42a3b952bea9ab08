#!/usr/bin/env bash
# Measures the start-up time and idle memory of `customapi serve` with its
# defaults (embedded etcd, batteries, RBAC): docs/performance.md, "Start-up
# and idle memory".
#
# Usage:
#   hack/serve-startup.sh [--customapi PATH] [--runs N] [--idle SECONDS] [--objects N] [--curl] [-- SERVE FLAGS...]
#
#   --customapi  a customapi binary; default: go build ./cmd/customapi
#   --runs       runs per case (default 5)
#   --idle       seconds to stay idle before reading the memory (default 30)
#   --objects    instead: seed N Custom objects, then time --runs restarts
#                with them stored (the issue's case: 30000)
#   --curl       time readiness by polling /readyz with curl (see below)
#   after --     more flags for customapi serve (for example --batteries=false)
#
# Each run starts serve on a free port (--secure-port 0) and reports the
# time from starting the process until it is ready: "first start" on an
# empty data dir (certificates, tokens, etcd and the bootstrap objects are
# created), "restart" on the data dir of the first start. Ready is when
# serve prints "customapi is ready at URL", which it does once its /readyz
# answered 200 (server.Server.ReadyNotify), read from its standard output
# through a pipe; one curl then checks that /readyz answers 200 to the
# admin token over HTTPS. With --curl, ready is instead the first 200 of
# /readyz polled every 10 ms with curl (how figures before 2026-12-04 were
# taken): each poll starts three processes, whose CPU the starting server
# competes with on a small machine, and the polls are 20-30 ms apart, so
# that measure is 0.1-0.2 s longer. After the restart it stays
# idle for --idle seconds and reports VmRSS and VmHWM of the process
# (/proc/PID/status). Run it on a quiet machine: the figures are wall time.
#
# With --objects N it starts serve once on an empty data dir, writes N
# Custom objects into namespace default as the admin (hack/admin-load's
# seeding: 16 concurrent creates of custom-00000 ..., 256-byte messages),
# stops it, then restarts it --runs times on that data dir and reports the
# time to /readyz of each restart, and the process's RSS and CPU time (user
# and system) once ready (every watch cache holds the objects then:
# readiness waits for them).
set -euo pipefail

customapi=""
runs=5
idle=30
objects=0
curl=false
while [[ $# -gt 0 ]]; do
	case "$1" in
	--customapi) customapi="$2"; shift 2 ;;
	--runs) runs="$2"; shift 2 ;;
	--idle) idle="$2"; shift 2 ;;
	--objects) objects="$2"; shift 2 ;;
	--curl) curl=true; shift ;;
	--) shift; break ;;
	*) echo "unknown flag $1" >&2; exit 2 ;;
	esac
done
extra=("$@")

work="$(mktemp -d)"
pid=""
drain=""
# kill 0 would signal the whole process group: only the pids set.
trap 'for p in $pid $drain; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"' EXIT
if [[ -z "$customapi" ]]; then
	customapi="$work/customapi"
	go build -o "$customapi" ./cmd/customapi
fi

now() { date +%s.%N; }

# start DATADIR: starts serve and waits until it is ready; leaves the pid
# in $pid and the seconds taken in $elapsed.
start() {
	if [[ "$curl" == true ]]; then
		start_curl "$@"
		return
	fi
	local dir="$1" t0 url token fifo="$work/serve.out" fd line
	rm -f "$fifo"
	mkfifo "$fifo"
	# Read-write, so that opening it does not wait for serve.
	exec {fd}<>"$fifo"
	t0="$(now)"
	"$customapi" serve --data-dir "$dir" --secure-port 0 "${extra[@]}" >"$fifo" 2>"$dir.log" &
	pid=$!
	while :; do
		if ! IFS= read -r -t 120 -u "$fd" line; then
			echo "serve not ready within 120 s; log:" >&2
			cat "$dir.log" >&2
			exit 1
		fi
		[[ "$line" == "customapi is ready at "* ]] && break
	done
	elapsed="$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')"
	# The rest of its output, until stop.
	cat <&"$fd" >>"$dir.log" &
	drain=$!
	exec {fd}<&-
	url="${line#customapi is ready at }"
	url="${url%%;*}"
	token="$(sed -n "s/^\([^,]*\),admin,.*/\1/p" "$dir/tokens.csv")"
	code="$(curl -s -o /dev/null -w '%{http_code}' --cacert "$dir/ca.crt" -H "Authorization: Bearer $token" "$url/readyz")"
	if [[ "$code" != 200 ]]; then
		echo "serve said it is ready at $url, but /readyz answered $code" >&2
		exit 1
	fi
}

# start_curl DATADIR: start, polling /readyz with curl (--curl).
start_curl() {
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

# cpu_seconds PID: the user and system CPU the process has used so far
# (/proc/PID/stat's utime and stime, in clock ticks).
cpu_seconds() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}

stop() {
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	if [[ -n "$drain" ]]; then
		kill "$drain" 2>/dev/null || true
		wait "$drain" 2>/dev/null || true
		drain=""
	fi
}

if [[ "$objects" -gt 0 ]]; then
	loader="$work/admin-load"
	go build -o "$loader" ./hack/admin-load
	dir="$work/data-objects"
	start "$dir"
	echo "empty data dir: ${elapsed}s to /readyz"
	"$loader" --kubeconfig "$dir/admin.kubeconfig" --objects "$objects" --lists 0 --writer=false --wait-for-count=false --duration 1ms | grep '^seed:'
	stop
	printf '%-4s %-10s %-12s %-10s\n' run restart "RSS ready" "CPU ready"
	for i in $(seq 1 "$runs"); do
		start "$dir"
		rss="$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")"
		cpu="$(cpu_seconds "$pid")"
		stop
		printf '%-4s %-10s %-12s %-10s\n' "$i" "${elapsed}s" "$((rss / 1024)) MiB" "${cpu}s"
	done
	exit 0
fi

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

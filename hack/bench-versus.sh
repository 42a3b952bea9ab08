#!/usr/bin/env bash
# Measures two builds of customapi side by side in one `customapi bench` run
# (the before/after comparison docs/performance.md asks for when the request
# path changes): each binary serves customs and samples on an embedded etcd
# of its own, on 127.0.0.1, and the NEW binary's bench drives raw etcd and
# both servers in alternating rounds.
#
# Usage:
#   hack/bench-versus.sh OLD_BINARY NEW_BINARY [BENCH FLAGS...]
#
# for example, main before a change against the working tree:
#   git worktree add /tmp/old HEAD~3 && (cd /tmp/old && go build -o /tmp/old-customapi ./cmd/customapi)
#   go build -o /tmp/new-customapi ./cmd/customapi
#   hack/bench-versus.sh /tmp/old-customapi /tmp/new-customapi --rounds 5
#
# The table lists the OLD server's rows first, then the NEW server's (both
# named after the kubeconfig context, "customapi"). Logs and data dirs are
# in a temporary directory, removed at the end.
set -euo pipefail
if [[ $# -lt 2 ]]; then
	sed -n '2,18p' "$0" >&2
	exit 2
fi
old=$1 new=$2
shift 2
dir=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() { # NAME BINARY
	"$2" serve --data-dir "$dir/$1" --secure-port "$(free_port)" --resources customs,samples >"$dir/$1.log" 2>&1 &
	pids+=("$!")
}
start old "$old"
start new "$new"
for name in old new; do
	for _ in $(seq 1 240); do
		if [[ -f $dir/$name/admin.kubeconfig ]] && kubectl --kubeconfig "$dir/$name/admin.kubeconfig" get --raw /readyz >/dev/null 2>&1; then
			continue 2
		fi
		sleep 0.25
	done
	echo "bench-versus: the $name server did not become ready; its log:" >&2
	cat "$dir/$name.log" >&2
	exit 1
done
"$new" bench --target "etcd,kubeconfig=$dir/old/admin.kubeconfig@pid=${pids[0]},kubeconfig=$dir/new/admin.kubeconfig@pid=${pids[1]}" "$@"

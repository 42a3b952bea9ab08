#!/usr/bin/env bash
# Measures two or more builds of customapi side by side in one `customapi
# bench` run (the before/after comparison docs/performance.md asks for when
# the request path changes): each binary serves customs and samples on an
# embedded etcd of its own, on 127.0.0.1, and the last binary's bench drives
# raw etcd and every server in alternating rounds.
#
# Usage:
#   hack/bench-versus.sh OLD_BINARY NEW_BINARY [MORE_BINARIES...] [BENCH FLAGS...]
#
# for example, main before a change against the working tree:
#   git worktree add /tmp/old HEAD~3 && (cd /tmp/old && go build -o /tmp/old-customapi ./cmd/customapi)
#   go build -o /tmp/new-customapi ./cmd/customapi
#   hack/bench-versus.sh /tmp/old-customapi /tmp/new-customapi --rounds 5
#
# The binaries are the arguments before the first one that starts with "-".
# A binary may be a script that ends in `exec REAL_BINARY "$@"` (to set an
# environment variable such as GOGC, or to add serve flags). The table
# lists each server's rows in the order of the arguments (all named after
# the kubeconfig context, "customapi"). Logs and data dirs are in a
# temporary directory, removed at the end.
set -euo pipefail
bins=()
while [[ $# -gt 0 && $1 != -* ]]; do
	bins+=("$1")
	shift
done
if [[ ${#bins[@]} -lt 2 ]]; then
	sed -n '2,21p' "$0" >&2
	exit 2
fi
dir=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
targets=etcd
for i in "${!bins[@]}"; do
	"${bins[$i]}" serve --data-dir "$dir/s$i" --secure-port "$(free_port)" --resources customs,samples >"$dir/s$i.log" 2>&1 &
	pids+=("$!")
done
for i in "${!bins[@]}"; do
	for _ in $(seq 1 240); do
		if [[ -f $dir/s$i/admin.kubeconfig ]] && kubectl --kubeconfig "$dir/s$i/admin.kubeconfig" get --raw /readyz >/dev/null 2>&1; then
			targets+=",kubeconfig=$dir/s$i/admin.kubeconfig@pid=${pids[$i]}"
			continue 2
		fi
		sleep 0.25
	done
	echo "bench-versus: the server of ${bins[$i]} did not become ready; its log:" >&2
	cat "$dir/s$i.log" >&2
	exit 1
done
"${bins[-1]}" bench --target "$targets" "$@"

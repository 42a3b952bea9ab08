#!/usr/bin/env bash
# The long form of the highly available cluster's fault suite
# (test/cluster): TestClusterFaults with more cycles of its faults
# (SIGKILL of a follower's and of the leader's server, SIGSTOP of a server
# for 5 s, a rolling restart, SIGKILL of all three), then
# TestClusterQuorumLost and TestClusterOnlineStorage, and prints the lines
# with the figures docs/serving.md quotes: per fault, writes acknowledged
# and failed, and how long new writes were refused through each server
# and through all of them at once; per watcher, events and relists; the
# totals (acknowledged, lost, duplicated); the CPU time of a server without
# quorum; the online migration's and rewrite's counts.
#
# Usage:
#   hack/cluster-faults.sh [--cycles N]
#
#   --cycles  how many times each fault is injected (default 5; CI runs 1)
#
# It takes about a minute per cycle on a 2-core machine, plus two for the
# other tests. Run it on a quiet machine: the refusal windows are wall
# time.
set -euo pipefail

cycles=5
while [[ $# -gt 0 ]]; do
	case "$1" in
	--cycles) cycles="$2"; shift 2 ;;
	*) echo "usage: $0 [--cycles N]" >&2; exit 2 ;;
	esac
done

cd "$(dirname "$0")/.."
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
status=0
go test ./test/cluster -run '^(TestClusterFaults|TestClusterQuorumLost|TestClusterOnlineStorage)$' -count=1 -v \
	-timeout "$((10 + 3 * cycles))m" -args -cluster.cycles="$cycles" >"$out" 2>&1 || status=$?
grep -E '^\s+(faults|load|storage)_test\.go:[0-9]+: ' "$out" | grep -v 'ready in' | sed -E 's/^\s+//' || true
grep -E '^(--- |ok|FAIL)' "$out" || true
if [[ $status -ne 0 ]]; then
	echo "$0: the suite failed; its output's end:" >&2
	tail -60 "$out" >&2
fi
exit $status

#!/usr/bin/env bash
# Measures what audit costs the request path: `customapi bench` against
# `customapi serve` started by this script (a kubeconfig target, with the
# server's pid for memory and CPU), once per case, in one session:
#
#   base   --base's binary (for example main's), no audit flags
#   off    --customapi's binary, no audit flags
#   audit  --customapi's binary, a Metadata policy for everything, logged
#          to a file in the data dir (--audit-log-path, kube's defaults:
#          json, blocking mode, rotation at 100 MB)
#
# Usage:
#   hack/bench-audit.sh --customapi PATH [--base PATH] [--rounds N] [-- BENCH FLAGS...]
#
# The cases run in turn, --rounds times (default 1), with the same bench
# flags (after --; default: a mid-size run, see below). Run it on a quiet
# machine: figures are only comparable within one session.
set -euo pipefail

customapi=""
base=""
rounds=1
while [[ $# -gt 0 ]]; do
	case "$1" in
	--customapi) customapi="$2"; shift 2 ;;
	--base) base="$2"; shift 2 ;;
	--rounds) rounds="$2"; shift 2 ;;
	--) shift; break ;;
	*) echo "unknown flag $1" >&2; exit 2 ;;
	esac
done
if [[ -z "$customapi" ]]; then
	echo "--customapi PATH is required" >&2
	exit 2
fi
benchflags=("$@")
if [[ ${#benchflags[@]} -eq 0 ]]; then
	benchflags=(--creates 1000 --create-workers 1,16 --gets 2000 --updates 1000 --list-objects 2000 --list-runs 5 --watchers 20 --watch-updates 100)
fi

work="$(mktemp -d)"
pid=""
trap 'if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
cat >"$work/policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
EOF

run_case() { # name binary serve-flags...
	local name="$1" bin="$2"
	shift 2
	local dir="$work/$name"
	rm -rf "$dir" "$dir.audit.log"
	"$bin" serve --data-dir "$dir" --secure-port 0 --resources customs,samples "$@" >"$work/$name.log" 2>&1 &
	pid=$!
	for _ in $(seq 600); do
		[[ -f "$dir/admin.kubeconfig" ]] && break
		sleep 0.1
	done
	echo "== $name ($bin $*)"
	"$customapi" bench --target "kubeconfig=$dir/admin.kubeconfig@pid=$pid" "${benchflags[@]}" 2>/dev/null
	if [[ -f "$dir.audit.log" ]]; then
		echo "audit log: $(wc -l <"$dir.audit.log") events, $(du -h "$dir.audit.log" | cut -f1)"
	fi
	kill "$pid"
	wait "$pid" || true
	pid=""
}

for _ in $(seq "$rounds"); do
	if [[ -n "$base" ]]; then
		run_case base "$base"
	fi
	run_case off "$customapi"
	run_case audit "$customapi" --audit-policy-file "$work/policy.yaml" --audit-log-path "$work/audit.audit.log"
done

#!/usr/bin/env bash
# Measures customapi next to kube-apiserver with an equivalent CRD, side by
# side in one run on this machine, with one independent load generator
# (`customapi bench --target kubeconfig=A,kubeconfig=B,...`): the peer
# comparison of docs/performance.md.
#
# Usage:
#   hack/bench-peer.sh [--kube-apiserver PATH] [--targets LIST] [--etcd PATH]
#                      [--customapi PATH] [--rounds N] [--quick] [--out DIR]
#                      [-- BENCH FLAGS...]
#
#   --targets         comma-separated servers to measure (default: all three):
#                       kube           kube-apiserver with docs/bench/samples-crd.yaml applied
#                       customapi      `customapi serve --resources samples`: samples as the
#                                      compiled-in Go type (pkg/apis/bench/v1)
#                       customapi-crd  `customapi serve --resources customs` (bench.customapi.io
#                                      left free) with docs/bench/samples-crd.yaml applied:
#                                      the same samples as a custom resource
#                     every one is measured on the same resource path,
#                     bench.customapi.io/v1/samples
#   --kube-apiserver  a kube-apiserver binary (v1.37.2 for the published figures);
#                     required when --targets names kube
#   --etcd            an etcd binary; default: go build ./hack/tools/etcd (ours, v3.7.3)
#   --customapi       a customapi binary; default: go build ./cmd/customapi
#   --rounds          rounds, each on fresh etcds and fresh servers (default 2);
#                     the order of the targets rotates by one between rounds
#   --quick           tiny sizes (customapi bench --quick): proves the setup, figures meaningless
#   --out             directory for logs and results (default: a new temporary directory, kept)
#   after --          more flags for customapi bench (for example --content-type cbor)
#
# Environment: KUBE_APISERVER_FLAGS, CUSTOMAPI_SERVE_FLAGS: more flags for the
# servers (split on spaces), for example
# KUBE_APISERVER_FLAGS=--feature-gates=CBORServingAndStorage=true for CBOR.
#
# Each round starts, on 127.0.0.1 free ports, one etcd process per server
# (fsync on, etcd's default); kube-apiserver with minimal flags (generated
# ECDSA serving certificate, RSA service-account keys, a token file with one
# system:masters token, authorization left at its default, AlwaysAllow as in
# customapi) with docs/bench/samples-crd.yaml applied; and the customapi
# servers (serve's defaults otherwise: CustomResourceDefinitions on, batteries)
# with the same token file. Every server is up for the whole round; the bench
# starts 2.5 s after the last CRD was served (apiextensions' 2 s guard on
# creates right after Established is a one-time cost per CRD). It
# reports, per server: ready time (process start to the first /readyz 200;
# for a CRD target, also to the CRD's resource in discovery), and from /proc
# at the end of the round the server's and its etcd's CPU seconds and RSS;
# the bench table adds RSS before and after loading the list objects (10,000
# by default) and the server CPU over the workloads. Every process it starts
# is stopped by its pid at the end, also on Ctrl-C.
#
# Needs bash, openssl, curl and go (unless binaries are given). Linux only (/proc).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kube_apiserver="" etcd_bin="" customapi_bin="" rounds=2 quick="" out="" targets_flag="customapi,customapi-crd,kube"
bench_extra=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--kube-apiserver) kube_apiserver="$2"; shift 2 ;;
	--targets) targets_flag="$2"; shift 2 ;;
	--etcd) etcd_bin="$2"; shift 2 ;;
	--customapi) customapi_bin="$2"; shift 2 ;;
	--rounds) rounds="$2"; shift 2 ;;
	--quick) quick="--quick"; shift ;;
	--out) out="$2"; shift 2 ;;
	--) shift; bench_extra=("$@"); break ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-peer.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
IFS=, read -r -a names <<<"$targets_flag"
[[ ${#names[@]} -gt 0 ]] || { echo "bench-peer.sh: --targets names no server" >&2; exit 2; }
seen=" "
for name in "${names[@]}"; do
	case "$name" in
	kube | customapi | customapi-crd) ;;
	*) echo "bench-peer.sh: unknown target $name in --targets (kube, customapi, customapi-crd)" >&2; exit 2 ;;
	esac
	[[ "$seen" == *" $name "* ]] && { echo "bench-peer.sh: $name is named twice in --targets" >&2; exit 2; }
	seen+="$name "
done
if [[ "$seen" == *" kube "* ]]; then
	[[ -n "$kube_apiserver" ]] || { echo "bench-peer.sh: --kube-apiserver PATH is required for the kube target" >&2; exit 2; }
	[[ -x "$kube_apiserver" ]] || { echo "bench-peer.sh: $kube_apiserver is not an executable" >&2; exit 2; }
fi
for tool in openssl curl; do
	command -v "$tool" >/dev/null || { echo "bench-peer.sh: $tool is needed" >&2; exit 2; }
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench-peer.sh: --rounds must be a positive integer" >&2; exit 2; }

out="${out:-$(mktemp -d /tmp/bench-peer-XXXXXX)}"
mkdir -p "$out/bin"
out="$(cd "$out" && pwd)"
if [[ -z "$etcd_bin" ]]; then
	(cd "$repo" && GOFLAGS=-buildvcs=false go build -o "$out/bin/etcd" ./hack/tools/etcd)
	etcd_bin="$out/bin/etcd"
fi
if [[ -z "$customapi_bin" ]]; then
	(cd "$repo" && GOFLAGS=-buildvcs=false go build -o "$out/bin/customapi" ./cmd/customapi)
	customapi_bin="$out/bin/customapi"
fi
[[ -n "$kube_apiserver" ]] && echo "kube-apiserver: $("$kube_apiserver" --version 2>&1)"
echo "targets:        ${names[*]}"
echo "etcd:           $("$etcd_bin" --version 2>&1 | head -1)"
echo "customapi:      $customapi_bin"
echo "results and logs: $out"

pids=()
script=bench-peer.sh
# shellcheck source=hack/lib-peer.sh
source "$repo/hack/lib-peer.sh"
stop_all() {
	local pid
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	pids=()
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# cpu_seconds PID: user+system CPU seconds of a process (/proc, 100 ticks/s).
cpu_seconds() {
	local stat
	stat="$(cat "/proc/$1/stat")"
	stat="${stat##*) }"
	read -r -a f <<<"$stat"
	echo "$(((f[11] + f[12]) / 100)).$(printf '%02d' $(((f[11] + f[12]) % 100)))"
}

# rss_mb PID: resident set size in MB.
rss_mb() {
	awk '/^VmRSS:/ { printf "%.1f", $2 * 1024 / 1e6 }' "/proc/$1/status"
}

# wait_ready NAME PID URL START: polls URL/readyz with the token until 200
# (at most 120 s) and prints the seconds since START (date +%s%N).
wait_ready() {
	local name="$1" pid="$2" url="$3" start="$4" code
	for _ in $(seq 6000); do
		code="$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "$url/readyz" || true)"
		if [[ "$code" == 200 ]]; then
			local now
			now="$(date +%s%N)"
			echo "$(((now - start) / 1000000))" | awk '{ printf "%.2f", $1 / 1000 }'
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	echo "bench-peer.sh: $name did not become ready" >&2
	return 1
}

# apply_crd NAME URL CA DIR: creates docs/bench/samples-crd.yaml on the
# server at URL and waits (at most 60 s) until discovery lists samples.
apply_crd() {
	local name="$1" url="$2" ca="$3" dir="$4" code i
	code="$(curl -s --cacert "$ca" -H "Authorization: Bearer $token" -H 'Content-Type: application/yaml' \
		-o "$dir/$name-crd-create.json" -w '%{http_code}' --data-binary @"$repo/docs/bench/samples-crd.yaml" \
		"$url/apis/apiextensions.k8s.io/v1/customresourcedefinitions")"
	[[ "$code" == 201 ]] || { echo "bench-peer.sh: creating the CRD on $name answered $code:" >&2; cat "$dir/$name-crd-create.json" >&2; exit 1; }
	for i in $(seq 600); do
		if curl -sf --cacert "$ca" -H "Authorization: Bearer $token" \
			"$url/apis/bench.customapi.io/v1" 2>/dev/null | grep -q '"samples"'; then
			last_crd_served="$(date +%s%N)"
			return 0
		fi
		sleep 0.1
	done
	echo "bench-peer.sh: the CRD was not served by $name within 60 s" >&2
	exit 1
}

# settle_crds: apiextensions-apiserver makes every create of a custom resource
# sleep 2 s while its CRD's Established condition is younger than 2 s (a
# guard for HA servers; kube-apiserver and customapi alike). That is a
# one-time cost per CRD, not request cost: wait it out before the bench so
# that the first create batch does not carry it. Established is set before
# discovery lists the resource, and its time is truncated to the second, so
# 2.5 s after the last CRD was seen in discovery is past the guard.
last_crd_served=0
settle_crds() {
	local left
	((last_crd_served > 0)) || return 0
	left=$((last_crd_served + 2500000000 - $(date +%s%N)))
	((left > 0)) && sleep "$(awk -v n="$left" 'BEGIN { printf "%.3f", n / 1e9 }')"
	return 0
}

# since START: seconds since START (date +%s%N), two decimals.
since() {
	local now
	now="$(date +%s%N)"
	echo "$(((now - $1) / 1000000))" | awk '{ printf "%.2f", $1 / 1000 }'
}

# start_kube DIR: kube-apiserver on an etcd of its own, the CRD applied;
# sets pid[kube], etcd_of[kube], ready[kube], crd_ready[kube] and writes
# DIR/kube.kubeconfig.
start_kube() {
	local dir="$1" port t0 url
	start_etcd "$dir/kube-etcd"
	etcd_of[kube]="$etcd_pid"
	port="$(free_port)"
	url="https://127.0.0.1:$port"
	t0="$(date +%s%N)"
	"$kube_apiserver" --etcd-servers "$etcd_url" --bind-address 127.0.0.1 --secure-port "$port" \
		--tls-cert-file "$dir/pki/serving.crt" --tls-private-key-file "$dir/pki/serving.key" \
		--cert-dir "$dir/kube-certs" --token-auth-file "$dir/pki/tokens.csv" \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "$dir/pki/sa.pub" --service-account-signing-key-file "$dir/pki/sa.key" \
		${KUBE_APISERVER_FLAGS:-} >"$dir/kube-apiserver.log" 2>&1 &
	pid[kube]=$!
	pids+=("${pid[kube]}")
	ready[kube]="$(wait_ready kube-apiserver "${pid[kube]}" "$url" "$t0")" || {
		tail -30 "$dir/kube-apiserver.log" >&2
		exit 1
	}
	kubeconfig "$dir/kube.kubeconfig" kube-apiserver "$url" "$dir/pki/serving.crt"
	apply_crd kube "$url" "$dir/pki/serving.crt" "$dir"
	crd_ready[kube]="$(since "$t0")s"
}

# start_customapi NAME RESOURCES DIR: customapi serve --resources RESOURCES
# on an etcd of its own (the CRD applied for customapi-crd); sets pid[NAME],
# etcd_of[NAME], ready[NAME], crd_ready[NAME] and writes DIR/NAME.kubeconfig.
start_customapi() {
	local name="$1" resources="$2" dir="$3" port t0 url
	start_etcd "$dir/$name-etcd"
	etcd_of[$name]="$etcd_pid"
	port="$(free_port)"
	url="https://127.0.0.1:$port"
	t0="$(date +%s%N)"
	"$customapi_bin" serve --data-dir "$dir/$name" --bind-address 127.0.0.1 --secure-port "$port" \
		--etcd-servers "$etcd_url" --resources "$resources" --token-auth-file "$dir/pki/tokens.csv" \
		${CUSTOMAPI_SERVE_FLAGS:-} >"$dir/$name.log" 2>&1 &
	pid[$name]=$!
	pids+=("${pid[$name]}")
	ready[$name]="$(wait_ready "$name" "${pid[$name]}" "$url" "$t0")" || {
		tail -30 "$dir/$name.log" >&2
		exit 1
	}
	[[ -f "$dir/$name/ca.crt" ]] || { echo "bench-peer.sh: no CA at $dir/$name/ca.crt" >&2; exit 1; }
	kubeconfig "$dir/$name.kubeconfig" "$name" "$url" "$dir/$name/ca.crt"
	crd_ready[$name]="-"
	if [[ "$name" == customapi-crd ]]; then
		apply_crd "$name" "$url" "$dir/$name/ca.crt" "$dir"
		crd_ready[$name]="$(since "$t0")s"
	fi
}

# kubeconfig FILE CONTEXT URL CA: writes a kubeconfig with the token.
kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $2
  cluster:
    server: $3
    certificate-authority: $4
users:
- name: admin
  user:
    token: $token
contexts:
- name: $2
  context:
    cluster: $2
    user: admin
current-context: $2
EOF
}

declare -A pid etcd_of ready crd_ready
for round in $(seq "$rounds"); do
	dir="$out/round-$round"
	rm -rf "$dir"
	mkdir -p "$dir/pki"
	echo
	echo "== round $round of $rounds ($dir)"

	# Credentials shared by the servers: one bearer token of a
	# system:masters user.
	token="$(kube_credentials "$dir/pki" 2)"

	pid=() etcd_of=() ready=() crd_ready=() last_crd_served=0
	for name in "${names[@]}"; do
		case "$name" in
		kube) start_kube "$dir" ;;
		customapi) start_customapi customapi samples "$dir" ;;
		customapi-crd) start_customapi customapi-crd customs "$dir" ;;
		esac
	done

	# The order of the targets rotates by one each round.
	order=()
	n=${#names[@]}
	for i in $(seq 0 $((n - 1))); do
		order+=("${names[$(((i + round - 1) % n))]}")
	done
	targets=""
	for name in "${order[@]}"; do
		targets+="${targets:+,}kubeconfig=$dir/$name.kubeconfig@pid=${pid[$name]}"
	done
	settle_crds
	echo "order: ${order[*]}"
	for name in "${names[@]}"; do
		echo "ready: $name ${ready[$name]}s (process start to /readyz 200)"
	done
	"$customapi_bin" bench $quick --target "$targets" --resource bench.customapi.io/v1/samples \
		--content-type json "${bench_extra[@]}" 2>"$dir/bench.progress" | tee "$dir/bench.txt"

	{
		printf '%-16s %10s %12s %14s %10s %16s\n' SERVER READY CRD-SERVED CPU-SECONDS RSS-MB ETCD-CPU-SECONDS
		for name in "${names[@]}"; do
			label="$name"
			[[ "$name" == kube ]] && label=kube-apiserver
			printf '%-16s %9ss %12s %14s %10s %16s\n' "$label" "${ready[$name]}" "${crd_ready[$name]}" \
				"$(cpu_seconds "${pid[$name]}")" "$(rss_mb "${pid[$name]}")" "$(cpu_seconds "${etcd_of[$name]}")"
		done
		echo "(READY: process start to /readyz 200; CRD-SERVED: process start to samples in discovery after"
		echo " creating the CRD; CPU and RSS at the end of the round, from /proc; CPU includes start-up and the CRD's setup)"
	} | tee "$dir/servers.txt"
	stop_all
done
echo
echo "done: $out/round-*/bench.txt and servers.txt"

#!/usr/bin/env bash
# Runs the scale benchmark (`customapi bench --scale`) on kube-apiserver with
# the samples CRD (docs/bench/samples-crd.yaml), next to customapi serve on
# an external etcd of the same kind, in one run on this machine: the peer
# rows of docs/performance.md's scale table.
#
# Usage:
#   hack/scale-peer.sh --kube-apiserver PATH [--sizes N,N...] [--targets LIST]
#                      [--customapi PATH] [--etcd PATH] [--out DIR] [-- BENCH FLAGS...]
#
#   --kube-apiserver  a kube-apiserver binary (v1.37.2 for the published figures;
#                     docs/performance.md, "Reproducing the peer comparison", builds it)
#   --sizes           store sizes, ascending (default 100000,300000)
#   --targets         kube, customapi or both (default kube,customapi), measured one
#                     after the other, each on an etcd process of its own
#   --customapi       a customapi binary (default: go build ./cmd/customapi); it runs
#                     the benchmark for both targets
#   --etcd            an etcd binary (default: go build ./hack/tools/etcd)
#   --out             directory for data, logs and results (default: a new temporary one, kept)
#   after --          more flags for customapi bench, for example --scale-restarts 1
#
# Each target gets an etcd process (fsync on, --quota-backend-bytes 8 GiB, like
# the embedded etcd) and a data directory under --out; the samples are written
# into that etcd by the benchmark (copies of the bytes the server stored for
# one sample). kube-apiserver runs with minimal flags (an ECDSA serving
# certificate, service-account keys, a token file with one system:masters
# token), customapi serve with --etcd-servers and its defaults. Results:
# OUT/TARGET.txt (the scale table); progress and logs in OUT/TARGET/.
#
# Needs bash, openssl, curl and go (unless binaries are given). Linux only (/proc).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kube_apiserver="" customapi_bin="" etcd_bin="" out="" sizes="100000,300000" targets_flag="kube,customapi"
bench_extra=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--kube-apiserver) kube_apiserver="$2"; shift 2 ;;
	--sizes) sizes="$2"; shift 2 ;;
	--targets) targets_flag="$2"; shift 2 ;;
	--customapi) customapi_bin="$2"; shift 2 ;;
	--etcd) etcd_bin="$2"; shift 2 ;;
	--out) out="$2"; shift 2 ;;
	--) shift; bench_extra=("$@"); break ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "scale-peer.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
IFS=, read -r -a targets <<<"$targets_flag"
for t in "${targets[@]}"; do
	case "$t" in
	kube) [[ -x "$kube_apiserver" ]] || { echo "scale-peer.sh: --kube-apiserver PATH (an executable) is required for the kube target" >&2; exit 2; } ;;
	customapi) ;;
	*) echo "scale-peer.sh: unknown target $t (kube, customapi)" >&2; exit 2 ;;
	esac
done
for tool in openssl curl; do
	command -v "$tool" >/dev/null || { echo "scale-peer.sh: $tool is needed" >&2; exit 2; }
done

out="${out:-$(mktemp -d /tmp/scale-peer-XXXXXX)}"
mkdir -p "$out/bin"
out="$(cd "$out" && pwd)"
if [[ -z "$etcd_bin" ]]; then
	(cd "$repo" && go build -o "$out/bin/etcd" ./hack/tools/etcd)
	etcd_bin="$out/bin/etcd"
fi
if [[ -z "$customapi_bin" ]]; then
	(cd "$repo" && go build -o "$out/bin/customapi" ./cmd/customapi)
	customapi_bin="$out/bin/customapi"
fi
echo "results and logs: $out"

pids=()
script=scale-peer.sh
# shellcheck source=hack/lib-peer.sh
source "$repo/hack/lib-peer.sh"
stop_all() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
}
trap stop_all EXIT
trap 'exit 130' INT TERM

for target in "${targets[@]}"; do
	dir="$out/$target"
	mkdir -p "$dir"
	echo
	echo "== $target ($dir)"
	start_etcd "$dir/etcd" --quota-backend-bytes $((8 << 30))
	bench=("$customapi_bin" bench --scale "$sizes" --scale-dir "$dir/scale" --scale-etcd-servers "$etcd_url")
	if [[ "$target" == kube ]]; then
		[[ -f "$dir/pki/tokens.csv" ]] || kube_credentials "$dir/pki" 30 >/dev/null
		token="$(cut -d, -f1 "$dir/pki/tokens.csv")"
		port="$(free_port)"
		url="https://127.0.0.1:$port"
		kube=("$kube_apiserver" --etcd-servers "$etcd_url" --bind-address 127.0.0.1 --secure-port "$port"
			--tls-cert-file "$dir/pki/serving.crt" --tls-private-key-file "$dir/pki/serving.key"
			--cert-dir "$dir/kube-certs" --token-auth-file "$dir/pki/tokens.csv"
			--service-account-issuer https://kubernetes.default.svc.cluster.local
			--service-account-key-file "$dir/pki/sa.pub" --service-account-signing-key-file "$dir/pki/sa.key")
		cat >"$dir/kube.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kube-apiserver
  cluster:
    server: $url
    certificate-authority: $dir/pki/serving.crt
users:
- name: admin
  user:
    token: $token
contexts:
- name: kube-apiserver
  context:
    cluster: kube-apiserver
    user: admin
current-context: kube-apiserver
EOF
		# The CRD, once (it stays in etcd): start kube-apiserver, create it,
		# wait until discovery serves samples, stop.
		"${kube[@]}" >"$dir/kube-apiserver-crd.log" 2>&1 &
		kpid=$!
		for _ in $(seq 600); do
			[[ "$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "$url/readyz")" == 200 ]] && break
			sleep 0.1
		done
		curl -sk -o /dev/null -H "Authorization: Bearer $token" -H 'Content-Type: application/yaml' \
			--data-binary @"$repo/docs/bench/samples-crd.yaml" "$url/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
		for _ in $(seq 600); do
			curl -sk -H "Authorization: Bearer $token" "$url/apis/bench.customapi.io/v1" | grep -q '"samples"' && break
			sleep 0.1
		done
		kill -TERM "$kpid"
		wait "$kpid" || true
		bench+=(--scale-server-command "${kube[*]}" --scale-kubeconfig "$dir/kube.kubeconfig")
	fi
	"${bench[@]}" "${bench_extra[@]}" 2>"$dir/bench.progress" | tee "$out/$target.txt"
	stop_all
done
echo
echo "done: $out/*.txt"

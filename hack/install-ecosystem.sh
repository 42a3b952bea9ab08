#!/usr/bin/env bash
# Installs the tools test/ecosystem drives against `customapi serve`, at
# the versions pinned below, and prints what it installed and how long each
# took:
#
#   helm      helm.sh/helm/v4/cmd/helm, built with `go install` from the
#             module proxy into $dir (outside customapi's module: its
#             go.mod and go.sum stay as they are)
#   k9s       github.com/derailed/k9s, built the same way into $dir
#   tmux      Debian's package (k9s runs in it), with apt-get
#   python    Debian's python3-kubernetes (the official Python client, for
#             /usr/bin/python3), with apt-get
#   node      @kubernetes/client-node, `npm ci` of
#             test/ecosystem/testdata/node/package-lock.json into $dir/node
#
# Usage:
#
#   hack/install-ecosystem.sh [TOOL...]     # default: all of the above
#
# $dir is $CUSTOMAPI_ECOSYSTEM_DIR, or bin/ecosystem in the repository (git
# ignores bin/); test/ecosystem looks there. It is idempotent: a tool
# already at its pinned version is left alone (reported as "already
# installed"). apt-get needs root; the Go builds need the module proxy and
# take minutes on a cold build cache.
set -euo pipefail

helm_module=helm.sh/helm/v4
helm_version=v4.3.2
k9s_module=github.com/derailed/k9s
k9s_version=v0.50.16
tmux_deb=3.3a-3
python_kubernetes_deb=22.6.0-2

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
if ! command -v go >/dev/null 2>&1; then
	export PATH="/usr/local/go/bin:$PATH"
fi
dir=${CUSTOMAPI_ECOSYSTEM_DIR:-$repo/bin/ecosystem}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

summary=()
# report TOOL WHAT START: prints and records "TOOL: WHAT (Ns)".
report() {
	local line
	line=$(printf '%-7s %s (%ds)' "$1:" "$2" $((SECONDS - $3)))
	echo "$line"
	summary+=("$line")
}

# go_binary_version BIN: the module version `go version -m` records in BIN
# ("" if BIN is missing or not a Go binary).
go_binary_version() {
	[[ -x "$1" ]] || return 0
	go version -m "$1" 2>/dev/null | awk '$1 == "mod" { print $3; exit }'
}

# go_install NAME PACKAGE MODULE VERSION: builds PACKAGE@VERSION into
# $dir/NAME unless it is there at VERSION.
go_install() {
	local name=$1 pkg=$2 module=$3 version=$4 start=$SECONDS have work
	have=$(go_binary_version "$dir/$name")
	if [[ $have == "$version" ]]; then
		report "$name" "$module $version already installed in $dir" "$start"
		return
	fi
	# Outside any module, so that nothing here can touch customapi's go.mod.
	work=$(mktemp -d)
	(cd "$work" && GOBIN="$dir" GOFLAGS=-mod=mod GOWORK=off go install "$pkg@$version")
	rm -rf "$work"
	have=$(go_binary_version "$dir/$name")
	if [[ $have != "$version" ]]; then
		echo "$dir/$name reports module version '$have', want $version" >&2
		exit 1
	fi
	report "$name" "built $module $version into $dir/$name" "$start"
}

apt_updated=""
# apt_install PACKAGE VERSION: installs Debian's PACKAGE=VERSION unless it
# is installed at VERSION.
apt_install() {
	local pkg=$1 version=$2 start=$SECONDS have
	have=$(dpkg-query -W -f '${db:Status-Abbrev} ${Version}' "$pkg" 2>/dev/null || true)
	if [[ $have == "ii  $version" ]]; then
		report "$pkg" "$version already installed" "$start"
		return
	fi
	if [[ -z $apt_updated ]]; then
		apt-get update -qq
		apt_updated=yes
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg=$version" >/dev/null
	report "$pkg" "installed $version with apt-get" "$start"
}

# npm_install: npm ci of testdata/node's lock file into $dir/node, unless
# that exact lock file was installed there already.
npm_install() {
	local src=$repo/test/ecosystem/testdata/node dst=$dir/node start=$SECONDS sum
	sum=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
	if [[ -d $dst/node_modules && "$(cat "$dst/.installed" 2>/dev/null)" == "$sum" ]]; then
		report node "@kubernetes/client-node $(node_client_version "$dst") already installed in $dst" "$start"
		return
	fi
	mkdir -p "$dst"
	cp "$src/package.json" "$src/package-lock.json" "$dst/"
	(cd "$dst" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	echo "$sum" >"$dst/.installed"
	report node "installed @kubernetes/client-node $(node_client_version "$dst") with npm ci into $dst (node $(node --version))" "$start"
}

# node_client_version DIR: the installed version of @kubernetes/client-node.
node_client_version() {
	node -p 'require(process.argv[1]).version' "$1/node_modules/@kubernetes/client-node/package.json"
}

tools=("$@")
if [[ ${#tools[@]} -eq 0 ]]; then
	tools=(helm k9s tmux python node)
fi
total=$SECONDS
for tool in "${tools[@]}"; do
	case "$tool" in
	helm) go_install helm "$helm_module/cmd/helm" "$helm_module" "$helm_version" ;;
	k9s) go_install k9s "$k9s_module" "$k9s_module" "$k9s_version" ;;
	tmux) apt_install tmux "$tmux_deb" ;;
	python) apt_install python3-kubernetes "$python_kubernetes_deb" ;;
	node) npm_install ;;
	*)
		echo "unknown tool $tool; known: helm k9s tmux python node" >&2
		exit 2
		;;
	esac
done
echo
echo "installed in $dir (${#tools[@]} tools, $((SECONDS - total))s):"
printf '  %s\n' "${summary[@]}"

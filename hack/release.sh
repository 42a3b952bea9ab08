#!/usr/bin/env bash
# Builds customapi's release artifacts from the commit checked out (HEAD),
# offline but for the Go module proxy (modules, and the SBOM generator):
#
#   hack/release.sh [--version vX.Y.Z] [--out DIR] [--platforms LIST] [--check-reproducible]
#
#   --version V     the release version, a semantic version with a leading v.
#                   Default: the tag vX.Y.Z on HEAD; else the Go pseudo-version
#                   of HEAD, the version `go build` itself records for the main
#                   module: vX.Y.(Z+1)-0.<commit time>-<12 hex> after the last
#                   tag vX.Y.Z, v0.0.0-<commit time>-<12 hex> without one.
#   --out DIR       where the artifacts go (default dist/; emptied first).
#   --platforms L   comma-separated GOOS/GOARCH list (default
#                   linux/amd64,linux/arm64,darwin/amd64,darwin/arm64).
#   --check-reproducible
#                   instead of a release: build linux/amd64's artifacts twice,
#                   the second time from another clone at another path with an
#                   empty GOCACHE, and compare the two SHA256SUMS; fails naming
#                   the files that differ (and, inside differing archives, the
#                   members). Writes nothing to --out.
#
# It builds a fresh `git clone` of HEAD, never the work tree: changes to
# tracked files are refused (commit them first), untracked files are left
# out. (A clone also has the .git directory the go command needs to record
# the commit: in a linked `git worktree` it records none.)
#
# What it writes into DIR, for VERSION and each OS_ARCH of --platforms:
#
#   customapi_VERSION_OS_ARCH.tar.gz              customapi_VERSION_OS_ARCH/ holding customapi,
#                                                 customapi-gen and third_party_licenses/
#   customapi_VERSION_OS_ARCH.customapi.cdx.json      CycloneDX SBOM (JSON) of each binary's
#   customapi_VERSION_OS_ARCH.customapi-gen.cdx.json  Go modules and Go (cyclonedx-gomod bin)
#   customapi_VERSION_image_linux_ARCH.tar        the container image customapi:VERSION for
#                                                 `docker load` / `podman load` (linux only)
#   image/                                        OCI image layout: one index of the linux
#                                                 platforms, ref name VERSION
#   SHA256SUMS                                    sha256sum of all the above (image/ by its
#                                                 index.json, which names every blob by digest)
#
# The binaries are static (CGO_ENABLED=0), built with -trimpath and
# -ldflags "-s -w" (no symbol table, no DWARF), and stamped with the
# version and the release date through pkg/version's link-time variables
# (releaseVersion, releaseDate); the commit comes from the Go build info
# (vcs.revision). The release date is the commit's time, or
# SOURCE_DATE_EPOCH when set, never the clock: it is also the archives' and
# the image's file times, so one commit gives the same bytes on any machine
# with the same Go version (and, for the image, the same CA bundle,
# /etc/ssl/certs/ca-certificates.crt of Debian's ca-certificates). The
# caller's GOFLAGS, GOEXPERIMENT and GOAMD64/GOARM64 are not used.
#
# third_party_licenses/ holds, for every module that `go version -m` lists
# in either binary, the module's LICENSE*, LICENCE*, COPYING*, NOTICE* and
# PATENTS* files from the module cache (under the module's path), and Go's
# own LICENSE (go/LICENSE: the runtime and standard library are in the
# binaries). A module with none of those files fails the release. customapi
# has no license file of its own: the archive carries third-party notices
# only. The SBOMs name each module's detected license.
#
# Needs git, go (/usr/local/go/bin is added to PATH), jq, GNU tar and gzip.
set -euo pipefail
shopt -s inherit_errexit

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
if ! command -v go >/dev/null 2>&1; then
  export PATH="/usr/local/go/bin:$PATH"
fi

version=""
version_given=""
out=dist
platforms=linux/amd64,linux/arm64,darwin/amd64,darwin/arm64
check_reproducible=""
while [ $# -gt 0 ]; do
  case $1 in
    --version) version=${2:?--version needs a value}; version_given=yes; shift 2 ;;
    --version=*) version=${1#*=}; version_given=yes; shift ;;
    --out) out=${2:?--out needs a value}; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --platforms) platforms=${2:?--platforms needs a value}; shift 2 ;;
    --platforms=*) platforms=${1#*=}; shift ;;
    --check-reproducible) check_reproducible=yes; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "release.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

# The build environment: the same on every machine, whatever the caller's.
export CGO_ENABLED=0 GOFLAGS=-mod=readonly GOTOOLCHAIN=local GOEXPERIMENT= GOAMD64=v1 GOARM64=v8.0
unset GOOS GOARCH GOARM GO386

readonly version_pkg=github.com/customapi/customapi/pkg/version
readonly cyclonedx=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
readonly source_url=https://github.com/customapi/customapi

if ! git diff --quiet HEAD --; then
  echo "release.sh: tracked files have changes; the release is built from a clone of HEAD, so commit them first:" >&2
  git status --short --untracked-files=no >&2
  exit 1
fi
commit=$(git rev-parse HEAD)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}
release_date=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)

# pseudo_version: the Go pseudo-version of HEAD (see --version).
pseudo_version() {
  local stamp hash base
  stamp=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S HEAD)
  hash=$(git rev-parse --short=12 HEAD)
  if base=$(git describe --tags --abbrev=0 --match 'v[0-9]*.[0-9]*.[0-9]*' HEAD 2>/dev/null); then
    if [[ $base == *-* ]]; then # a pre-release: vX.Y.Z-pre.0.<time>-<hash>
      echo "${base}.0.${stamp}-${hash}"
    else
      echo "${base%.*}.$((${base##*.} + 1))-0.${stamp}-${hash}"
    fi
  else
    echo "v0.0.0-${stamp}-${hash}"
  fi
}

if [ -z "$version" ]; then
  if ! version=$(git describe --tags --exact-match --match 'v[0-9]*.[0-9]*.[0-9]*' HEAD 2>/dev/null); then
    version=$(pseudo_version)
  fi
fi
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
if ! [[ $version =~ $semver ]]; then
  echo "release.sh: version $version is not a semantic version vX.Y.Z[-PRE][+BUILD]" >&2
  exit 2
fi

IFS=, read -r -a platform_list <<<"$platforms"
for p in "${platform_list[@]}"; do
  if ! [[ $p =~ ^[a-z0-9]+/[a-z0-9]+$ ]]; then
    echo "release.sh: platform $p is not GOOS/GOARCH" >&2
    exit 2
  fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/customapi-release.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# clone DIR: a clone of the repository at DIR with HEAD's commit checked out.
clone() {
  git clone --quiet --no-checkout "$repo" "$1"
  if ! git -C "$1" cat-file -e "$commit^{commit}" 2>/dev/null; then
    git -C "$1" fetch --quiet "$repo" "$commit" # a commit on no branch
  fi
  git -C "$1" checkout --quiet --detach "$commit"
}

# build_release SRC DIR PLATFORMS...: builds the artifacts of the clone SRC
# into DIR (emptied first).
build_release() {
  local src=$1 dir=$2
  shift 2
  rm -rf "$dir"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local work
  work=$(mktemp -d "$tmp/work.XXXXXX")
  echo "--- tools: cyclonedx-gomod, hack/tools/image"
  (cd "$src" && GOBIN=$work/bin go install "$cyclonedx" && go build -trimpath -o "$work/bin/image" ./hack/tools/image)
  local image_args=() licenses="" p goos goarch name bindir
  for p in "$@"; do
    goos=${p%/*} goarch=${p#*/}
    name=customapi_${version}_${goos}_${goarch}
    bindir=$work/$name
    echo "--- $p: go build"
    (cd "$src" && GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=true \
      -ldflags "-s -w -X ${version_pkg}.releaseVersion=${version} -X ${version_pkg}.releaseDate=${release_date}" \
      -o "$bindir/" ./cmd/customapi ./cmd/customapi-gen)
    if [ -z "$version_given" ]; then
      check_go_version "$bindir/customapi"
    fi
    echo "--- $p: license notices, SBOMs"
    (cd "$src" && collect_licenses "$bindir/third_party_licenses" "$bindir/customapi" "$bindir/customapi-gen")
    for b in customapi customapi-gen; do
      # GOPROXY=off: the modules are in the module cache (collect_licenses
      # downloaded them); customapi's own version is on no proxy.
      if ! (cd "$src" && GOPROXY=off "$work/bin/cyclonedx-gomod" bin -json -licenses -std -noserial -notimestamp \
        -version "$version" -output "$dir/$name.$b.cdx.json" "$bindir/$b") 2>"$work/cyclonedx.log"; then
        cat "$work/cyclonedx.log" >&2
        return 1
      fi
    done
    # A reproducible archive: sorted names, the release date as every
    # file's time, numeric root owner, fixed modes, no gzip name or time.
    tar -C "$work" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
      --mode='u=rwX,go=rX' --format=gnu -cf - "$name" | gzip -9 -n >"$dir/$name.tar.gz"
    if [ "$goos" = linux ]; then
      image_args+=(--binary "$p=$bindir/customapi" --tarball "$p=$dir/customapi_${version}_image_${goos}_${goarch}.tar")
      # the same modules on every linux architecture
      licenses=${licenses:-$bindir/third_party_licenses}
    fi
  done
  if [ "${#image_args[@]}" -gt 0 ]; then
    echo "--- container image"
    "$work/bin/image" --version "$version" --revision "$commit" --created "$release_date" \
      --source "$source_url" --licenses "$licenses" --layout "$dir/image" "${image_args[@]}"
    find "$dir/image" -type f -exec chmod 0644 {} + # go-containerregistry writes index.json executable
  fi
  (
    cd "$dir"
    {
      find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort
      if [ -d image ]; then
        echo image/index.json
      fi
    } >"$work/files"
    xargs -a "$work/files" sha256sum >SHA256SUMS
  )
  rm -rf "$work"
}

# collect_licenses DIR BINARY...: the license notices of the modules the
# binaries were built from (go version -m), and Go's, into DIR. Runs in the
# module (go mod download finds the modules' directories).
collect_licenses() {
  local dir=$1
  shift
  mkdir -p "$dir/go"
  cp "$(go env GOROOT)/LICENSE" "$dir/go/LICENSE"
  local mods
  # "dep PATH VERSION SUM", or "=> PATH VERSION SUM" replacing the line before
  mods=$(go version -m "$@" | awk '
    $1 == "dep" { if (m != "") print m; m = $2 "@" $3 }
    $1 == "=>" { m = $2 "@" $3 }
    $1 != "dep" && $1 != "=>" { if (m != "") print m; m = "" }
    END { if (m != "") print m }' | LC_ALL=C sort -u)
  local missing=() mod path moddir f found
  while read -r mod path moddir; do
    found=""
    for f in "$moddir"/*; do
      case ${f##*/} in
        [Ll][Ii][Cc][Ee][Nn][CcSs][Ee]*|[Cc][Oo][Pp][Yy][Ii][Nn][Gg]*|[Nn][Oo][Tt][Ii][Cc][Ee]*|[Pp][Aa][Tt][Ee][Nn][Tt][Ss]*)
          if [ -f "$f" ]; then
            mkdir -p "$dir/$path"
            cp "$f" "$dir/$path/"
            found=yes
          fi
          ;;
      esac
    done
    if [ -z "$found" ]; then
      missing+=("$mod")
    fi
  done < <(xargs go mod download -json <<<"$mods" | jq -r '"\(.Path)@\(.Version) \(.Path) \(.Dir)"')
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "release.sh: no LICENSE, COPYING or NOTICE file in module(s): ${missing[*]}" >&2
    return 1
  fi
}

# check_go_version BINARY: warns when the main module version the go
# command recorded in BINARY is not the default version computed above.
check_go_version() {
  local recorded
  recorded=$(go version -m "$1" | awk '$1 == "mod" { print $3 }')
  if [ "$recorded" != "$version" ]; then
    echo "release.sh: warning: go build recorded the version $recorded, not $version" >&2
  fi
}

start=$SECONDS
if [ -z "$check_reproducible" ]; then
  echo "customapi $version (commit $commit, date $release_date) for ${platform_list[*]} into $out/"
  clone "$tmp/src/customapi"
  build_release "$tmp/src/customapi" "$out" "${platform_list[@]}"
  echo
  (cd "$out" && find . -maxdepth 1 -type f -printf '%s %P\n' | LC_ALL=C sort -k 2 | column -t)
  echo "done in $((SECONDS - start))s"
  exit 0
fi

echo "reproducibility check of customapi $version (commit $commit), linux/amd64"
clone "$tmp/a/customapi"
build_release "$tmp/a/customapi" "$tmp/first" linux/amd64
first=$((SECONDS - start))
clone "$tmp/other-path/b/customapi"
echo "--- second build in $tmp/other-path/b/customapi with an empty GOCACHE"
second_start=$SECONDS
GOCACHE=$tmp/gocache build_release "$tmp/other-path/b/customapi" "$tmp/second" linux/amd64
second=$((SECONDS - second_start))
echo "first build ${first}s, second build (empty GOCACHE) ${second}s"
if cmp -s "$tmp/first/SHA256SUMS" "$tmp/second/SHA256SUMS"; then
  cat "$tmp/first/SHA256SUMS"
  echo "reproducible: both builds made the same artifacts"
  exit 0
fi
echo "NOT reproducible: these artifacts differ between the two builds:" >&2
join -j 2 -a 1 -a 2 -e missing -o 0,1.1,2.1 <(sort -k 2 "$tmp/first/SHA256SUMS") <(sort -k 2 "$tmp/second/SHA256SUMS") |
  awk '$2 != $3 { print "  " $1 }' >&2
for f in "$tmp/first"/*.tar.gz; do
  g=$tmp/second/${f##*/}
  if [ -f "$g" ] && ! cmp -s "$f" "$g"; then
    mkdir -p "$tmp/x/first" "$tmp/x/second"
    tar -C "$tmp/x/first" -xzf "$f"
    tar -C "$tmp/x/second" -xzf "$g"
    echo "inside ${f##*/}:" >&2
    diff -rq "$tmp/x/first" "$tmp/x/second" | sed "s#$tmp/x/##g; s/^/  /" >&2 || true
    rm -rf "$tmp/x"
  fi
done
exit 1

#!/usr/bin/env bash
# Regenerates every generated file of the repository: deepcopy functions
# (zz_generated.deepcopy.go), OpenAPI model names (zz_generated.model_name.go)
# and OpenAPI definitions (zz_generated.openapi.go). The generators are the
# versions pinned in go.mod (see hack/tools.go), run with `go run`.
#
# To add your own API group: give its doc.go the tags +k8s:deepcopy-gen=package,
# +k8s:openapi-gen=true and +k8s:openapi-model-package=<reverse-dns>.<group>.<version>,
# then add a line to OPENAPI_TARGETS below.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
module=$(go list -m)
header=hack/boilerplate.go.txt

# Packages holding API types: every package whose doc.go asks for deepcopy.
mapfile -t api_dirs < <(grep -rl --include=doc.go -e '+k8s:deepcopy-gen=package' pkg examples | xargs -n1 dirname | LC_ALL=C sort -u)

echo "deepcopy-gen: ${api_dirs[*]}"
go run k8s.io/code-generator/cmd/deepcopy-gen \
  --go-header-file "$header" \
  --output-file zz_generated.deepcopy.go \
  "${api_dirs[@]/#/./}"

# OpenAPI definitions: "output package dir|API package dir ..." per line. Each output
# package also holds the meta/v1 definitions its types refer to.
OPENAPI_TARGETS=(
  "pkg/generated/openapi|pkg/apis/test/v1 pkg/apis/bench/v1"
  "examples/fleet/generated/openapi|examples/fleet/apis/fleet/v1alpha1"
)
meta_pkgs=(
  k8s.io/apimachinery/pkg/apis/meta/v1
  k8s.io/apimachinery/pkg/runtime
  k8s.io/apimachinery/pkg/version
)
for target in "${OPENAPI_TARGETS[@]}"; do
  out=${target%%|*}
  ins=(${target#*|})
  [ -d "${ins[0]}" ] || continue
  echo "openapi-gen: ${ins[*]} -> $out"
  mkdir -p "$out"
  go run k8s.io/kube-openapi/cmd/openapi-gen \
    --go-header-file "$header" \
    --output-dir "$out" \
    --output-pkg "$module/$out" \
    --output-file zz_generated.openapi.go \
    --output-model-name-file zz_generated.model_name.go \
    --report-filename "$out/api-violations.list" \
    $(printf -- '--readonly-pkg %s ' "${meta_pkgs[@]}") \
    "${meta_pkgs[@]}" "${ins[@]/#/./}"
done

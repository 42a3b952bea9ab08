#!/usr/bin/env bash
# Regenerates every generated file of the repository with cmd/customapi-gen,
# the same command users run in their own modules: register, deepcopy and
# OpenAPI code in the API packages (conversions, defaults and a round-trip
# test in those tagged +k8s:conversion-gen / +k8s:defaulter-gen) (and generated.proto/generated.pb.go in those
# tagged +k8s:protobuf-gen=package; no protoc needed), and pkg/generated/ and
# examples/fleet/generated/ (OpenAPI definitions, clientset, listers,
# informers, apply configurations), and examples/fleet/config/crd (the
# fleet kinds as CustomResourceDefinition YAML).
#
# To add your own API group: give its doc.go the tags +k8s:deepcopy-gen=package,
# +k8s:openapi-gen=true, +k8s:openapi-model-package=<reverse-dns>.<group>.<version>
# and +groupName=<group>, and put it under pkg/apis/ or examples/*/apis/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go run ./cmd/customapi-gen --go-header-file hack/boilerplate.go.txt "$@" ./pkg/apis/...
# The examples, with their kinds as CustomResourceDefinition YAML too
# (examples/fleet/config/crd; pkg/apis' group "test" has no dot, so no CRD).
go run ./cmd/customapi-gen --go-header-file hack/boilerplate.go.txt "$@" \
  --crd-dir examples/fleet/config/crd ./examples/...
# The upstream OpenAPI definitions of the built-in types customapi serves
# (pkg/batteries): read-only inputs from k8s.io/api and k8s.io/apimachinery.
go run ./cmd/customapi-gen --go-header-file hack/boilerplate.go.txt "$@" \
  --openapi-only pkg/generated/openapi/builtin \
  k8s.io/api/core/v1 k8s.io/api/coordination/v1 k8s.io/api/events/v1 \
  k8s.io/api/rbac/v1 k8s.io/api/authentication/v1 k8s.io/api/authorization/v1 \
  k8s.io/api/admissionregistration/v1 \
  k8s.io/apimachinery/pkg/api/resource k8s.io/apimachinery/pkg/util/intstr

# The gRPC example's stubs and request messages (examples/grpc/relay.pb.go),
# generated from relay.proto by customapi-gen's own protoc (gogo's generator
# with its grpc plugin). With --verify they are generated into a temporary
# directory and compared with the committed file.
relay_out=.
if [[ " $* " == *" --verify "* ]]; then
	relay_out=$(mktemp -d)
	trap 'rm -rf "$relay_out"' EXIT
fi
(cd examples/grpc && go run ../../cmd/customapi-gen protoc -I . \
	"--gogo_out=plugins=grpc,paths=source_relative:$relay_out" relay.proto)
if [[ "$relay_out" != . ]] && ! diff -u examples/grpc/relay.pb.go "$relay_out/relay.pb.go"; then
	echo "examples/grpc/relay.pb.go is stale: run hack/update-codegen.sh" >&2
	exit 1
fi

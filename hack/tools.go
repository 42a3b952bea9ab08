//go:build tools

// Package tools pins the code generators used by hack/update-codegen.sh.
package tools

import (
	_ "k8s.io/code-generator/cmd/deepcopy-gen"
	_ "k8s.io/kube-openapi/cmd/openapi-gen"
)

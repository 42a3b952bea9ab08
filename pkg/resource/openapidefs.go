package resource

import (
	"reflect"
	"runtime"
	"strings"

	"k8s.io/kube-openapi/pkg/common"
)

// definitionsKey identifies a GetOpenAPIDefinitions that is a package-level
// function (openapi-gen's GetOpenAPIDefinitions): its code address, which
// is then all of it. The batteries and the RBAC and review kinds all use
// one generated package of k8s.io/api definitions, so that the union of a
// server's resources would otherwise call that function once per resource,
// each call building every definition (~3 ms). ok is false for nil, for
// closures and method values (the same code with other captured values may
// return other definitions) and for anything else: such functions are
// always called.
func definitionsKey(f common.GetOpenAPIDefinitions) (key uintptr, ok bool) {
	if f == nil {
		return 0, false
	}
	pc := reflect.ValueOf(f).Pointer()
	fn := runtime.FuncForPC(pc)
	if fn == nil {
		return 0, false
	}
	// "path/to/pkg.Name": one dot after the last slash, no closure
	// (".func1"), method ("pkg.T.M", "pkg.(*T).M", "-fm") or instantiation.
	name := fn.Name()
	last := name[strings.LastIndex(name, "/")+1:]
	if strings.Count(last, ".") != 1 || strings.ContainsAny(last, "[]()-") {
		return 0, false
	}
	return pc, true
}

// distinctDefinitions returns the resources' OpenAPIDefinitions in order,
// nil ones left out, keeping of a package-level function (definitionsKey)
// only its last occurrence: calling it again with the same reference
// callback returns the same definitions, and in a union where later
// functions' definitions replace earlier ones' of the same name the last
// call is the one that counts.
func distinctDefinitions(declared []Resource) []common.GetOpenAPIDefinitions {
	var resources []Resource
	for _, r := range declared {
		resources = append(resources, r)
		for _, v := range r.Versions {
			if v.OpenAPIDefinitions != nil {
				resources = append(resources, r.In(v.Name))
			}
		}
	}
	last := map[uintptr]int{}
	for i, r := range resources {
		if key, ok := definitionsKey(r.OpenAPIDefinitions); ok {
			last[key] = i
		}
	}
	out := make([]common.GetOpenAPIDefinitions, 0, len(resources))
	for i, r := range resources {
		if r.OpenAPIDefinitions == nil {
			continue
		}
		if key, ok := definitionsKey(r.OpenAPIDefinitions); ok && last[key] != i {
			continue
		}
		out = append(out, r.OpenAPIDefinitions)
	}
	return out
}

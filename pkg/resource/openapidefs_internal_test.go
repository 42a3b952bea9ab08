package resource

import (
	"testing"

	"k8s.io/kube-openapi/pkg/common"
)

var calls = map[string]int{}

func defsA(common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	calls["a"]++
	return map[string]common.OpenAPIDefinition{"shared": {Dependencies: []string{"a"}}, "a": {}}
}

func defsB(common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	calls["b"]++
	return map[string]common.OpenAPIDefinition{"shared": {Dependencies: []string{"b"}}, "b": {}}
}

func closureDefs(name string) common.GetOpenAPIDefinitions {
	return func(common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		calls[name]++
		return map[string]common.OpenAPIDefinition{"shared": {Dependencies: []string{name}}, name: {}}
	}
}

// TestOpenAPIDefinitionsOfCallsOnce: a package-level function shared by
// several resources is called once, at its last position (whose
// definitions win, as in a call per resource); closures are always called.
func TestOpenAPIDefinitionsOfCallsOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		defs      []common.GetOpenAPIDefinitions
		wantCalls map[string]int
		shared    string // whose "shared" definition wins
	}{
		{"one function", []common.GetOpenAPIDefinitions{defsA, defsA, defsA}, map[string]int{"a": 1}, "a"},
		{"last occurrence wins", []common.GetOpenAPIDefinitions{defsA, defsB, defsA}, map[string]int{"a": 1, "b": 1}, "a"},
		{"other last", []common.GetOpenAPIDefinitions{defsB, defsA, defsB}, map[string]int{"a": 1, "b": 1}, "b"},
		{"nil left out", []common.GetOpenAPIDefinitions{nil, defsA, nil}, map[string]int{"a": 1}, "a"},
		{"closures always called", []common.GetOpenAPIDefinitions{closureDefs("x"), closureDefs("y"), closureDefs("x")}, map[string]int{"x": 2, "y": 1}, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clear(calls)
			resources := make([]Resource, len(tc.defs))
			for i, d := range tc.defs {
				resources[i].OpenAPIDefinitions = d
			}
			out := OpenAPIDefinitionsOf(resources...)(nil)
			for name, n := range tc.wantCalls {
				if calls[name] != n {
					t.Errorf("calls of %s = %d, want %d", name, calls[name], n)
				}
			}
			if got := out["shared"].Dependencies; len(got) != 1 || got[0] != tc.shared {
				t.Errorf("shared = %v, want %s's", got, tc.shared)
			}
		})
	}
}

// TestModelNamesCallsOnce: the model-name check calls a package-level
// function once for all resources, a closure each time.
func TestModelNamesCallsOnce(t *testing.T) {
	clear(calls)
	m := modelNames{}
	for range 3 {
		if !m.has(defsA, "a") || m.has(defsA, "b") {
			t.Fatal("has: wrong answer for defsA")
		}
	}
	x := closureDefs("x")
	for range 2 {
		if !m.has(x, "x") {
			t.Fatal("has: wrong answer for the closure")
		}
	}
	if calls["a"] != 1 || calls["x"] != 2 {
		t.Errorf("calls = %v, want a:1 x:2", calls)
	}
}

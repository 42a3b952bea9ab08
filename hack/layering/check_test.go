package main

import (
	"slices"
	"strings"
	"testing"
)

const testRules = `
# comment
pkg/resource: none
pkg/storage/...: pkg/resource pkg/etcd
pkg/etcd: internal/pki
internal/pki: none
cmd/...: pkg/...
pkg/registry/...: pkg/resource pkg/storage
pkg/apis/...: none
pkg/apis/*/install: pkg/resource pkg/apis/...
deny pkg/...: cmd/...
deny ...: k8s.io/kubernetes/...
`

func TestCheck(t *testing.T) {
	rs, err := parseRules(strings.NewReader(testRules))
	if err != nil {
		t.Fatal(err)
	}
	base := []pkgInfo{
		{path: "pkg/resource"},
		{path: "pkg/etcd", imports: []string{"internal/pki", "go.etcd.io/etcd/client/v3"}},
		{path: "internal/pki"},
		{path: "pkg/storage", imports: []string{"pkg/etcd"}},
		{path: "pkg/apis/test/v1"},
		{path: "pkg/apis/test/install", imports: []string{"pkg/apis/test/v1", "pkg/resource"}},
		{path: "cmd/x"},
	}
	cases := []struct {
		name string
		pkg  pkgInfo
		want []string // "pkg imports imported" of each violation
	}{
		{"direct", pkgInfo{path: "pkg/registry", imports: []string{"pkg/storage", "pkg/resource"}}, nil},
		{"through storage's rule", pkgInfo{path: "pkg/registry", imports: []string{"pkg/etcd", "internal/pki"}}, nil},
		{"own unit", pkgInfo{path: "pkg/registry/numbers", imports: []string{"pkg/registry"}}, nil},
		{"upward", pkgInfo{path: "pkg/registry", imports: []string{"pkg/apis/test/install"}},
			[]string{"pkg/registry imports pkg/apis/test/install"}},
		{"wildcard rule wins over ...", pkgInfo{path: "pkg/apis/bench/install", imports: []string{"pkg/resource"}}, nil},
		{"types import nothing", pkgInfo{path: "pkg/apis/bench/v1", imports: []string{"pkg/resource"}},
			[]string{"pkg/apis/bench/v1 imports pkg/resource"}},
		{"deny beats allow", pkgInfo{path: "pkg/registry", imports: []string{"cmd/x"}},
			[]string{"pkg/registry imports cmd/x", "pkg/registry imports cmd/x"}},
		{"external deny through deps", pkgInfo{path: "pkg/registry", deps: []string{"k8s.io/kubernetes/pkg/api"}},
			[]string{"pkg/registry imports k8s.io/kubernetes/pkg/api"}},
		{"no rule", pkgInfo{path: "pkg/newthing"}, []string{"pkg/newthing imports "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pkgs := append(slices.Clone(base), tc.pkg)
			var got []string
			for _, v := range check(rs, pkgs) {
				got = append(got, v.pkg+" imports "+v.imported)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("violations %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseRulesErrors(t *testing.T) {
	for _, text := range []string{
		"pkg/a pkg/b",               // no colon
		"pkg/a:",                    // nothing allowed, not even none
		"deny pkg/a: none",          // deny needs targets
		"pkg/a: none\npkg/a: pkg/b", // two rules for one pattern
		"a b: c",                    // two patterns
	} {
		if _, err := parseRules(strings.NewReader(text)); err == nil {
			t.Errorf("parseRules(%q) = nil error", text)
		}
	}
}

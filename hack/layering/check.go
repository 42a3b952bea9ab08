package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// pkgInfo is what the check needs of one package of the module: its path
// relative to the module, the paths it imports directly (relative when
// inside the module) and every package it depends on.
type pkgInfo struct {
	path    string
	imports []string
	deps    []string
}

// violation is one forbidden import, or a package no rule covers (rule
// line 0, imported "").
type violation struct {
	pkg, imported string
	rule          rule
	why           string
}

func (v violation) String() string {
	if v.imported == "" {
		return fmt.Sprintf("%s: %s", v.pkg, v.why)
	}
	return fmt.Sprintf("%s imports %s: %s (rules.txt:%d %q)", v.pkg, v.imported, v.why, v.rule.line, v.rule.text)
}

// check returns the violations of rs in pkgs, sorted by package. An import
// is the module's own when pkgs lists it; only those are checked against
// the allow rules, while deny rules naming outside packages are checked
// against every dependency.
func check(rs rules, pkgs []pkgInfo) []violation {
	ours := map[string]bool{}
	for _, p := range pkgs {
		ours[p.path] = true
	}
	closure := allowedClosure(rs, pkgs)
	var out []violation
	for _, p := range pkgs {
		gov, ok := rs.governing(p.path)
		if !ok {
			out = append(out, violation{pkg: p.path, why: "no rule in rules.txt covers this package: add one, mirroring the README's package table"})
			continue
		}
		for _, imp := range p.imports {
			if !ours[imp] {
				continue
			}
			if imp == p.path || strings.HasPrefix(imp, p.path+"/") || match(gov.pattern, imp) {
				continue // below itself, or in the same unit
			}
			if !closure[gov.line][imp] {
				out = append(out, violation{pkg: p.path, imported: imp, rule: gov,
					why: "not allowed, directly or through what the allowed packages may import"})
			}
		}
		for _, r := range rs {
			if !r.deny || !match(r.pattern, p.path) {
				continue
			}
			for _, t := range r.targets {
				external := strings.Contains(strings.SplitN(t, "/", 2)[0], ".")
				list := p.imports
				if external {
					list = p.deps // also through other modules
				}
				for _, imp := range list {
					if ours[imp] == external || !match(t, imp) {
						continue
					}
					out = append(out, violation{pkg: p.path, imported: imp, rule: r, why: "forbidden"})
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].pkg < out[j].pkg })
	return out
}

// allowedClosure returns, per allow rule (by line), the module's packages
// that a package under that rule may import: those its targets match, and
// what the rules governing those packages allow in turn.
func allowedClosure(rs rules, pkgs []pkgInfo) map[int]map[string]bool {
	memo := map[int]map[string]bool{}
	var expand func(r rule, visiting []int) map[string]bool
	expand = func(r rule, visiting []int) map[string]bool {
		if m, ok := memo[r.line]; ok {
			return m
		}
		m := map[string]bool{}
		if slices.Contains(visiting, r.line) {
			return m // a cycle among rules: each side keeps its direct targets
		}
		visiting = append(visiting, r.line)
		for _, p := range pkgs {
			if !slices.ContainsFunc(r.targets, func(t string) bool { return match(t, p.path) }) {
				continue
			}
			m[p.path] = true
			if g, ok := rs.governing(p.path); ok && g.line != r.line {
				for q := range expand(g, visiting) {
					m[q] = true
				}
				for _, q := range pkgs {
					if match(g.pattern, q.path) {
						m[q.path] = true // the governing rule's own unit
					}
				}
			}
		}
		memo[r.line] = m
		return m
	}
	for _, r := range rs {
		if !r.deny {
			expand(r, nil)
		}
	}
	return memo
}

package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// rule is one line of rules.txt: packages matching pattern may import
// (allow) or must not import (deny) the packages matching targets.
type rule struct {
	line    int
	text    string
	deny    bool
	pattern string
	targets []string
}

// rules are the parsed lines of rules.txt, in file order.
type rules []rule

// parseRules reads the rules format described in rules.txt's header.
func parseRules(r io.Reader) (rules, error) {
	var out rules
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		lhs, rhs, ok := strings.Cut(text, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: %q has no colon (want PATTERN: ALLOWED... or deny PATTERN: FORBIDDEN...)", n, text)
		}
		ru := rule{line: n, text: text}
		lhs = strings.TrimSpace(lhs)
		if rest, ok := strings.CutPrefix(lhs, "deny "); ok {
			ru.deny, lhs = true, strings.TrimSpace(rest)
		}
		if lhs == "" || strings.ContainsAny(lhs, " \t") {
			return nil, fmt.Errorf("line %d: want one pattern before the colon, got %q", n, lhs)
		}
		ru.pattern = lhs
		ru.targets = strings.Fields(rhs)
		if len(ru.targets) == 0 {
			return nil, fmt.Errorf("line %d: nothing after the colon (write \"none\" to allow nothing)", n)
		}
		if slices.Equal(ru.targets, []string{"none"}) {
			if ru.deny {
				return nil, fmt.Errorf("line %d: a deny rule needs packages, not none", n)
			}
			ru.targets = nil
		}
		if !ru.deny {
			for _, earlier := range out {
				if !earlier.deny && earlier.pattern == ru.pattern {
					return nil, fmt.Errorf("line %d: pattern %s already has a rule at line %d", n, ru.pattern, earlier.line)
				}
			}
		}
		out = append(out, ru)
	}
	return out, sc.Err()
}

// match reports whether the import path p (relative to the module, or a
// path outside it) matches pattern: "X/..." matches X and every path below
// it, "..." every path, a "*" element any one element, anything else only
// itself.
func match(pattern, p string) bool {
	if pattern == "..." {
		return true
	}
	pe := strings.Split(pattern, "/")
	xe := strings.Split(p, "/")
	if pe[len(pe)-1] == "..." {
		pe = pe[:len(pe)-1]
		if len(xe) < len(pe) {
			return false
		}
		xe = xe[:len(pe)]
	}
	if len(pe) != len(xe) {
		return false
	}
	for i := range pe {
		if pe[i] != "*" && pe[i] != xe[i] {
			return false
		}
	}
	return true
}

// specificity orders patterns that match the same package: more literal
// elements win, then fewer wildcards.
func specificity(pattern string) (literal, wild int) {
	for _, e := range strings.Split(pattern, "/") {
		switch e {
		case "...":
		case "*":
			wild++
		default:
			literal++
		}
	}
	return literal, -wild
}

// governing returns the allow rule whose pattern matches pkg most
// specifically, or false if none does.
func (rs rules) governing(pkg string) (rule, bool) {
	var best rule
	found := false
	for _, r := range rs {
		if r.deny || !match(r.pattern, pkg) {
			continue
		}
		if !found {
			best, found = r, true
			continue
		}
		bl, bw := specificity(best.pattern)
		rl, rw := specificity(r.pattern)
		if rl > bl || rl == bl && rw > bw {
			best = r
		}
	}
	return best, found
}

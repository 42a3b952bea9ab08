// Command layering fails when a package of the module imports one that
// its layering rules say it must not. The README's package table is mirrored
// in rules.txt beside this file (its header says how to read a rule); the
// import graph comes from `go list` of the module's packages, without test
// files. CI runs it as a step of .ci/run:
//
//	go run ./hack/layering            # from the module root
//	go run ./hack/layering -rules hack/layering/rules.txt ./...
//
// It prints one line per forbidden import, naming the rule that forbids it,
// and exits 1 if there is any; a package no rule covers is an error too, so
// a new package gets a rule when it is added.
package main

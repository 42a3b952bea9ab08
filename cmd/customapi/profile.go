package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names a file that receives a CPU profile of the whole
// process, from its start to its exit (a developer's aid: `customapi bench
// --scale` sets it to profile a server's start).
const cpuProfileEnv = "CUSTOMAPI_CPUPROFILE"

// startCPUProfile starts the profile cpuProfileEnv asks for, if any, and
// returns the function that ends it.
func startCPUProfile() func() {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", cpuProfileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", cpuProfileEnv, err)
		_ = f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

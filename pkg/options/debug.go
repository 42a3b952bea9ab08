package options

import (
	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// DebugOptions switch the server's debugging endpoints, as kube-apiserver's
// --profiling.
type DebugOptions struct {
	// Profiling serves Go's profiles at /debug/pprof/ (heap, goroutine,
	// profile, trace, ...), /debug/flags/v (PUT changes the log
	// verbosity) and DELETE /metrics (resets the metrics), as
	// kube-apiserver's --profiling (default true there and here). They
	// are authorized like any other path: with RBAC, only users granted
	// the nonResourceURLs /debug/* (cluster-admin, so the generated
	// admin) reach them. A CPU profile or trace costs the server CPU while
	// it runs, and heap and goroutine profiles show the code paths and
	// names in use (no object contents): turn it off where that matters.
	Profiling bool
}

// NewDebugOptions returns kube-apiserver's default: profiling on.
func NewDebugOptions() DebugOptions { return DebugOptions{Profiling: true} }

// AddFlags binds the options to kube-apiserver's flag names.
func (o *DebugOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve Go's profiles at /debug/pprof/ (and /debug/flags/v, DELETE /metrics) to users authorized for those paths (cluster-admin).")
}

// Validate returns no problem: every value is valid. It is there so that
// every concern's options have the same three methods.
func (o *DebugOptions) Validate() []error { return nil }

// ApplyTo sets the generic server's profiling switches (contention
// profiling stays off, as kube's default).
func (o *DebugOptions) ApplyTo(c *genericapiserver.Config) {
	c.EnableProfiling = o.Profiling
	c.EnableContentionProfiling = false
}

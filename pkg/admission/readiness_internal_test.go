package admission

import (
	"sync/atomic"
	"testing"

	k8sadmission "k8s.io/apiserver/pkg/admission"
)

// plugin is upstream's admission.Handler, the part every plugin embeds,
// whose readiness becomes true at its readyAfter'th check (0: never),
// counting its checks and the calls of its WaitForReady.
type plugin struct {
	*k8sadmission.Handler
	readyAfter int64
	checks     atomic.Int64
	calls      atomic.Int64
}

func newPlugin(readyAfter int64) *plugin {
	p := &plugin{Handler: k8sadmission.NewHandler(k8sadmission.Create), readyAfter: readyAfter}
	p.SetReadyFunc(func() bool { return p.checks.Add(1) >= p.readyAfter && p.readyAfter > 0 })
	return p
}

func (p *plugin) wait() bool {
	p.calls.Add(1)
	return p.WaitForReady()
}

// TestReadinessSoon checks that Readiness.Wait reports ready once every
// plugin is, through upstream's WaitForReady, starting no more than
// readinessProbes calls of a plugin's wait; and that a plugin that is not ready in its wait's bound
// makes it report not ready.
func TestReadinessSoon(t *testing.T) {
	cases := []struct {
		name       string
		readyAfter []int64 // per plugin; -1: its wait returns false at once
		want       bool
	}{
		{name: "no plugins", want: true},
		{name: "ready at once", readyAfter: []int64{1, 1, 1, 1}, want: true},
		{name: "ready after some checks", readyAfter: []int64{1, 3, 10, 40}, want: true},
		{name: "one not ready in time", readyAfter: []int64{1, 5, -1}, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r Readiness
			var plugins []*plugin
			for _, after := range tc.readyAfter {
				if after < 0 {
					r.waits = append(r.waits, func() bool { return false })
					continue
				}
				p := newPlugin(after)
				plugins = append(plugins, p)
				r.waits = append(r.waits, p.wait)
			}
			if got := r.Wait(); got != tc.want {
				t.Fatalf("Wait() = %v, want %v", got, tc.want)
			}
			for i, p := range plugins {
				calls := p.calls.Load()
				if calls > readinessProbes {
					t.Errorf("plugin %d: %d calls of its wait, more than %d", i, calls, readinessProbes)
				}
			}
		})
	}
}

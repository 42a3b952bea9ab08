package outage

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
)

// gadgetsCRD is a CRD for the custom resources of TestQuorumLossCustomResources.
const gadgetsCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "gadgets.outage.example.com"},
  "spec": {
    "group": "outage.example.com",
    "names": {"plural": "gadgets", "kind": "Gadget"},
    "scope": "Namespaced",
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"message": {"type": "string"}}}
      }}}
    }]
  }
}`

// gadgets is the collection URL of the Gadgets in namespace default.
const gadgets = "/apis/outage.example.com/v1/namespaces/default/gadgets"

func createGadget(ctx context.Context, s *customapitest.Server, name string) attempt {
	body := fmt.Sprintf(`{"apiVersion":"outage.example.com/v1","kind":"Gadget","metadata":{"name":%q},"spec":{"message":"outage"}}`, name)
	a := do(ctx, s.HTTPClient, http.MethodPost, s.URL+gadgets, []byte(body))
	a.name = name
	return a
}

// TestQuorumLossCustomResources is TestQuorumLoss's bound for custom
// resources: with a CRD's Gadgets (and Go-typed customs beside them, for
// comparison) being created, two of three etcd members are killed (the
// leader among them) for outageDuration, then restarted. Asserted: every
// Gadget create that fails, fails with 503/504 naming etcd within 10 s, as
// customs do; a consistent read of a Gadget fails the same way while the
// watch cache answers resourceVersion=0 lists; none succeeds while quorum
// is lost; a Gadget create succeeds within 2 s of quorum returning; every
// acknowledged Gadget is in etcd under /registry/<group>/<plural>/.
func TestQuorumLossCustomResources(t *testing.T) {
	const (
		writers        = 3                // of each kind
		outageDuration = 20 * time.Second // two rounds of 7-8 s failures, as TestQuorumLoss
		failWithin     = 10 * time.Second
		recoverWithin  = 2 * time.Second
	)
	ctx := t.Context()
	c := startCluster(t)
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Storage.Etcd.Servers = c.endpoints()
		o.Storage.Prefix = "/registry"
		o.CustomResourceDefinitions = true
	}, install.Customs)

	if a := do(ctx, s.HTTPClient, http.MethodPost, s.URL+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", []byte(gadgetsCRD)); a.code != http.StatusCreated {
		t.Fatalf("create the CRD: %d %s %q (%v)", a.code, a.reason, a.message, a.err)
	}
	// Established, then served: the first create is the probe.
	var first attempt
	customapitest.Eventually(t, 30*time.Second, "the first Gadget create", func(context.Context) (bool, error) {
		first = createGadget(ctx, s, "first")
		return first.code == http.StatusCreated, nil
	})

	type result struct {
		kind string
		attempt
	}
	var (
		mu       sync.Mutex
		attempts []result
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	for w := range 2 * writers {
		kind := "gadget"
		if w >= writers {
			kind = "custom"
		}
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("w%d-%d", w, i)
				var a attempt
				if kind == "gadget" {
					a = createGadget(ctx, s, name)
				} else {
					a = create(ctx, s, name)
				}
				mu.Lock()
				attempts = append(attempts, result{kind, a})
				mu.Unlock()
			}
		})
	}
	stopWriters := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopWriters)
	acked := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, a := range attempts {
			if a.kind == "gadget" && a.code == http.StatusCreated {
				n++
			}
		}
		return n
	}
	customapitest.Eventually(t, 30*time.Second, "20 acknowledged Gadget creates", func(context.Context) (bool, error) { return acked() >= 20, nil })

	killed, tKill := loseQuorum(t, c)

	customapitest.Eventually(t, 10*time.Second, "/readyz to fail", func(context.Context) (bool, error) {
		a := do(ctx, s.HTTPClient, http.MethodGet, s.URL+"/readyz", nil)
		return a.err == nil && a.code != http.StatusOK, nil
	})

	// Reads of Gadgets while quorum is lost.
	waitReads := startReads(ctx, s, map[string]string{
		"LIST resourceVersion=0 (watch cache)": s.URL + gadgets + "?resourceVersion=0",
		"GET (from etcd)":                      s.URL + gadgets + "/first",
	})
	sleepUntil(t, tKill.Add(outageDuration))
	readResults := waitReads()
	tRestart, tQuorum := regainQuorum(t, c, killed)
	var firstOK attempt
	customapitest.Eventually(t, 30*time.Second, "a Gadget create to succeed after recovery", func(context.Context) (bool, error) {
		firstOK = createGadget(ctx, s, fmt.Sprintf("probe-%d", time.Now().UnixNano()))
		return firstOK.code == http.StatusCreated, nil
	})
	recovery := firstOK.end.Sub(tQuorum)
	stopWriters()

	checkOutageReads(t, readResults, failWithin)

	ackedGadgets := map[string]string{first.name: first.uid, firstOK.name: firstOK.uid}
	fails := map[string][]time.Duration{}
	during := map[string]int{}
	for _, a := range attempts {
		if a.code == http.StatusCreated {
			if a.kind == "gadget" {
				ackedGadgets[a.name] = a.uid
			}
		} else {
			fails[a.kind] = append(fails[a.kind], a.took())
			if !unavailable(a.attempt) || !strings.Contains(a.message, "may or may not have been applied") || a.took() > failWithin {
				t.Errorf("create %s %s: %d %s %q (err %v) after %v, want 503/504 naming etcd within %v",
					a.kind, a.name, a.code, a.reason, a.message, a.err, a.took(), failWithin)
			}
		}
		if !a.start.Before(tKill) && a.end.Before(tRestart) {
			during[a.kind]++
			if a.code == http.StatusCreated {
				t.Errorf("create %s %s succeeded while quorum was lost (%v - %v)", a.kind, a.name, a.start, a.end)
			}
		}
	}
	if during["gadget"] < writers {
		t.Errorf("only %d Gadget creates were attempted and answered during the outage", during["gadget"])
	}
	if recovery > recoverWithin {
		t.Errorf("the first Gadget create after quorum returned succeeded %v after it, want within %v", recovery, recoverWithin)
	}

	// The acknowledged Gadgets are in etcd, where customapi keeps CRs.
	lost := checkAcknowledged(t, ackedGadgets, storedUIDs(t, c, "/registry/outage.example.com/gadgets/default/"))
	for _, kind := range []string{"gadget", "custom"} {
		t.Logf("%s creates: %d answered during the outage; failures: %s", kind, during[kind], distribution(fails[kind]))
	}
	t.Logf("recovery: quorum %v after the restart; first Gadget create acknowledged %v after quorum",
		tQuorum.Sub(tRestart).Round(time.Millisecond), recovery.Round(time.Millisecond))
	t.Logf("Gadgets: %d acknowledged, %d lost", len(ackedGadgets), lost)
}

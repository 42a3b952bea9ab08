package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/customapi/customapi/internal/binarytest"
)

// gadgetsCRD is the CRD of the garbage collection case: Gadgets own and are
// owned by ConfigMaps.
const gadgetsCRD = "testdata/gc/gadgets.yaml"

// gcKind is a kind of the collected objects as kubectl names and writes them.
type gcKind struct {
	resource   string // for kubectl get: customs.test, gadgets.gc.example.com
	apiVersion string
	kind       string
	body       string // the manifest after metadata
}

var (
	gcCustom    = gcKind{resource: "customs.test", apiVersion: "test/v1", kind: "Custom", body: "spec:\n  replicas: 1\n"}
	gcGadget    = gcKind{resource: "gadgets.gc.example.com", apiVersion: "gc.example.com/v1", kind: "Gadget", body: "spec:\n  color: red\n"}
	gcConfigMap = gcKind{resource: "configmaps", apiVersion: "v1", kind: "ConfigMap", body: "data:\n  k: v\n"}
)

// gcOwner is an owner reference: an object of kind named name with uid.
type gcOwner struct {
	kind      gcKind
	name, uid string
}

// manifest is the YAML of an object of kind named name, owned by owners
// (controller, blockOwnerDeletion: controller-runtime's
// SetControllerReference), with finalizers.
func (k gcKind) manifest(name string, owners []gcOwner, finalizers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n", k.apiVersion, k.kind, name)
	if len(owners) != 0 {
		b.WriteString("  ownerReferences:\n")
		for _, o := range owners {
			fmt.Fprintf(&b, "  - apiVersion: %s\n    kind: %s\n    name: %s\n    uid: %s\n    controller: true\n    blockOwnerDeletion: true\n",
				o.kind.apiVersion, o.kind.kind, o.name, o.uid)
		}
	}
	if len(finalizers) != 0 {
		fmt.Fprintf(&b, "  finalizers: [%s]\n", strings.Join(finalizers, ", "))
	}
	b.WriteString(k.body)
	return b.String()
}

// gcCreate creates an object of kind named name owned by owners (with
// finalizers) and returns it as an owner.
func gcCreate(t *testing.T, k kubectl, kind gcKind, name string, owners []gcOwner, finalizers ...string) gcOwner {
	t.Helper()
	res := k.runStdin(t, kind.manifest(name, owners, finalizers...), "create", "-f", "-", "-o", "jsonpath={.metadata.uid}")
	uid := strings.TrimSpace(res.Stdout)
	if res.Code != 0 || !regexp.MustCompile("^"+uidRE+"$").MatchString(uid) {
		t.Fatalf("create %s %s: want its uid\n%s", kind.kind, name, res)
	}
	return gcOwner{kind: kind, name: name, uid: uid}
}

// gcGone is a step polling until kind/name is not found.
func gcGone(kind gcKind, name string) step {
	return step{args: []string{"get", kind.resource, name, "--ignore-not-found", "-o", "name"}, empty: true, poll: true}
}

// gcGet is a step expecting the JSONPath template of kind/name to match re.
func gcGet(kind gcKind, name, template, re string) step {
	return step{args: []string{"get", kind.resource, name, "-o", "jsonpath=" + template}, stdout: []string{re}}
}

// gcObserved returns once the collector observes kind's objects created so
// far: an object of kind owned by a uid no object has is created, and
// deleted by the collector. (An owner deleted with orphan or foreground
// before the collector saw its dependents finishes at once, as kube's; a
// new CRD's objects are watched from the collector's next discovery, every
// 10 s.)
func gcObserved(t *testing.T, k kubectl, kind gcKind) {
	t.Helper()
	name := "observed-" + uuid.NewString()[:8]
	gcCreate(t, k, kind, name, []gcOwner{{kind: gcCustom, name: "nobody", uid: uuid.NewString()}})
	gcGone(kind, name).run(t, k)
}

// gcRun runs steps, stopping at the first failing one.
func gcRun(t *testing.T, k kubectl, steps ...step) {
	t.Helper()
	for _, st := range steps {
		st.run(t, k)
		if t.Failed() {
			t.FailNow()
		}
	}
}

// TestKubectlGarbageCollection with kubectl against `customapi
// serve` (its garbage collector is on): a three-level chain f -> ConfigMaps
// d1, d2 -> ConfigMap c1 (d1 owns c1), with f a Go-typed Custom or a
// custom resource (a Gadget of a CRD applied here), deleted with
// --cascade=background, foreground and orphan; a ConfigMap owning a
// Gadget owning a ConfigMap; a dangling uid; a namespace deleted with its
// chains.
func TestKubectlGarbageCollection(t *testing.T) {
	binarytest.Kubectl(t)
	srv := startServer(t, "") // the collector is on by default
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the server's collector and requests:\n%s", srv.Goroutines("garbagecollector", "filters.(*timeoutHandler)"))
		}
	})
	admin := newKubectl(t, srv.KubeconfigPath, "")
	crd, err := os.ReadFile(gadgetsCRD)
	if err != nil {
		t.Fatal(err)
	}
	admin.mustApply(t, string(crd))
	admin.mustRun(t, "wait", "--for=condition=Established", "crd/gadgets.gc.example.com", "--timeout=30s")
	seq := 0
	namespace := func(t *testing.T) kubectl {
		t.Helper()
		seq++
		ns := fmt.Sprintf("gc-%d", seq)
		ensureNamespace(t, srv.KubeconfigPath, ns)
		return admin.inNamespace(ns)
	}
	// The collector watches gadgets from its first discovery after the
	// CRD (and discovery may lag Established).
	gcObserved(t, namespace(t), gcGadget)

	for _, owner := range []gcKind{gcCustom, gcGadget} {
		t.Run(owner.kind+" owner", func(t *testing.T) {
			for _, tc := range []struct {
				cascade string
				hold    bool // c1 has the finalizer example.com/hold
				steps   func(ch gcChain) []step
			}{
				{cascade: "background", steps: func(ch gcChain) []step {
					return []step{
						{args: []string{"delete", owner.resource, "f", "--cascade=background"}, stdout: []string{`^\S+ "f" deleted`}},
						{args: []string{"get", owner.resource, "f"}, code: 1, stderr: []string{`(?i)NotFound|not found`}},
						{args: []string{"get", "configmaps", "d1", "d2", "c1", "--ignore-not-found", "-o", "name"}, empty: true, poll: true},
					}
				}},
				{cascade: "foreground", hold: true, steps: func(ch gcChain) []step {
					return []step{
						// kubectl would wait for f, which waits for c1.
						{args: []string{"delete", owner.resource, "f", "--cascade=foreground", "--wait=false"}, stdout: []string{`^\S+ "f" deleted`}},
						gcGet(owner, "f", "{.metadata.deletionTimestamp}", `^\d{4}-\d\d-\d\dT`),
						gcGet(owner, "f", "{.metadata.finalizers}", `^\["foregroundDeletion"\]$`),
						gcGone(gcConfigMap, "d2"),
						{args: []string{"get", "configmap", "c1", "-o", "jsonpath={.metadata.deletionTimestamp}"}, stdout: []string{`^\d{4}-`}, poll: true},
						// d1 has a dependent: it is deleted in the foreground
						// too, and waits for c1, as f waits for d1.
						gcGet(gcConfigMap, "d1", "{.metadata.finalizers}", `^\["foregroundDeletion"\]$`),
						gcGet(owner, "f", "{.metadata.finalizers}", `^\["foregroundDeletion"\]$`),
						gcGet(gcConfigMap, "c1", "{.metadata.finalizers}", `^\["example.com/hold"\]$`),
						{args: []string{"patch", "configmap", "c1", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`}, stdout: []string{`patched`}},
						gcGone(gcConfigMap, "c1"),
						gcGone(gcConfigMap, "d1"),
						gcGone(owner, "f"),
					}
				}},
				{cascade: "orphan", steps: func(ch gcChain) []step {
					return []step{
						// kubectl waits until f is gone: the collector
						// orphaned d1 and d2 and removed the finalizer orphan.
						{args: []string{"delete", owner.resource, "f", "--cascade=orphan", "--timeout=30s"}, stdout: []string{`^\S+ "f" deleted`}},
						{args: []string{"get", owner.resource, "f"}, code: 1, stderr: []string{`(?i)NotFound|not found`}},
						{args: []string{"get", "configmap", "d1", "-o", "jsonpath={.metadata.ownerReferences}"}, empty: true},
						{args: []string{"get", "configmap", "d2", "-o", "jsonpath={.metadata.ownerReferences}"}, empty: true},
						gcGet(gcConfigMap, "c1", "{.metadata.ownerReferences[0].uid}", "^"+ch.d1.uid+"$"),
						{args: []string{"get", "configmaps", "d1", "d2", "c1", "-o", "jsonpath={.items[*].metadata.deletionTimestamp}"}, empty: true},
					}
				}},
			} {
				t.Run(tc.cascade, func(t *testing.T) {
					k := namespace(t)
					var fin []string
					if tc.hold {
						fin = []string{"example.com/hold"}
					}
					ch := gcCreateChain(t, k, owner, fin...)
					gcObserved(t, k, gcConfigMap)
					gcRun(t, k, tc.steps(ch)...)
				})
			}
		})
	}

	t.Run("ConfigMap owner of a Gadget", func(t *testing.T) {
		for _, cascade := range []string{"background", "foreground"} {
			t.Run(cascade, func(t *testing.T) {
				k := namespace(t)
				cfg := gcCreate(t, k, gcConfigMap, "cfg", nil)
				g1 := gcCreate(t, k, gcGadget, "g1", []gcOwner{cfg})
				gcCreate(t, k, gcConfigMap, "leaf", []gcOwner{g1})
				gcObserved(t, k, gcGadget)
				gcObserved(t, k, gcConfigMap)
				if cascade == "foreground" {
					// kubectl waits for cfg, which goes after g1 and leaf.
					gcRun(t, k,
						step{args: []string{"delete", "configmap", "cfg", "--cascade=foreground", "--timeout=30s"}, stdout: []string{`^configmap "cfg" deleted`}},
						step{args: []string{"get", gcGadget.resource, "g1", "--ignore-not-found", "-o", "name"}, empty: true},
						step{args: []string{"get", "configmap", "leaf", "--ignore-not-found", "-o", "name"}, empty: true},
					)
					return
				}
				gcRun(t, k,
					step{args: []string{"delete", "configmap", "cfg", "--cascade=background"}, stdout: []string{`^configmap "cfg" deleted`}},
					gcGone(gcGadget, "g1"),
					gcGone(gcConfigMap, "leaf"),
				)
			})
		}
	})

	t.Run("dangling uid", func(t *testing.T) {
		for _, owner := range []gcKind{gcCustom, gcGadget} {
			t.Run(owner.kind, func(t *testing.T) {
				k := namespace(t)
				f := gcCreate(t, k, owner, "f", nil)
				stale := f
				stale.uid = uuid.NewString()
				gcCreate(t, k, gcConfigMap, "valid", []gcOwner{f})
				gcCreate(t, k, gcConfigMap, "stale", []gcOwner{stale})
				gcRun(t, k,
					gcGone(gcConfigMap, "stale"),
					gcGet(gcConfigMap, "valid", "{.metadata.ownerReferences[0].uid}", "^"+f.uid+"$"),
				)
			})
		}
	})

	t.Run("namespace deletion", func(t *testing.T) {
		k := namespace(t)
		gcCreateChain(t, k, gcGadget)
		cfg := gcCreate(t, k, gcConfigMap, "cfg", nil)
		gcCreate(t, k, gcGadget, "g1", []gcOwner{cfg})
		c := gcCreate(t, k, gcCustom, "c", nil)
		gcCreate(t, k, gcGadget, "g2", []gcOwner{c})
		admin.mustRun(t, "delete", "namespace", k.namespace, "--timeout=60s")
		gcRun(t, admin,
			step{args: []string{"get", "namespace", k.namespace, "--ignore-not-found", "-o", "name"}, empty: true},
			step{args: []string{"get", "gadgets.gc.example.com,customs.test,configmaps", "-n", k.namespace, "-o", "name"}, empty: true},
		)
	})
}

// gcChain is G1's chain: f owns d1 and d2, d1 owns c1.
type gcChain struct {
	f, d1, d2, c1 gcOwner
}

// gcCreateChain creates the chain with f of kind owner; c1 has finalizers.
func gcCreateChain(t *testing.T, k kubectl, owner gcKind, c1Finalizers ...string) gcChain {
	t.Helper()
	var ch gcChain
	ch.f = gcCreate(t, k, owner, "f", nil)
	ch.d1 = gcCreate(t, k, gcConfigMap, "d1", []gcOwner{ch.f})
	ch.d2 = gcCreate(t, k, gcConfigMap, "d2", []gcOwner{ch.f})
	ch.c1 = gcCreate(t, k, gcConfigMap, "c1", []gcOwner{ch.d1}, c1Finalizers...)
	return ch
}

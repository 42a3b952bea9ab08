package e2e

// Writes through both doors of one server: the in-process Go client and
// the real kubectl over HTTPS. Unlike the rest of this package it needs
// the in-process client, so the server runs in this test process
// (customapitest), not as the built binary.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
)

// An object created from Go records the Go program's field manager
// (client.DefaultFieldManager) as owner of spec.replicas, so
// `kubectl apply --server-side` of a manifest setting spec.replicas
// differently conflicts naming that manager, as if both writes had come
// over HTTP; with --force-conflicts kubectl takes the field over and the Go
// client reads kubectl's value and kubectl as a manager.
func TestApplyConflictsWithGoCreate(t *testing.T) {
	binarytest.Kubectl(t) // skips (or fails under CI=true) without kubectl, before any server starts
	srv := customapitest.Start(t, install.Customs)
	ns := customapitest.Namespace(t)
	all, err := client.For[*testv1.Custom, *testv1.CustomList](srv.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	customs := all.Namespace(ns)
	ctx := t.Context()
	if _, err := customs.Create(ctx, &testv1.Custom{
		ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		Spec:       testv1.CustomSpec{Message: "from go", Replicas: 1},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	manifest := filepath.Join(t.TempDir(), "custom.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: test/v1
kind: Custom
metadata:
  name: shared
  namespace: `+ns+`
spec:
  message: from go
  replicas: 5
`), 0o600); err != nil {
		t.Fatal(err)
	}
	k := newKubectl(t, srv.KubeconfigPath, ns)

	res := k.run(t, "apply", "--server-side", "-f", manifest)
	if res.Code == 0 {
		t.Fatalf("apply without --force-conflicts succeeded, want a conflict:\n%s", res)
	}
	if want := `conflict with "` + client.DefaultFieldManager + `"`; !strings.Contains(res.Stderr, want) || !strings.Contains(res.Stderr, ".spec.replicas") {
		t.Fatalf("stderr does not name the conflict %s on .spec.replicas:\n%s", want, res)
	}
	got, err := customs.Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas != 1 {
		t.Fatalf("replicas %d after the conflicting apply, want 1 (unchanged)", got.Spec.Replicas)
	}

	res = k.run(t, "apply", "--server-side", "--force-conflicts", "-f", manifest)
	if res.Code != 0 {
		t.Fatalf("apply --force-conflicts failed:\n%s", res)
	}
	got, err = customs.Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas != 5 {
		t.Fatalf("replicas %d after the forced apply, want 5", got.Spec.Replicas)
	}
	var managers []string
	for _, mf := range got.ManagedFields {
		managers = append(managers, mf.Manager+"/"+string(mf.Operation))
	}
	if !slices.Contains(managers, "kubectl/Apply") {
		t.Fatalf("managedFields managers %v, want kubectl/Apply among them", managers)
	}
	t.Logf("managers after the forced apply: %v", managers)
}

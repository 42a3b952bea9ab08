package registry_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/workspace"
)

// TestAuditWorkspace: an in-process request of a named workspace is
// audited with the annotation customapi.io/workspace, as over HTTP; one of
// the default workspace has none.
func TestAuditWorkspace(t *testing.T) {
	log := &customapitest.LockedBuffer{}
	_, st := customsStore(t, auditAt(auditinternal.LevelMetadata, log))
	for _, ws := range []string{workspace.Default, "team-a"} {
		ctx := workspace.NewContext(t.Context(), ws)
		if _, err := st.Create(ctx, registry.Caller{Namespace: "default"}, auditCustom("c-"+ws), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	for _, ev := range auditEvents(t, log) {
		if ev.Stage == auditv1.StageResponseComplete && ev.ObjectRef != nil {
			got[ev.ObjectRef.Name] = ev.Annotations[workspace.Annotation]
		}
	}
	if len(got) != 2 || got["c-default"] != "" || got["c-team-a"] != "team-a" {
		t.Fatalf("workspace annotations by object: %v", got)
	}
}

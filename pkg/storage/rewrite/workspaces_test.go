package rewrite_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/storage/rewrite"
	"github.com/customapi/customapi/pkg/workspace"
)

// TestRewriteKeepsWorkspaces: a rewrite to another encoding re-encodes a
// named workspace's objects under their keys, keeping their workspace.
func TestRewriteKeepsWorkspaces(t *testing.T) {
	cfg, base := customapitest.Etcd(t)
	prefix := base + "/ws"
	ctx := t.Context()
	reg, c := openAs(t, cfg, prefix, runtime.ContentTypeJSON, false)
	for _, ws := range []string{workspace.Default, "team-a"} {
		if _, err := c.InWorkspace(ws).Namespace("ns1").Create(ctx, newCustom("ns1", "x", ws, 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	reg, c = openAs(t, cfg, prefix, runtime.ContentTypeProtobuf, false)
	defer reg.Close()
	report, err := reg.RewriteStorage(ctx, rewrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := findResource(t, report); r.Rewritten != 2 || r.Failed != 0 {
		t.Fatalf("report %s", r)
	}
	byKey, _ := rawEncodings(t, cfg, prefix)
	if byKey["ns1/x"] != runtime.ContentTypeProtobuf || byKey["%team-a/ns1/x"] != runtime.ContentTypeProtobuf || len(byKey) != 2 {
		t.Fatalf("keys after the rewrite: %v", byKey)
	}
	got, err := c.InWorkspace("team-a").Namespace("ns1").Get(ctx, "x", metav1.GetOptions{})
	if err != nil || workspace.Of(got) != "team-a" || got.Labels["origin"] != "team-a" {
		t.Fatalf("team-a's object after the rewrite: %v %v", got, err)
	}
	list, err := c.Namespace("").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Labels["origin"] != workspace.Default {
		t.Fatalf("the default workspace after the rewrite: %v %v", list, err)
	}
}

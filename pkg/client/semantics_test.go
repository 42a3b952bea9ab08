package client_test

// In-process rules of the typed client. The storage semantics (keys,
// resourceVersions, metadata, conflicts, watches) run through both doors in
// test/semantics.

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/customapi/customapi/pkg/customapitest"
)

// Bad input of every other kind gets the right Status reason and writes
// nothing.
func TestBadInput(t *testing.T) {
	e := newEnv(t, customapitest.RegistryOptions{})
	ctx := t.Context()
	if _, err := e.c.Create(ctx, custom("c1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := e.snapshot(t)
	negative := custom("c2")
	negative.Spec.Replicas = -1
	badLabel := custom("c3")
	badLabel.Labels = map[string]string{"bad key!": "v"}
	badAnnotation := custom("c4")
	badAnnotation.Annotations = map[string]string{"/x": "v"}
	badFinalizer := custom("c5")
	badFinalizer.Finalizers = []string{"no/slash/allowed"}
	otherNS := custom("c6")
	otherNS.Namespace = "ns2"

	for _, tc := range []struct {
		name   string
		call   func() error
		reason metav1.StatusReason
		field  string
	}{
		{"already exists", func() error { _, err := e.c.Create(ctx, custom("c1"), metav1.CreateOptions{}); return err }, metav1.StatusReasonAlreadyExists, ""},
		{"resource validation", func() error { _, err := e.c.Create(ctx, negative, metav1.CreateOptions{}); return err }, metav1.StatusReasonInvalid, "spec.replicas"},
		{"label key", func() error { _, err := e.c.Create(ctx, badLabel, metav1.CreateOptions{}); return err }, metav1.StatusReasonInvalid, "metadata.labels"},
		{"annotation key", func() error { _, err := e.c.Create(ctx, badAnnotation, metav1.CreateOptions{}); return err }, metav1.StatusReasonInvalid, "metadata.annotations"},
		{"finalizer", func() error { _, err := e.c.Create(ctx, badFinalizer, metav1.CreateOptions{}); return err }, metav1.StatusReasonInvalid, "metadata.finalizers"},
		{"namespace mismatch", func() error { _, err := e.c.Create(ctx, otherNS, metav1.CreateOptions{}); return err }, metav1.StatusReasonBadRequest, ""},
		{"get missing", func() error { _, err := e.c.Get(ctx, "nope", metav1.GetOptions{}); return err }, metav1.StatusReasonNotFound, ""},
		{"update missing", func() error {
			o := custom("nope")
			o.ResourceVersion = "1"
			_, err := e.c.Update(ctx, o, metav1.UpdateOptions{})
			return err
		}, metav1.StatusReasonNotFound, ""},
		{"delete missing", func() error { return e.c.Delete(ctx, "nope", metav1.DeleteOptions{}) }, metav1.StatusReasonNotFound, ""},
		{"label selector", func() error { _, err := e.c.List(ctx, metav1.ListOptions{LabelSelector: "a in (b"}); return err }, metav1.StatusReasonBadRequest, ""},
		{"field selector syntax", func() error { _, err := e.c.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name"}); return err }, metav1.StatusReasonBadRequest, ""},
		{"field selector field", func() error { _, err := e.c.List(ctx, metav1.ListOptions{FieldSelector: "spec.nope=x"}); return err }, metav1.StatusReasonBadRequest, ""},
		{"resourceVersionMatch without resourceVersion", func() error {
			_, err := e.c.List(ctx, metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact})
			return err
		}, metav1.StatusReasonInvalid, ""},
		{"malformed merge patch", func() error {
			_, err := e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"malformed json patch", func() error {
			_, err := e.c.Patch(ctx, "c1", types.JSONPatchType, []byte(`{"op":"add"}`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"json patch test fails", func() error {
			_, err := e.c.Patch(ctx, "c1", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/message","value":"other"}]`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonInvalid, ""}, // 422, as kube-apiserver answers a failed JSON patch

		{"patch changes name", func() error {
			_, err := e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"metadata":{"name":"c9"}}`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"patch with wrong type", func() error {
			_, err := e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"replicas":"three"}}`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonInvalid, "spec.replicas"}, // 422 naming the field (kube-apiserver: Invalid on "patch")

		{"patch makes it invalid", func() error {
			_, err := e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"replicas":-5}}`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonInvalid, "spec.replicas"},
		{"unsupported patch type", func() error {
			_, err := e.c.Patch(ctx, "c1", types.PatchType("application/x-unknown"), []byte(`{}`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonUnsupportedMediaType, ""},
		{"stale resourceVersion in patch", func() error {
			_, err := e.c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"1"},"spec":{"message":"p"}}`), metav1.PatchOptions{})
			return err
		}, metav1.StatusReasonConflict, ""},
		{"get at a negative resourceVersion", func() error {
			_, err := e.c.Get(ctx, "c1", metav1.GetOptions{ResourceVersion: "-1"})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"list at a non-numeric resourceVersion", func() error {
			_, err := e.c.List(ctx, metav1.ListOptions{ResourceVersion: "abc"})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"watch from a negative resourceVersion", func() error {
			_, err := e.c.Watch(ctx, metav1.ListOptions{ResourceVersion: "-1"})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"list in namespace ..", func() error {
			_, err := e.all.Namespace("..").List(ctx, metav1.ListOptions{})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"watch in namespace .", func() error {
			_, err := e.all.Namespace(".").Watch(ctx, metav1.ListOptions{})
			return err
		}, metav1.StatusReasonBadRequest, ""},
		{"get without namespace", func() error { _, err := e.all.Get(ctx, "c1", metav1.GetOptions{}); return err }, metav1.StatusReasonBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := customapitest.RequireReason(t, tc.call(), tc.reason)
			if tc.field != "" {
				customapitest.RequireCause(t, st, tc.field)
			}
			if after := e.snapshot(t); !equalMaps(before, after) {
				t.Fatalf("etcd changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

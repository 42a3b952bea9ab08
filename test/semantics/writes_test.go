package semantics_test

// Patch types, field validation, dry-run, DeleteCollection and bad input
// that can be expressed through both doors. Raw bodies (malformed JSON or
// YAML, wrong kind or apiVersion, unknown or duplicate fields in a create
// or update body, media types, bodies over the 3 MiB request limit) cannot
// be written as Go objects: they are HTTP-only and stay in pkg/server
// (input_test.go, badinput_test.go).

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
)

// JSON patch, merge patch, strategic merge patch and server-side apply on
// the main resource and the status subresource.
func TestPatchTypes(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		ctx := t.Context()
		obj := custom("p1")
		obj.Finalizers = []string{"example.com/a"}
		create(t, c, obj)

		t.Run("merge patch", func(t *testing.T) {
			got, err := c.Patch(ctx, "p1", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"1"}},"spec":{"replicas":4}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Labels["x"] != "1" || got.Spec.Replicas != 4 || got.Spec.Message != "hello" || got.Generation != 2 {
				t.Fatalf("merge patch result labels %v spec %+v generation %d", got.Labels, got.Spec, got.Generation)
			}
		})
		t.Run("json patch", func(t *testing.T) {
			got, err := c.Patch(ctx, "p1", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/message","value":"patched"},{"op":"test","path":"/spec/replicas","value":4}]`), metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.Message != "patched" || got.Generation != 3 {
				t.Fatalf("json patch result spec %+v generation %d", got.Spec, got.Generation)
			}
		})
		t.Run("merge patch of status", func(t *testing.T) {
			got, err := c.Patch(ctx, "p1", types.MergePatchType, []byte(`{"status":{"phase":"Ready"},"spec":{"replicas":100}}`), metav1.PatchOptions{}, "status")
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != "Ready" || got.Spec.Replicas != 4 {
				t.Fatalf("status patch result %+v %+v", got.Spec, got.Status)
			}
		})
		t.Run("strategic merge patch merges finalizers", func(t *testing.T) {
			// metadata.finalizers has patchStrategy merge: the patch adds
			// to the list instead of replacing it.
			got, err := c.Patch(ctx, "p1", types.StrategicMergePatchType, []byte(`{"metadata":{"finalizers":["example.com/b"]},"spec":{"replicas":5}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !sameSet(got.Finalizers, "example.com/a", "example.com/b") || got.Spec.Replicas != 5 {
				t.Fatalf("strategic merge patch result finalizers %v replicas %d", got.Finalizers, got.Spec.Replicas)
			}
		})
		t.Run("server-side apply", func(t *testing.T) {
			manifest := "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: p2\nspec:\n  message: applied\n  replicas: 2\n"
			got, err := c.Patch(ctx, "p2", types.ApplyYAMLPatchType, []byte(manifest), metav1.PatchOptions{FieldManager: "applier"})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.Message != "applied" || !hasManager(got, "applier") {
				t.Fatalf("applied %+v managers %+v", got.Spec, got.ManagedFields)
			}
			// A second manager changing an owned field conflicts; Force takes it.
			other := "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: p2\nspec:\n  replicas: 3\n"
			_, err = c.Patch(ctx, "p2", types.ApplyYAMLPatchType, []byte(other), metav1.PatchOptions{FieldManager: "other"})
			st := customapitest.RequireReason(t, err, metav1.StatusReasonConflict)
			if !strings.Contains(st.Message, "applier") {
				t.Fatalf("conflict message %q does not name the owner", st.Message)
			}
			got, err = c.Patch(ctx, "p2", types.ApplyYAMLPatchType, []byte(other), metav1.PatchOptions{FieldManager: "other", Force: ptr.To(true)})
			if err != nil || got.Spec.Replicas != 3 {
				t.Fatalf("forced apply: %v, replicas %d", err, got.Spec.Replicas)
			}
		})
	})
}

// Every create, update and patch records managedFields, as the HTTP
// handlers do.
func TestWritesRecordManagedFields(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		ctx := t.Context()
		created, err := c.Create(ctx, custom("m1"), metav1.CreateOptions{FieldManager: "writer"})
		if err != nil {
			t.Fatal(err)
		}
		if !hasManager(created, "writer") {
			t.Fatalf("create: managedFields %+v lack writer", created.ManagedFields)
		}
		created.Spec.Replicas = 2
		updated, err := c.Update(ctx, created, metav1.UpdateOptions{FieldManager: "updater"})
		if err != nil || !hasManager(updated, "updater") {
			t.Fatalf("update: %v, managedFields %+v lack updater", err, updated.ManagedFields)
		}
		patched, err := c.Patch(ctx, "m1", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{FieldManager: "patcher"})
		if err != nil || !hasManager(patched, "patcher") {
			t.Fatalf("patch: %v, managedFields %+v lack patcher", err, patched.ManagedFields)
		}
	})
}

// fieldValidation on a patch with an unknown field: Strict rejects it
// (Invalid on "patch", as kube-apiserver reports patches), Warn and Ignore
// accept it without storing the field, and unset is the server's default,
// Warn. Over HTTP, Warn answers with a
// Warning header naming the field; the in-process door has no warnings
// channel today, so that part is HTTP-only.
func TestFieldValidation(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		ns := namespace(t)
		c, warned := d.httpWithWarnings(t, ns)
		ctx := t.Context()
		create(t, c, custom("f1"))
		patch := []byte(`{"spec":{"replicas":2,"bogus":true}}`)
		t.Run("Strict", func(t *testing.T) {
			before := snapshot(t, c)
			_, err := c.Patch(ctx, "f1", types.MergePatchType, patch, metav1.PatchOptions{FieldValidation: metav1.FieldValidationStrict})
			st := customapitest.RequireReason(t, err, metav1.StatusReasonInvalid)
			customapitest.RequireCause(t, st, "patch")
			if !strings.Contains(st.Message, `unknown field "spec.bogus"`) {
				t.Fatalf("message %q does not name spec.bogus", st.Message)
			}
			requireUnchanged(t, c, before)
		})
		for _, fv := range []string{metav1.FieldValidationWarn, metav1.FieldValidationIgnore, ""} {
			t.Run("directive="+fv, func(t *testing.T) {
				n := len(warned.all())
				got, err := c.Patch(ctx, "f1", types.MergePatchType, patch, metav1.PatchOptions{FieldValidation: fv})
				if err != nil || got.Spec.Replicas != 2 {
					t.Fatalf("%v, replicas %d", err, got.Spec.Replicas)
				}
				w := strings.Join(warned.all()[n:], "\n")
				if has := strings.Contains(w, `unknown field "spec.bogus"`); has != (fv != metav1.FieldValidationIgnore) {
					t.Fatalf("warnings %q under %s", w, fv)
				}
			})
		}
		t.Run("unknown fieldValidation value", func(t *testing.T) {
			_, err := c.Create(ctx, custom("f2"), metav1.CreateOptions{FieldValidation: "Bogus"})
			customapitest.RequireCause(t, customapitest.RequireReason(t, err, metav1.StatusReasonInvalid), "fieldValidation")
		})
	})
}

// dryRun=All runs a write through validation and admission and stores
// nothing.
func TestDryRun(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		ctx := t.Context()
		c1 := create(t, c, custom("c1"))
		before := snapshot(t, c)
		dry := []string{metav1.DryRunAll}
		t.Run("create", func(t *testing.T) {
			got, err := c.Create(ctx, custom("dry"), metav1.CreateOptions{DryRun: dry})
			if err != nil || got.Name != "dry" || got.UID == "" || got.Generation != 1 {
				t.Fatalf("dry-run create: %v, %+v", err, got.ObjectMeta)
			}
			_, err = c.Get(ctx, "dry", metav1.GetOptions{})
			customapitest.RequireReason(t, err, metav1.StatusReasonNotFound)
			requireUnchanged(t, c, before)
		})
		t.Run("create invalid", func(t *testing.T) {
			bad := custom("dry")
			bad.Spec.Replicas = -1
			_, err := c.Create(ctx, bad, metav1.CreateOptions{DryRun: dry})
			customapitest.RequireCause(t, customapitest.RequireReason(t, err, metav1.StatusReasonInvalid), "spec.replicas")
		})
		t.Run("update", func(t *testing.T) {
			changed := c1.DeepCopy()
			changed.Spec.Replicas = 5
			got, err := c.Update(ctx, changed, metav1.UpdateOptions{DryRun: dry})
			if err != nil || got.Spec.Replicas != 5 || got.Generation != 2 {
				t.Fatalf("dry-run update: %v, replicas %d generation %d", err, got.Spec.Replicas, got.Generation)
			}
			requireUnchanged(t, c, before)
		})
		t.Run("merge patch", func(t *testing.T) {
			got, err := c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"replicas":7}}`), metav1.PatchOptions{DryRun: dry})
			if err != nil || got.Spec.Replicas != 7 {
				t.Fatalf("dry-run patch: %v, replicas %d", err, got.Spec.Replicas)
			}
			requireUnchanged(t, c, before)
		})
		t.Run("server-side apply", func(t *testing.T) {
			_, err := c.Patch(ctx, "dry2", types.ApplyYAMLPatchType, []byte("apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: dry2\n"),
				metav1.PatchOptions{DryRun: dry, FieldManager: "x"})
			if err != nil {
				t.Fatal(err)
			}
			requireUnchanged(t, c, before)
		})
		t.Run("delete", func(t *testing.T) {
			if err := c.Delete(ctx, "c1", metav1.DeleteOptions{DryRun: dry}); err != nil {
				t.Fatal(err)
			}
			requireUnchanged(t, c, before)
		})
		t.Run("delete collection", func(t *testing.T) {
			if err := c.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: dry}, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			requireUnchanged(t, c, before)
		})
		t.Run("unknown dryRun value", func(t *testing.T) {
			_, err := c.Create(ctx, custom("x1"), metav1.CreateOptions{DryRun: []string{"Bogus"}})
			customapitest.RequireCause(t, customapitest.RequireReason(t, err, metav1.StatusReasonInvalid), "dryRun")
			requireUnchanged(t, c, before)
		})
	})
}

// DeleteCollection deletes exactly the objects its selector matches.
func TestDeleteCollection(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		c := d.customs(namespace(t))
		for i, gone := range []string{"true", "true", "true", "false"} {
			obj := custom("d" + string(rune('0'+i)))
			obj.Labels = map[string]string{"gone": gone}
			create(t, c, obj)
		}
		if err := c.DeleteCollection(t.Context(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "gone=true"}); err != nil {
			t.Fatal(err)
		}
		list, err := c.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "d3" {
			t.Fatalf("%d objects left, want d3", len(list.Items))
		}
	})
}

// Bad input that both doors can express gets the same Status reason (and
// field cause) and writes nothing.
func TestBadInput(t *testing.T) {
	forEachDoor(t, func(t *testing.T, d door) {
		ns := namespace(t)
		c := d.customs(ns)
		ctx := t.Context()
		create(t, c, custom("c1"))
		before := snapshot(t, c)
		with := func(mutate func(*testv1.Custom)) *testv1.Custom {
			obj := custom("x1")
			mutate(obj)
			return obj
		}
		createErr := func(obj *testv1.Custom) func() error {
			return func() error { _, err := c.Create(ctx, obj, metav1.CreateOptions{}); return err }
		}
		patchErr := func(pt types.PatchType, body string, opts metav1.PatchOptions) func() error {
			return func() error { _, err := c.Patch(ctx, "c1", pt, []byte(body), opts); return err }
		}
		for _, tc := range []struct {
			name   string
			call   func() error
			reason metav1.StatusReason
			field  string
		}{
			{"already exists", createErr(custom("c1")), metav1.StatusReasonAlreadyExists, ""},
			{"resource validation", createErr(with(func(o *testv1.Custom) { o.Spec.Replicas = -1 })), metav1.StatusReasonInvalid, "spec.replicas"},
			{"label key", createErr(with(func(o *testv1.Custom) { o.Labels = map[string]string{"bad key!": "v"} })), metav1.StatusReasonInvalid, "metadata.labels"},
			{"annotation key", createErr(with(func(o *testv1.Custom) { o.Annotations = map[string]string{"/x": "v"} })), metav1.StatusReasonInvalid, "metadata.annotations"},
			{"finalizer", createErr(with(func(o *testv1.Custom) { o.Finalizers = []string{"no/slash/allowed"} })), metav1.StatusReasonInvalid, "metadata.finalizers"},
			{"namespace mismatch", createErr(with(func(o *testv1.Custom) { o.Namespace = namespace(t) })), metav1.StatusReasonBadRequest, ""},
			{"get missing", func() error { _, err := c.Get(ctx, "nope", metav1.GetOptions{}); return err }, metav1.StatusReasonNotFound, ""},
			{"update missing", func() error {
				o := custom("nope")
				o.ResourceVersion = "1"
				_, err := c.Update(ctx, o, metav1.UpdateOptions{})
				return err
			}, metav1.StatusReasonNotFound, ""},
			{"delete missing", func() error { return c.Delete(ctx, "nope", metav1.DeleteOptions{}) }, metav1.StatusReasonNotFound, ""},
			{"patch missing", func() error {
				_, err := c.Patch(ctx, "nope", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
				return err
			}, metav1.StatusReasonNotFound, ""},
			{"label selector", func() error { _, err := c.List(ctx, metav1.ListOptions{LabelSelector: "a in (b"}); return err }, metav1.StatusReasonBadRequest, ""},
			{"field selector syntax", func() error { _, err := c.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name"}); return err }, metav1.StatusReasonBadRequest, ""},
			{"field selector field", func() error { _, err := c.List(ctx, metav1.ListOptions{FieldSelector: "spec.nope=x"}); return err }, metav1.StatusReasonBadRequest, ""},
			{"resourceVersionMatch without resourceVersion", func() error {
				_, err := c.List(ctx, metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact})
				return err
			}, metav1.StatusReasonInvalid, ""},
			{"unknown propagationPolicy", func() error {
				p := metav1.DeletionPropagation("Bogus")
				return c.Delete(ctx, "c1", metav1.DeleteOptions{PropagationPolicy: &p})
			}, metav1.StatusReasonInvalid, "propagationPolicy"},
			{"malformed merge patch", patchErr(types.MergePatchType, `{"spec":`, metav1.PatchOptions{}), metav1.StatusReasonBadRequest, ""},
			{"malformed json patch", patchErr(types.JSONPatchType, `{"op":"add"}`, metav1.PatchOptions{}), metav1.StatusReasonBadRequest, ""},
			{"json patch test fails", patchErr(types.JSONPatchType, `[{"op":"test","path":"/spec/message","value":"other"}]`, metav1.PatchOptions{}), metav1.StatusReasonInvalid, ""},
			{"patch changes name", patchErr(types.MergePatchType, `{"metadata":{"name":"c9"}}`, metav1.PatchOptions{}), metav1.StatusReasonBadRequest, ""},
			{"patch with a value of the wrong type", patchErr(types.MergePatchType, `{"spec":{"replicas":"three"}}`, metav1.PatchOptions{}), metav1.StatusReasonInvalid, "spec.replicas"},
			{"patch makes it invalid", patchErr(types.MergePatchType, `{"spec":{"replicas":-5}}`, metav1.PatchOptions{}), metav1.StatusReasonInvalid, "spec.replicas"},
			{"stale resourceVersion in a patch", patchErr(types.MergePatchType, `{"metadata":{"resourceVersion":"1"},"spec":{"message":"p"}}`, metav1.PatchOptions{}), metav1.StatusReasonConflict, ""},
			{"malformed strategic merge patch", patchErr(types.StrategicMergePatchType, `{"spec":`, metav1.PatchOptions{}), metav1.StatusReasonBadRequest, ""},
			// upstream answers 500 to these.
			{"unknown $patch directive", patchErr(types.StrategicMergePatchType, `{"metadata":{"$patch":"x"}}`, metav1.PatchOptions{}), metav1.StatusReasonBadRequest, ""},
			{"apply with an undeclared field, dry run", patchErr(types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: c1\nspec:\n  nope: 1\n", metav1.PatchOptions{FieldManager: "x", DryRun: []string{metav1.DryRunAll}}), metav1.StatusReasonBadRequest, ""},
			{"apply of a fraction into an integer", patchErr(types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: c1\nspec:\n  replicas: 1.5\n", metav1.PatchOptions{FieldManager: "x"}), metav1.StatusReasonInvalid, "spec.replicas"},
			{"server-side apply without fieldManager", patchErr(types.ApplyYAMLPatchType, "apiVersion: test/v1\nkind: Custom\nmetadata:\n  name: c1\n", metav1.PatchOptions{}), metav1.StatusReasonInvalid, "fieldManager"},
			{"malformed apply YAML", patchErr(types.ApplyYAMLPatchType, "metadata: [\n", metav1.PatchOptions{FieldManager: "x"}), metav1.StatusReasonBadRequest, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				st := customapitest.RequireReason(t, tc.call(), tc.reason)
				if tc.field != "" {
					customapitest.RequireCause(t, st, tc.field)
				}
				requireUnchanged(t, c, before)
			})
		}
	})
}

// sameSet reports whether got holds exactly the wanted strings, in any
// order.
func sameSet(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	seen := map[string]bool{}
	for _, g := range got {
		seen[g] = true
	}
	for _, w := range want {
		if !seen[w] {
			return false
		}
	}
	return true
}

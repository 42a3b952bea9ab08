package generate_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"sigs.k8s.io/yaml"

	"github.com/customapi/customapi/pkg/generate"
)

// wantCRD is what TestCRDs checks of one generated CRD.
type wantCRD struct {
	name, kind, plural, singular string
	scope                        apiextensionsv1.ResourceScope
	versions                     []string        // in the CRD's order
	storage                      string          // the storage version
	status                       map[string]bool // version -> has the status subresource
	shortNames, categories       []string
	columns                      []string // the storage version's printer columns, by JSONPath
	selectable                   []string // the storage version's selectable fields
	deprecated                   []string // the deprecated versions
	// schema: a dotted path of properties in the storage version's
	// schema -> its schema as JSON, descriptions left out.
	schema map[string]string
}

// TestCRDs generates CRDs for the example group of examples/fleet (what its
// declarations in examples/fleet/fleetapi say: storage version, short
// names, printer columns, selectable fields, a deprecated version) and for
// the small API packages under testdata/crds, which have no declarations
// (controller-tools' markers, scope from +genclient:nonNamespaced, a
// storage version from +k8s:conversion-gen), writes them with WriteCRDs, reads the YAML back and
// checks it, and validates each as the apiextensions API server validates
// a create. It also checks the refusals: a kind in several versions with
// no storage version, a CRD the server's validation refuses (a CEL rule
// that does not compile), a group without a dot.
func TestCRDs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		patterns []string
		want     []wantCRD
		warnings []string // substrings, one per warning
		wantErr  []string // substrings of the error; no CRDs then
	}{{
		name:     "examples/fleet",
		patterns: []string{"../../examples/fleet/apis/..."},
		want: []wantCRD{{
			// From fleetapi.Devices: shortNames, printer columns,
			// selectable fields.
			name: "devices.fleet.example.com", kind: "Device", plural: "devices", singular: "device",
			scope:    apiextensionsv1.ClusterScoped, // +genclient:nonNamespaced, ClusterScoped
			versions: []string{"v1alpha1"}, storage: "v1alpha1",
			status:     map[string]bool{"v1alpha1": true},
			shortNames: []string{"dev"},
			columns:    []string{".spec.model", ".spec.site", ".status.online"},
			selectable: []string{".spec.site"},
			schema: map[string]string{
				"spec.model":      `{"type":"string"}`,
				"status.lastSeen": `{"type":"string","format":"date-time"}`,
			},
		}, {
			name: "fleets.fleet.example.com", kind: "Fleet", plural: "fleets", singular: "fleet",
			scope:    apiextensionsv1.NamespaceScoped,
			versions: []string{"v1", "v1alpha1"}, storage: "v1", // fleetapi.Fleets' version; v1alpha1's +k8s:conversion-gen names it too
			status:     map[string]bool{"v1": true, "v1alpha1": true},
			columns:    []string{".spec.replicas", ".spec.placement.region", ".spec.placement.zone", ".status.readyDevices"},
			selectable: []string{".spec.placement.region"},
			deprecated: []string{"v1alpha1"},
			schema: map[string]string{
				"spec.replicas": `{"type":"integer","format":"int32","default":1}`, // +default=1
			},
		}},
		warnings: []string{"fleets.fleet.example.com: the schema of v1alpha1 differs from v1's"},
	}, {
		name:     "markers",
		patterns: []string{"./testdata/crds/widgets/v1", "./testdata/crds/widgets/v1beta1"},
		want: []wantCRD{{
			name: "gadgets.widgets.example.com", kind: "Gadget", plural: "gadgets", singular: "gadget",
			scope:    apiextensionsv1.ClusterScoped, // +genclient:nonNamespaced
			versions: []string{"v1"}, storage: "v1",
			status: map[string]bool{"v1": false}, // no status field
			schema: map[string]string{"parts": `{"type":"array","items":{"type":"string"}}`},
		}, {
			name: "gizmoes.widgets.example.com", kind: "Gizmo", plural: "gizmoes", singular: "gizmo",
			scope:    apiextensionsv1.ClusterScoped, // +kubebuilder:resource:scope=Cluster
			versions: []string{"v1"}, storage: "v1",
			status: map[string]bool{"v1": false},
		}, {
			name: "widgets.widgets.example.com", kind: "Widget", plural: "widgets", singular: "widget",
			scope:    apiextensionsv1.NamespaceScoped,
			versions: []string{"v1", "v1beta1"}, storage: "v1",
			status:     map[string]bool{"v1": true, "v1beta1": true},
			shortNames: []string{"wd"}, categories: []string{"all"},
			columns: []string{".spec.color"},
			schema: map[string]string{
				"spec": `{"type":"object","required":["color"],` +
					`"properties":{"color":{"type":"string","enum":["red","green","blue"]},` +
					`"size":{"type":"integer","format":"int32","minimum":1,"default":3}},` +
					`"x-kubernetes-validations":[{"rule":"self.size <= 10 || self.color == 'red'","message":"only red widgets are larger than 10"}]}`,
			},
		}},
	}, {
		name:     "no storage version",
		patterns: []string{"./testdata/crds/nohub/..."},
		wantErr: []string{
			"cannot generate CustomResourceDefinitions",
			"kind Thing.nohub.example.com is in",
			"+k8s:conversion-gen=<storage version's package>",
			"+kubebuilder:storageversion",
		},
	}, {
		name:     "refused by the API server's validation",
		patterns: []string{"./testdata/crds/badrule/..."},
		wantErr: []string{
			"kind Thing.badrule.example.com: the API server would refuse CustomResourceDefinition things.badrule.example.com",
			"x-kubernetes-validations[0].rule",
			"compilation failed", "undefined field 'missing'",
		},
	}, {
		name:     "group without a dot",
		patterns: []string{"./testdata/crds/nodot/..."},
		wantErr:  []string{"+groupName=nodot", "whose group has no dot", "nodot.example.com"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			crds, warnings, err := generate.CRDs(context.Background(), tc.patterns)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("CRDs succeeded, want an error with %q", tc.wantErr)
				}
				if !errors.Is(err, generate.ErrCRD) {
					t.Errorf("error does not wrap ErrCRD: %v", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not contain %q:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) != len(tc.warnings) {
				t.Errorf("warnings = %q, want %d matching %q", warnings, len(tc.warnings), tc.warnings)
			}
			for i := range min(len(warnings), len(tc.warnings)) {
				if !strings.Contains(warnings[i], tc.warnings[i]) {
					t.Errorf("warning %q does not contain %q", warnings[i], tc.warnings[i])
				}
			}
			dir := t.TempDir()
			if err := generate.WriteCRDs(dir, crds); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != len(tc.want) {
				t.Errorf("%d files written, want %d", len(entries), len(tc.want))
			}
			if len(crds) != len(tc.want) {
				t.Fatalf("%d CRDs, want %d", len(crds), len(tc.want))
			}
			for i, w := range tc.want {
				if crds[i].Name != w.name {
					t.Errorf("CRD %d is %s, want %s", i, crds[i].Name, w.name)
					continue
				}
				group := strings.SplitN(w.name, ".", 2)[1]
				file := filepath.Join(dir, group+"_"+w.plural+".yaml")
				checkCRDFile(t, file, w)
			}
		})
	}
}

// checkCRDFile reads a CRD YAML file as kubectl would (strictly), checks
// it against w and validates it as the API server validates a create.
func checkCRDFile(t *testing.T, file string, w wantCRD) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Error(err)
		return
	}
	if !strings.HasPrefix(string(b), "# Code generated by customapi-gen. DO NOT EDIT.\n---\n") {
		t.Errorf("%s does not start with the generated-code line and a document separator:\n%s", file, b)
	}
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		t.Errorf("%s: %v", file, err)
		return
	}
	if c.APIVersion != "apiextensions.k8s.io/v1" || c.Kind != "CustomResourceDefinition" {
		t.Errorf("%s: apiVersion/kind %s/%s", file, c.APIVersion, c.Kind)
	}
	if strings.Contains(string(b), "creationTimestamp") || strings.Contains(string(b), "\nstatus:") {
		t.Errorf("%s has a creationTimestamp or a status", file)
	}
	n := c.Spec.Names
	group := strings.SplitN(w.name, ".", 2)[1]
	if c.Name != w.name || c.Spec.Group != group || n.Kind != w.kind || n.ListKind != w.kind+"List" || n.Plural != w.plural || n.Singular != w.singular {
		t.Errorf("%s: name %s, group %s, names %+v; want %s, %s, kind %s, plural %s, singular %s", file, c.Name, c.Spec.Group, n, w.name, group, w.kind, w.plural, w.singular)
	}
	if !reflect.DeepEqual(n.ShortNames, w.shortNames) || !reflect.DeepEqual(n.Categories, w.categories) {
		t.Errorf("%s: shortNames %q, categories %q; want %q, %q", file, n.ShortNames, n.Categories, w.shortNames, w.categories)
	}
	if c.Spec.Scope != w.scope {
		t.Errorf("%s: scope %s, want %s", file, c.Spec.Scope, w.scope)
	}
	var names, deprecated []string
	var storage *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range c.Spec.Versions {
		v := &c.Spec.Versions[i]
		names = append(names, v.Name)
		if !v.Served {
			t.Errorf("%s: version %s is not served", file, v.Name)
		}
		if v.Storage {
			if v.Name != w.storage {
				t.Errorf("%s: storage version %s, want %s", file, v.Name, w.storage)
			}
			storage = v
		}
		if v.Deprecated {
			deprecated = append(deprecated, v.Name)
		}
		if !v.Storage && len(v.AdditionalPrinterColumns) > 0 && len(v.AdditionalPrinterColumns) != len(w.columns) {
			t.Errorf("%s: version %s has other printer columns than the storage version", file, v.Name)
		}
		if got := v.Subresources != nil && v.Subresources.Status != nil; got != w.status[v.Name] {
			t.Errorf("%s: version %s has a status subresource: %t, want %t", file, v.Name, got, w.status[v.Name])
		}
	}
	if !reflect.DeepEqual(names, w.versions) {
		t.Errorf("%s: versions %q, want %q", file, names, w.versions)
	}
	if !reflect.DeepEqual(deprecated, w.deprecated) {
		t.Errorf("%s: deprecated versions %q, want %q", file, deprecated, w.deprecated)
	}
	if storage == nil {
		t.Errorf("%s: no storage version", file)
		return
	}
	var cols []string
	for _, col := range storage.AdditionalPrinterColumns {
		cols = append(cols, col.JSONPath)
	}
	if !reflect.DeepEqual(cols, w.columns) {
		t.Errorf("%s: printer columns %q, want %q", file, cols, w.columns)
	}
	var sel []string
	for _, f := range storage.SelectableFields {
		sel = append(sel, f.JSONPath)
	}
	if !reflect.DeepEqual(sel, w.selectable) {
		t.Errorf("%s: selectable fields %q, want %q", file, sel, w.selectable)
	}
	for path, want := range w.schema {
		s := storage.Schema.OpenAPIV3Schema
		for _, p := range strings.Split(path, ".") {
			next, ok := s.Properties[p]
			if !ok {
				s = nil
				break
			}
			s = &next
		}
		if s == nil {
			t.Errorf("%s: no property %s in the schema of %s", file, path, storage.Name)
			continue
		}
		if got, wantJSON := schemaJSON(t, s), normalJSON(t, want); got != wantJSON {
			t.Errorf("%s: schema of %s:\n got %s\nwant %s", file, path, got, wantJSON)
		}
	}

	// As the apiextensions API server on create: v1 defaults, the internal
	// version, its validation.
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&c)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&c, &internal, nil); err != nil {
		t.Fatal(err)
	}
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal); len(errs) > 0 {
		t.Errorf("%s would be refused: %v", file, errs.ToAggregate())
	}
}

// schemaJSON is s as normalized JSON without descriptions.
func schemaJSON(t *testing.T, s *apiextensionsv1.JSONSchemaProps) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	dropDescriptions(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func dropDescriptions(v any) {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "description")
		for _, e := range v {
			dropDescriptions(e)
		}
	case []any:
		for _, e := range v {
			dropDescriptions(e)
		}
	}
}

// normalJSON re-encodes a JSON text with sorted keys.
func normalJSON(t *testing.T, s string) string {
	t.Helper()
	var m any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCRDDirInFreshModule runs `go tool customapi-gen --crd-dir config/crd
// ./apis/...` in the fresh module of freshModule, as a user does: it
// writes config/crd/widgets.example.com_widgets.yaml (checked as in
// TestCRDs; the printer columns come from the declaration in
// cmd/widgets-server), --verify --crd-dir passes, and fails once the YAML is edited;
// a file of the group that customapi-gen wrote and no longer generates is
// removed, and files it did not write are left alone.
func TestCRDDirInFreshModule(t *testing.T) {
	dir := freshModule(t)
	crdDir := filepath.Join(dir, "config", "crd")
	t.Cleanup(func() { os.RemoveAll(crdDir) })
	if err := os.MkdirAll(crdDir, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(crdDir, "widgets.example.com_olds.yaml")
	mine := filepath.Join(crdDir, "widgets.example.com_handwritten.yaml")
	for f, text := range map[string]string{
		stale: "# Code generated by customapi-gen. DO NOT EDIT.\n---\nkind: CustomResourceDefinition\n",
		mine:  "---\nkind: CustomResourceDefinition\n",
	} {
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(t, dir, "go", "tool", "customapi-gen", "--crd-dir", "config/crd", "./apis/...")
	if err != nil {
		t.Fatalf("customapi-gen --crd-dir: %v\n%s", err, out)
	}
	file := filepath.Join(crdDir, "widgets.example.com_widgets.yaml")
	for _, want := range []string{"wrote: " + file, "removed: " + stale} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("a CRD file customapi-gen did not write is gone: %v", err)
	}
	checkCRDFile(t, file, wantCRD{
		name: "widgets.widgets.example.com", kind: "Widget", plural: "widgets", singular: "widget",
		scope:    apiextensionsv1.NamespaceScoped,
		versions: []string{"v1"}, storage: "v1",
		status:  map[string]bool{"v1": true},
		columns: []string{".spec.color", ".status.ready"}, // cmd/widgets-server's declaration
		schema: map[string]string{
			"spec.sizes": `{"type":"array","items":{"type":"integer","format":"int32"},"x-kubernetes-list-type":"atomic"}`,
			"spec.extra": `{"type":"object","additionalProperties":{"type":"array","items":{"type":"string"}}}`,
		},
	})
	if out, err := run(t, dir, "go", "tool", "customapi-gen", "--verify", "--crd-dir", "config/crd", "./apis/..."); err != nil {
		t.Fatalf("--verify --crd-dir right after generating: %v\n%s", err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append(b, "# edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, dir, "go", "tool", "customapi-gen", "--verify", "--crd-dir", "config/crd", "./apis/...")
	if err == nil || !strings.Contains(out, "stale: "+file) {
		t.Errorf("--verify --crd-dir after editing the CRD: %v, want a failure naming %s:\n%s", err, file, out)
	}
}

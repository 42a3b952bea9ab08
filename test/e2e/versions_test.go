package e2e

// Several versions of one kind through kubectl: the fleet example's Fleet
// (examples/fleet, built once on first use) is served in v1, its storage
// version, and in v1alpha1, deprecated (spec.size is v1's spec.replicas,
// spec.region "<region>/<zone>" is v1's spec.placement). A removed version
// needs a declaration the example does not have, so TestVersionsRemoved
// serves one in process (customapitest) and drives it with kubectl too.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/customapi/customapi/examples/fleet/fleetapi"
	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/resource"
)

const (
	// fleetGroup is the API group of the fleet example.
	fleetGroup = "fleet.example.com"
	// fleetsV1 and fleetsV1alpha1 name the fleets resource in one version,
	// as kubectl takes it (<resource>.<version>.<group>).
	fleetsV1       = "fleets.v1." + fleetGroup
	fleetsV1alpha1 = "fleets.v1alpha1." + fleetGroup
	// fleetDeprecation is kubectl's line for the Warning header of every
	// request to v1alpha1 (resource.Resource.DeprecationWarning's default).
	fleetDeprecation = "Warning: fleet.example.com/v1alpha1 Fleet is deprecated; use fleet.example.com/v1 Fleet"
)

// fleetBinary is the examples/fleet server, built on first use.
var fleetBinary struct {
	once sync.Once
	path string
	err  error
}

// buildFleet returns the fleet example's binary, built into workDir on
// first use (binarytest.Build).
func buildFleet(t *testing.T) string {
	t.Helper()
	fleetBinary.once.Do(func() {
		start := time.Now()
		bins, err := binarytest.Build(workDir, binarytest.Fleet)
		if err != nil {
			fleetBinary.err = err
			return
		}
		fleetBinary.path = bins[0]
		t.Logf("built %s in %s", fleetBinary.path, time.Since(start).Round(time.Millisecond))
	})
	if fleetBinary.err != nil {
		t.Fatal(fleetBinary.err)
	}
	return fleetBinary.path
}

// startFleetServer is startServer for the fleet example's binary, on a new
// data dir: `fleet serve` (command.Main with Name "fleet"; its first
// resource is devices).
func startFleetServer(t *testing.T) *binarytest.Server {
	t.Helper()
	customapitest.SkipOnSharedEtcd(t)
	s := binarytest.Serve(t, buildFleet(t), binarytest.ServeOptions{DataDir: t.TempDir()})
	requireReadyLines(t, s, "fleet", "devices")
	return s
}

// fleetObject is a Fleet as kubectl prints it with -o json, in any version;
// Spec and Status are kept as decoded JSON to compare with what a version
// should show.
type fleetObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name            string            `json:"name"`
		UID             string            `json:"uid"`
		ResourceVersion string            `json:"resourceVersion"`
		Generation      int64             `json:"generation"`
		Labels          map[string]string `json:"labels"`
		ManagedFields   []struct {
			Manager    string `json:"manager"`
			Operation  string `json:"operation"`
			APIVersion string `json:"apiVersion"`
		} `json:"managedFields"`
	} `json:"metadata"`
	Spec   map[string]any `json:"spec"`
	Status map[string]any `json:"status"`
}

// fleetList is a list of fleets as kubectl prints it with -o json.
type fleetList struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Items      []fleetObject `json:"items"`
}

// fleetWatchEvent is one event of `kubectl get -w --output-watch-events -o json`.
type fleetWatchEvent struct {
	Type   string      `json:"type"`
	Object fleetObject `json:"object"`
}

// decodeJSON decodes kubectl's JSON output into v, failing the test with
// the run if it does not decode.
func decodeJSON(t *testing.T, res kubectlResult, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(res.Stdout), v); err != nil {
		t.Fatalf("decode: %v\n%s", err, res)
	}
}

// jsonValue decodes s, a JSON literal of the test, as encoding/json decodes
// kubectl's output (numbers as float64), for reflect.DeepEqual.
func jsonValue(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("test literal %s: %v", s, err)
	}
	return v
}

// getFleet runs `kubectl get <resource> <name> -o json`, requires exit 0
// and returns the object and kubectl's stderr.
func getFleet(t *testing.T, k kubectl, resource, name string, args ...string) (fleetObject, string) {
	t.Helper()
	res := k.run(t, append([]string{"get", resource, name, "-o", "json"}, args...)...)
	if res.Code != 0 {
		t.Fatalf("%s", res)
	}
	var f fleetObject
	decodeJSON(t, res, &f)
	return f, res.Stderr
}

// checkWarning fails the test unless kubectl's stderr has the deprecation
// warning exactly when want says so.
func checkWarning(t *testing.T, res kubectlResult, want bool) {
	t.Helper()
	if got := strings.Contains(res.Stderr, fleetDeprecation); got != want {
		t.Errorf("deprecation warning printed: %v, want %v\n%s", got, want, res)
	}
}

// fleetV1alpha1YAML is a v1alpha1 Fleet manifest.
func fleetV1alpha1YAML(name string, size int, region string, labels string) string {
	return fmt.Sprintf("apiVersion: fleet.example.com/v1alpha1\nkind: Fleet\nmetadata:\n  name: %s\n  labels: {%s}\nspec:\n  size: %d\n  region: %s\n", name, labels, size, region)
}

// fleetV1YAML is a v1 Fleet manifest.
func fleetV1YAML(name string, replicas int, region, zone string, labels string) string {
	return fmt.Sprintf("apiVersion: fleet.example.com/v1\nkind: Fleet\nmetadata:\n  name: %s\n  labels: {%s}\nspec:\n  replicas: %d\n  placement:\n    region: %s\n    zone: %s\n", name, labels, replicas, region, zone)
}

// TestVersionsKubectl drives the fleet example's two versions of Fleet
// with kubectl: objects written in one version read, list, watch, patch and
// apply in the other with the same uid and resourceVersion and the fields
// converted; the deprecated v1alpha1 prints kube's warning and sets
// customapi_requested_deprecated_apis, v1 (preferred) does not; explain,
// api-versions, api-resources and discovery show each version.
func TestVersionsKubectl(t *testing.T) {
	binarytest.Kubectl(t) // skip before building anything without kubectl
	srv := startFleetServer(t)
	ns := "versions"
	ensureNamespace(t, srv.KubeconfigPath, ns)
	k := newKubectl(t, srv.KubeconfigPath, ns)

	// f1 is written in v1alpha1, f2 in v1; both are read in every version.
	t.Run("apply in v1alpha1 warns, in v1 does not", func(t *testing.T) {
		res := k.runStdin(t, fleetV1alpha1YAML("f1", 3, "eu-west/a", "tier: edge"), "apply", "-f", "-")
		if res.Code != 0 {
			t.Fatalf("%s", res)
		}
		checkWarning(t, res, true)
		res = k.runStdin(t, fleetV1YAML("f2", 2, "us-east", "b", "tier: core"), "apply", "-f", "-")
		if res.Code != 0 {
			t.Fatalf("%s", res)
		}
		checkWarning(t, res, false)
	})

	// One object, every way to name its resource: the same uid and
	// resourceVersion, the spec in the version asked for.
	var first fleetObject
	v1F1 := `{"replicas":3,"placement":{"region":"eu-west","zone":"a"}}`
	v1alpha1F1 := `{"size":3,"region":"eu-west/a"}`
	for _, tc := range []struct {
		resource    string
		wantVersion string
		wantSpec    string
		wantWarning bool
	}{
		{fleetsV1, "v1", v1F1, false},
		{fleetsV1alpha1, "v1alpha1", v1alpha1F1, true},
		{"fleets", "v1", v1F1, false}, // the preferred version
		{"fleets." + fleetGroup, "v1", v1F1, false},
		{"fleet", "v1", v1F1, false},
	} {
		t.Run("get f1 as "+tc.resource, func(t *testing.T) {
			res := k.run(t, "get", tc.resource, "f1", "-o", "json")
			if res.Code != 0 {
				t.Fatalf("%s", res)
			}
			checkWarning(t, res, tc.wantWarning)
			var f fleetObject
			decodeJSON(t, res, &f)
			if want := fleetGroup + "/" + tc.wantVersion; f.APIVersion != want || f.Kind != "Fleet" {
				t.Errorf("apiVersion, kind = %s, %s; want %s, Fleet", f.APIVersion, f.Kind, want)
			}
			if !reflect.DeepEqual(f.Spec, jsonValue(t, tc.wantSpec)) {
				t.Errorf("spec = %v, want %s", f.Spec, tc.wantSpec)
			}
			if f.Metadata.Labels["tier"] != "edge" {
				t.Errorf("labels = %v, want tier=edge", f.Metadata.Labels)
			}
			if first.Metadata.UID == "" {
				first = f
				return
			}
			if f.Metadata.UID != first.Metadata.UID || f.Metadata.ResourceVersion != first.Metadata.ResourceVersion {
				t.Errorf("uid, resourceVersion = %s, %s; want %s, %s (as %s)", f.Metadata.UID, f.Metadata.ResourceVersion, first.Metadata.UID, first.Metadata.ResourceVersion, fleetsV1)
			}
		})
	}

	t.Run("list in each version", func(t *testing.T) {
		want := map[string]map[string]string{
			"v1":       {"f1": v1F1, "f2": `{"replicas":2,"placement":{"region":"us-east","zone":"b"}}`},
			"v1alpha1": {"f1": v1alpha1F1, "f2": `{"size":2,"region":"us-east/b"}`},
		}
		ids := map[string][]string{} // version: name/uid/resourceVersion of each item
		for _, version := range []string{"v1", "v1alpha1"} {
			res := k.run(t, "get", "fleets."+version+"."+fleetGroup, "-o", "json")
			if res.Code != 0 {
				t.Fatalf("%s", res)
			}
			checkWarning(t, res, version == "v1alpha1")
			var l fleetList
			decodeJSON(t, res, &l)
			if len(l.Items) != len(want[version]) {
				t.Fatalf("%s: %d items, want %d:\n%s", version, len(l.Items), len(want[version]), res.Stdout)
			}
			for _, f := range l.Items {
				if f.APIVersion != fleetGroup+"/"+version {
					t.Errorf("%s: item %s has apiVersion %s", version, f.Metadata.Name, f.APIVersion)
				}
				if !reflect.DeepEqual(f.Spec, jsonValue(t, want[version][f.Metadata.Name])) {
					t.Errorf("%s: %s spec = %v, want %s", version, f.Metadata.Name, f.Spec, want[version][f.Metadata.Name])
				}
				ids[version] = append(ids[version], f.Metadata.Name+"/"+f.Metadata.UID+"/"+f.Metadata.ResourceVersion)
			}
		}
		if !slices.Equal(ids["v1"], ids["v1alpha1"]) {
			t.Errorf("items (name/uid/resourceVersion): v1 %v, v1alpha1 %v", ids["v1"], ids["v1alpha1"])
		}
	})

	t.Run("tables of each version", func(t *testing.T) {
		// Printer columns are the kind's (declared on the storage version),
		// whatever the version of the request, as for kube's built-in types.
		var tables []string
		for _, r := range []string{fleetsV1, fleetsV1alpha1} {
			out := k.run(t, "get", r)
			if out.Code != 0 {
				t.Fatalf("%s", out)
			}
			lines := strings.Split(strings.TrimSpace(out.Stdout), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[1], "f1 ") || !strings.HasPrefix(lines[2], "f2 ") {
				t.Errorf("kubectl get %s: want a header and rows f1, f2:\n%s", r, out.Stdout)
			}
			// AGE is the last column; leave it out of the comparison.
			var rows []string
			for _, l := range lines {
				f := strings.Fields(l)
				rows = append(rows, strings.Join(f[:len(f)-1], " "))
			}
			tables = append(tables, strings.Join(rows, "\n"))
		}
		if want := "NAME REPLICAS REGION ZONE READY"; !strings.HasPrefix(tables[0], want+"\n") {
			t.Errorf("v1 table header: want %q:\n%s", want, tables[0])
		}
		if tables[0] != tables[1] {
			t.Errorf("tables differ (AGE left out):\nv1:\n%s\nv1alpha1:\n%s", tables[0], tables[1])
		}
	})

	t.Run("selectors in each version", func(t *testing.T) {
		for _, tc := range []struct {
			selector []string
			want     string
		}{
			{[]string{"-l", "tier=edge"}, "fleet.fleet.example.com/f1"},
			{[]string{"-l", "tier in (edge,core)"}, "fleet.fleet.example.com/f1\nfleet.fleet.example.com/f2"},
			// spec.placement.region is a v1 field; a field selector is the
			// storage version's whatever the version of the request.
			{[]string{"--field-selector", "spec.placement.region=us-east"}, "fleet.fleet.example.com/f2"},
		} {
			for _, r := range []string{fleetsV1, fleetsV1alpha1} {
				out := k.run(t, append([]string{"get", r, "-o", "name"}, tc.selector...)...)
				if out.Code != 0 || strings.TrimSpace(out.Stdout) != tc.want {
					t.Errorf("want exit 0 and\n%s\ngot %s", tc.want, out)
				}
			}
		}
	})

	t.Run("patch in one version, read in the other", func(t *testing.T) {
		for _, tc := range []struct {
			patchIn, patch string
			readIn         string
			wantSpec       string
		}{
			{fleetsV1, `{"spec":{"replicas":5,"placement":{"zone":"b"}}}`, fleetsV1alpha1, `{"size":5,"region":"eu-west/b"}`},
			{fleetsV1alpha1, `{"spec":{"region":"us-west/c"}}`, fleetsV1, `{"replicas":5,"placement":{"region":"us-west","zone":"c"}}`},
		} {
			res := k.run(t, "patch", tc.patchIn, "f1", "--type=merge", "-p", tc.patch, "-o", "json")
			if res.Code != 0 {
				t.Fatalf("%s", res)
			}
			checkWarning(t, res, tc.patchIn == fleetsV1alpha1)
			var patched fleetObject
			decodeJSON(t, res, &patched)
			got, _ := getFleet(t, k, tc.readIn, "f1")
			if !reflect.DeepEqual(got.Spec, jsonValue(t, tc.wantSpec)) {
				t.Errorf("patch %s in %s, read in %s: spec = %v, want %s", tc.patch, tc.patchIn, tc.readIn, got.Spec, tc.wantSpec)
			}
			if got.Metadata.UID != patched.Metadata.UID || got.Metadata.ResourceVersion != patched.Metadata.ResourceVersion || got.Metadata.Generation != patched.Metadata.Generation {
				t.Errorf("read in %s: uid %s resourceVersion %s generation %d; the patch answered %s %s %d",
					tc.readIn, got.Metadata.UID, got.Metadata.ResourceVersion, got.Metadata.Generation,
					patched.Metadata.UID, patched.Metadata.ResourceVersion, patched.Metadata.Generation)
			}
		}
	})

	t.Run("status subresource in v1alpha1", func(t *testing.T) {
		res := k.run(t, "patch", fleetsV1alpha1, "f2", "--subresource=status", "--type=merge", "-p", `{"status":{"readyDevices":2}}`)
		if res.Code != 0 {
			t.Fatalf("%s", res)
		}
		checkWarning(t, res, true)
		got, _ := getFleet(t, k, fleetsV1, "f2")
		if want := jsonValue(t, `{"readyDevices":2}`); !reflect.DeepEqual(got.Status, want) {
			t.Errorf("v1 status = %v, want %v", got.Status, want)
		}
	})

	t.Run("watch in one version sees writes in the other", func(t *testing.T) {
		for i, tc := range []struct {
			watchIn, patchIn, patch string
			wantSpec                string
		}{
			{fleetsV1alpha1, fleetsV1, `{"spec":{"replicas":7}}`, `{"size":7,"region":"us-east/b"}`},
			{fleetsV1, fleetsV1alpha1, `{"spec":{"size":8}}`, `{"replicas":8,"placement":{"region":"us-east","zone":"b"}}`},
		} {
			w := k.start(t, "get", tc.watchIn, "f2", "-w", "--output-watch-events", "-o", "json")
			events := fleetEvents(w)
			added := next(t, w, events)
			if added.Type != "ADDED" || added.Object.Metadata.Name != "f2" {
				t.Fatalf("watch %s: first event %s %s, want ADDED f2", tc.watchIn, added.Type, added.Object.Metadata.Name)
			}
			res := k.run(t, "patch", tc.patchIn, "f2", "--type=merge", "-p", tc.patch, "-o", "json")
			if res.Code != 0 {
				t.Fatalf("%s", res)
			}
			var patched fleetObject
			decodeJSON(t, res, &patched)
			e := next(t, w, events)
			if e.Type != "MODIFIED" || e.Object.Metadata.ResourceVersion != patched.Metadata.ResourceVersion || e.Object.Metadata.UID != patched.Metadata.UID {
				t.Errorf("case %d: watch %s: event %s %s rv %s, want MODIFIED f2 rv %s", i, tc.watchIn, e.Type, e.Object.Metadata.Name, e.Object.Metadata.ResourceVersion, patched.Metadata.ResourceVersion)
			}
			if want := fleetGroup + "/" + strings.Split(tc.watchIn, ".")[1]; e.Object.APIVersion != want {
				t.Errorf("case %d: watch %s: event object in %s, want %s", i, tc.watchIn, e.Object.APIVersion, want)
			}
			if !reflect.DeepEqual(e.Object.Spec, jsonValue(t, tc.wantSpec)) {
				t.Errorf("case %d: watch %s: spec = %v, want %s", i, tc.watchIn, e.Object.Spec, tc.wantSpec)
			}
			checkWarning(t, kubectlResult{Stderr: w.Stderr()}, tc.watchIn == fleetsV1alpha1)
			w.Kill()
		}
	})

	t.Run("server-side apply across versions", func(t *testing.T) {
		res := k.runStdin(t, fleetV1alpha1YAML("f3", 1, "ap-south/a", ""), "apply", "--server-side", "--field-manager=alpha", "-f", "-")
		if res.Code != 0 {
			t.Fatalf("%s", res)
		}
		// Another manager sets the same field in v1: a conflict, on the field
		// as the other manager wrote it (kube reports a conflict in the
		// version of the manager that owns the field).
		v1Apply := fleetV1YAML("f3", 4, "ap-south", "a", "")
		res = k.runStdin(t, v1Apply, "apply", "--server-side", "--field-manager=one", "-f", "-")
		if res.Code == 0 || !strings.Contains(res.Stderr, `conflict with "alpha"`) || !strings.Contains(res.Stderr, ".spec.size") {
			t.Errorf(`want a conflict with "alpha" on .spec.size:\n%s`, res)
		}
		res = k.runStdin(t, v1Apply, "apply", "--server-side", "--field-manager=one", "--force-conflicts", "-f", "-")
		if res.Code != 0 {
			t.Fatalf("%s", res)
		}
		got, _ := getFleet(t, k, fleetsV1alpha1, "f3", "--show-managed-fields")
		if want := jsonValue(t, `{"size":4,"region":"ap-south/a"}`); !reflect.DeepEqual(got.Spec, want) {
			t.Errorf("v1alpha1 spec = %v, want %v", got.Spec, want)
		}
		managers := map[string]string{}
		for _, m := range got.Metadata.ManagedFields {
			managers[m.Manager+" "+m.Operation] = m.APIVersion
		}
		if want := map[string]string{"alpha Apply": fleetGroup + "/v1alpha1", "one Apply": fleetGroup + "/v1"}; !reflect.DeepEqual(managers, want) {
			t.Errorf("managedFields apiVersions = %v, want %v", managers, want)
		}
	})

	t.Run("explain per version", func(t *testing.T) {
		for _, tc := range []struct {
			args         []string
			want, absent []string
		}{
			{[]string{"fleets.spec", "--api-version=fleet.example.com/v1alpha1"}, []string{"VERSION:    v1alpha1", "size\t<integer>", "region\t<string>"}, []string{"replicas\t", "placement\t"}},
			{[]string{"fleets.spec", "--api-version=fleet.example.com/v1"}, []string{"VERSION:    v1", "replicas\t<integer>", "placement\t<Placement>"}, []string{"size\t"}},
			{[]string{"fleets.spec"}, []string{"VERSION:    v1", "replicas\t<integer>", "placement\t<Placement>"}, []string{"size\t"}},
			{[]string{"fleets.spec.placement", "--api-version=fleet.example.com/v1"}, []string{"region\t<string>", "zone\t<string>"}, nil},
		} {
			res := k.run(t, append([]string{"explain"}, tc.args...)...)
			if res.Code != 0 {
				t.Errorf("%s", res)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Stdout, w) {
					t.Errorf("explain %s: no %q:\n%s", strings.Join(tc.args, " "), w, res.Stdout)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(res.Stdout, a) {
					t.Errorf("explain %s: has %q:\n%s", strings.Join(tc.args, " "), a, res.Stdout)
				}
			}
		}
		// spec.placement is a v1 field only.
		res := k.run(t, "explain", "fleets.spec.placement", "--api-version=fleet.example.com/v1alpha1")
		if res.Code == 0 || !strings.Contains(res.Stderr, `field "placement" does not exist`) {
			t.Errorf("want an error, field placement does not exist:\n%s", res)
		}
	})

	t.Run("discovery lists both versions", func(t *testing.T) {
		out := k.mustRun(t, "api-versions")
		for _, v := range []string{fleetGroup + "/v1", fleetGroup + "/v1alpha1"} {
			if !slices.Contains(strings.Fields(out), v) {
				t.Errorf("api-versions: no %s:\n%s", v, out)
			}
		}
		// api-resources lists each resource in its group's preferred
		// version: fleets in v1; devices are v1alpha1 only.
		out = k.mustRun(t, "api-resources", "--api-group="+fleetGroup, "--no-headers")
		var rows []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			rows = append(rows, strings.Join(strings.Fields(l), " "))
		}
		if want := []string{"devices dev fleet.example.com/v1alpha1 false Device", "fleets fleet.example.com/v1 true Fleet"}; !slices.Equal(rows, want) {
			t.Errorf("api-resources --api-group=%s:\n%s\nwant rows %q", fleetGroup, out, want)
		}

		var group struct {
			Versions []struct {
				GroupVersion string `json:"groupVersion"`
			} `json:"versions"`
			PreferredVersion struct {
				GroupVersion string `json:"groupVersion"`
			} `json:"preferredVersion"`
		}
		decodeJSON(t, k.run(t, "get", "--raw", "/apis/"+fleetGroup), &group)
		var versions []string
		for _, v := range group.Versions {
			versions = append(versions, v.GroupVersion)
		}
		if want := []string{fleetGroup + "/v1", fleetGroup + "/v1alpha1"}; !slices.Equal(versions, want) || group.PreferredVersion.GroupVersion != want[0] {
			t.Errorf("/apis/%s: versions %v preferred %s, want %v preferred %s", fleetGroup, versions, group.PreferredVersion.GroupVersion, want, want[0])
		}
		for _, tc := range []struct {
			version string
			want    []string
		}{
			{"v1", []string{"fleets", "fleets/status"}},
			{"v1alpha1", []string{"devices", "devices/status", "fleets", "fleets/status"}},
		} {
			var list struct {
				Resources []struct {
					Name string `json:"name"`
				} `json:"resources"`
			}
			decodeJSON(t, k.run(t, "get", "--raw", "/apis/"+fleetGroup+"/"+tc.version), &list)
			var names []string
			for _, r := range list.Resources {
				names = append(names, r.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.want) {
				t.Errorf("/apis/%s/%s: resources %v, want %v", fleetGroup, tc.version, names, tc.want)
			}
		}
	})

	t.Run("deprecated requests in metrics", func(t *testing.T) {
		out := k.mustRun(t, "get", "--raw", "/metrics")
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "customapi_requested_deprecated_apis{") {
				lines = append(lines, l)
			}
		}
		slices.Sort(lines)
		want := []string{
			`customapi_requested_deprecated_apis{group="fleet.example.com",removed_release="",resource="fleets",subresource="",version="v1alpha1"} 1`,
			`customapi_requested_deprecated_apis{group="fleet.example.com",removed_release="",resource="fleets",subresource="status",version="v1alpha1"} 1`,
		}
		if !slices.Equal(lines, want) {
			t.Errorf("customapi_requested_deprecated_apis:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("delete in v1alpha1", func(t *testing.T) {
		res := k.run(t, "delete", fleetsV1alpha1, "f2")
		if res.Code != 0 {
			t.Fatalf("%s", res)
		}
		checkWarning(t, res, true)
		for _, r := range []string{fleetsV1, fleetsV1alpha1} {
			res := k.run(t, "get", r, "f2")
			if res.Code == 0 || !strings.Contains(res.Stderr, `(NotFound)`) {
				t.Errorf("want NotFound:\n%s", res)
			}
		}
	})
}

// fleetEvents decodes a watch's standard output as fleet watch events; the
// channel is closed when kubectl closes its output or prints something else.
func fleetEvents(p *kubectlProcess) <-chan fleetWatchEvent {
	ch := make(chan fleetWatchEvent, 100)
	go func() {
		defer close(ch)
		dec := json.NewDecoder(p.stdout)
		for {
			var e fleetWatchEvent
			if err := dec.Decode(&e); err != nil {
				return
			}
			ch <- e
		}
	}()
	return ch
}

// TestVersionsRemoved serves the fleet example's Fleet with v1alpha1
// declared Removed (the example itself only deprecates it), in process, and
// checks with kubectl that v1alpha1 is gone — 404 at every path, absent from
// discovery, unknown to apply, get and explain — while v1 serves.
func TestVersionsRemoved(t *testing.T) {
	binarytest.Kubectl(t)
	fleets := fleetapi.Fleets
	fleets.Versions = slices.Clone(fleets.Versions)
	fleets.Versions[0].Removed = true // and still Deprecated, as it was before
	if got := fleets.ServedVersions(); !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("ServedVersions() = %v, want [v1]", got)
	}
	srv := customapitest.Start(t, []resource.Resource{fleets}...)
	ns := srv.Namespace(t)
	k := newKubectl(t, srv.KubeconfigPath, ns)

	res := k.runStdin(t, fleetV1YAML("f1", 2, "eu-west", "a", ""), "apply", "-f", "-")
	if res.Code != 0 {
		t.Fatalf("%s", res)
	}
	if out := k.mustRun(t, "get", "fleets", "-o", "name"); strings.TrimSpace(out) != "fleet.fleet.example.com/f1" {
		t.Errorf("get fleets: %s", out)
	}
	if f, _ := getFleet(t, k, fleetsV1, "f1"); f.APIVersion != fleetGroup+"/v1" {
		t.Errorf("get %s: apiVersion %s", fleetsV1, f.APIVersion)
	}
	if out := k.mustRun(t, "api-versions"); strings.Contains(out, fleetGroup+"/v1alpha1") || !strings.Contains(out, fleetGroup+"/v1\n") {
		t.Errorf("api-versions: want %s/v1 and no v1alpha1:\n%s", fleetGroup, out)
	}

	for _, tc := range []struct {
		name   string
		stdin  string
		args   []string
		stderr string
	}{
		{"group version", "", []string{"get", "--raw", "/apis/" + fleetGroup + "/v1alpha1"}, "(NotFound)"},
		{"list", "", []string{"get", "--raw", "/apis/" + fleetGroup + "/v1alpha1/namespaces/" + ns + "/fleets"}, "(NotFound)"},
		{"object", "", []string{"get", "--raw", "/apis/" + fleetGroup + "/v1alpha1/namespaces/" + ns + "/fleets/f1"}, "(NotFound)"},
		{"status", "", []string{"get", "--raw", "/apis/" + fleetGroup + "/v1alpha1/namespaces/" + ns + "/fleets/f1/status"}, "(NotFound)"},
		{"watch", "", []string{"get", "--raw", "/apis/" + fleetGroup + "/v1alpha1/watch/namespaces/" + ns + "/fleets"}, "(NotFound)"},
		{"create", fleetV1alpha1YAML("f2", 1, "eu-west/a", ""), []string{"create", "--raw", "/apis/" + fleetGroup + "/v1alpha1/namespaces/" + ns + "/fleets", "-f", "-"}, "(NotFound)"},
		{"get by resource", "", []string{"get", fleetsV1alpha1, "f1"}, `the server doesn't have a resource type "fleets"`},
		{"apply", fleetV1alpha1YAML("f2", 1, "eu-west/a", ""), []string{"apply", "-f", "-"}, `no matches for kind "Fleet" in version "fleet.example.com/v1alpha1"`},
		{"explain", "", []string{"explain", "fleets.spec", "--api-version=fleet.example.com/v1alpha1"}, "fleet.example.com/v1alpha1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := k.runStdin(t, tc.stdin, tc.args...)
			if res.Code == 0 || !strings.Contains(res.Stderr, tc.stderr) {
				t.Errorf("want an error with %q:\n%s", tc.stderr, res)
			}
			if strings.Contains(res.Stderr, "Warning:") {
				t.Errorf("a removed version warns:\n%s", res)
			}
		})
	}
}

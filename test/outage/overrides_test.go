package outage

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/backup"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/options"
)

// TestEtcdServersOverrides (kube-apiserver's
// --etcd-servers-overrides): serve on its embedded etcd with
// --etcd-servers-overrides=/events#<a one-member etcd process>.
//   - events created through client-go over HTTP and through the in-process
//     doors (pkg/client on the registry, client-go on the server's
//     in-process door), core v1 and events.k8s.io/v1, are under
//     /registry/events/ in the events etcd and not in the main one; get,
//     list and watch work through both doors;
//   - /readyz names each etcd (etcd, etcd-override-0); the override's
//     check is not in /livez;
//   - backup refuses without the flag (naming it and the value) and with
//     it holds both snapshots; restore restores the main one and writes the
//     events etcd's beside the data dir;
//   - with the events etcd killed: event requests through both doors fail
//     with a 503/504 Status within the storage timeouts while customs,
//     config maps and leases keep working through both; /readyz is red
//     naming etcd-override-0 (its own check names the endpoint), /livez
//     green; restarted, everything is green and events are written again.
func TestEtcdServersOverrides(t *testing.T) {
	start := time.Now()
	events := startClusterOf(t, 1)
	eventsURL := events.endpoints()[0]
	resources := append(batteries.Resources(batteries.Options{}), install.Customs)
	s := customapitest.StartWithOptions(t, func(o *options.ServerOptions) {
		o.Storage.Etcd.ServersOverrides = []string{"/events#" + eventsURL}
	}, resources...)
	t.Logf("events etcd and server started in %s", time.Since(start).Round(time.Millisecond))
	ctx := t.Context()
	ns := metav1.NamespaceDefault
	mainEtcd := s.Registry().EtcdConfig()

	httpCS, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	inProcessCS, err := kubernetes.NewForConfig(s.PipeConfig())
	if err != nil {
		t.Fatal(err)
	}
	coreEvents, err := client.For[*corev1.Event, *corev1.EventList](s.Registry(), batteries.CoreEvents(batteries.DefaultEventTTL))
	if err != nil {
		t.Fatal(err)
	}
	ref := corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cm"}
	coreEvent := func(name string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name}, InvolvedObject: ref, Reason: "Test", Message: name, Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: "s4"}, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1}
	}
	newEvent := func(name string) *eventsv1.Event {
		return &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: name}, EventTime: metav1.NowMicro(), Type: corev1.EventTypeNormal,
			Reason: "Test", Action: "Test", ReportingController: "example.com/s4", ReportingInstance: "s4", Regarding: ref, Note: name}
	}

	// Watches of core events through both doors, from now on.
	httpWatch, err := httpCS.CoreV1().Events(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer httpWatch.Stop()
	regWatch, err := coreEvents.Namespace(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer regWatch.Stop()

	// Four events, each through another door or API.
	if _, err := httpCS.CoreV1().Events(ns).Create(ctx, coreEvent("http-core"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := httpCS.EventsV1().Events(ns).Create(ctx, newEvent("http-events"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := coreEvents.Namespace(ns).Create(ctx, coreEvent("registry-core"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := inProcessCS.EventsV1().Events(ns).Create(ctx, newEvent("inprocess-events"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := []string{"http-core", "http-events", "inprocess-events", "registry-core"}
	if _, err := httpCS.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createCustom(t, s, "c-before")

	t.Run("keys", func(t *testing.T) {
		inEvents := keysUnder(t, etcd.ClientConfig{Endpoints: events.endpoints()}, "/registry/events/")
		want := make([]string, len(names))
		for i, n := range names {
			want[i] = "/registry/events/" + ns + "/" + n
		}
		if !slices.Equal(inEvents, want) {
			t.Errorf("keys in the events etcd: %v, want %v", inEvents, want)
		}
		if inMain := keysUnder(t, mainEtcd, "/registry/events/"); len(inMain) != 0 {
			t.Errorf("events in the main etcd: %v", inMain)
		}
		if got := keysUnder(t, mainEtcd, "/registry/configmaps/"+ns+"/"); !slices.Contains(got, "/registry/configmaps/"+ns+"/cm") {
			t.Errorf("config map not in the main etcd: %v", got)
		}
		if got := keysUnder(t, etcd.ClientConfig{Endpoints: events.endpoints()}, "/registry/configmaps/"); len(got) != 0 {
			t.Errorf("config maps in the events etcd: %v", got)
		}
	})

	t.Run("both doors", func(t *testing.T) {
		for _, n := range names {
			if _, err := httpCS.CoreV1().Events(ns).Get(ctx, n, metav1.GetOptions{}); err != nil {
				t.Errorf("HTTP get core event %s: %v", n, err)
			}
			if _, err := inProcessCS.EventsV1().Events(ns).Get(ctx, n, metav1.GetOptions{}); err != nil {
				t.Errorf("in-process door get events.k8s.io event %s: %v", n, err)
			}
			if _, err := coreEvents.Namespace(ns).Get(ctx, n, metav1.GetOptions{}); err != nil {
				t.Errorf("registry client get core event %s: %v", n, err)
			}
		}
		httpList, err := httpCS.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(httpList.Items) != len(names) {
			t.Errorf("HTTP list of events.k8s.io events: %v, %d items, want %d", err, itemCount(httpList), len(names))
		}
		regList, err := coreEvents.Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(regList.Items) != len(names) {
			t.Errorf("registry client list of core events: %v, want %d items", err, len(names))
		}
		for door, w := range map[string]watch.Interface{"HTTP": httpWatch, "registry client": regWatch} {
			if got := addedNames(t, w, len(names)); !slices.Equal(got, names) {
				t.Errorf("%s watch: ADDED %v, want %v", door, got, names)
			}
		}
	})

	t.Run("readyz names each etcd", func(t *testing.T) {
		code, body := s.Get(t, "/readyz?verbose")
		if code != http.StatusOK || !strings.Contains(body, "[+]etcd ok") || !strings.Contains(body, "[+]etcd-override-0 ok") {
			t.Errorf("/readyz?verbose: %d\n%s", code, body)
		}
		if _, body := s.Get(t, "/livez?verbose"); strings.Contains(body, "etcd-override") {
			t.Errorf("/livez?verbose lists the override's check (an external etcd's outage is no reason to restart):\n%s", body)
		}
	})

	t.Run("backup", func(t *testing.T) {
		began := time.Now()
		out := filepath.Join(t.TempDir(), "backup.tar")
		_, err := backup.Backup(ctx, backup.BackupOptions{DataDir: s.DataDir, Output: out})
		if want := "--etcd-servers-overrides=/events#" + eventsURL; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "events.events.k8s.io") {
			t.Fatalf("backup without the overrides: %v, want a refusal naming %s and the resources", err, want)
		}
		opts := options.NewServerOptions()
		opts.Storage.Etcd.ServersOverrides = []string{"/events#" + eventsURL}
		overrides, err := opts.Storage.Etcd.Overrides()
		if err != nil {
			t.Fatal(err)
		}
		m, err := backup.Backup(ctx, backup.BackupOptions{DataDir: s.DataDir, Output: out, EtcdOverrides: overrides})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.EtcdOverrides) != 1 || m.EtcdOverrides[0].Entry != "etcd-override-0/snapshot.db" || m.EtcdOverrides[0].Etcd != eventsURL ||
			!slices.Equal(m.EtcdOverrides[0].Overrides, []string{"/events"}) || !slices.Equal(m.EtcdOverrides[0].Resources, []string{"events", "events.events.k8s.io"}) ||
			m.EtcdOverrides[0].Snapshot.TotalKeys < len(names) {
			t.Fatalf("manifest's overrides: %+v", m.EtcdOverrides)
		}
		restored := filepath.Join(t.TempDir(), "restored")
		if _, err := backup.Restore(ctx, backup.RestoreOptions{Archive: out, DataDir: restored}); err != nil {
			t.Fatal(err)
		}
		// The main snapshot: the config map and the custom, no event.
		mainKeys := keysInSnapshotDir(t, datadir.EmbeddedEtcdDir(restored))
		if !slices.Contains(mainKeys, "/registry/configmaps/"+ns+"/cm") || !slices.Contains(mainKeys, "/registry/test/customs/"+ns+"/c-before") ||
			slices.ContainsFunc(mainKeys, func(k string) bool { return strings.HasPrefix(k, "/registry/events/") }) {
			t.Errorf("restored main etcd: %v", mainKeys)
		}
		// The events etcd's snapshot, beside the data dir: every event.
		eventsDir := filepath.Join(t.TempDir(), "events-etcd")
		if _, err := backup.RestoreSnapshot(backup.OverrideSnapshotPath(restored, 0), eventsDir, 0); err != nil {
			t.Fatal(err)
		}
		var gotEvents []string
		for _, k := range keysInSnapshotDir(t, eventsDir) {
			if strings.HasPrefix(k, "/registry/events/") {
				gotEvents = append(gotEvents, strings.TrimPrefix(k, "/registry/events/"+ns+"/"))
			}
		}
		if !slices.Equal(gotEvents, names) {
			t.Errorf("events in the override's snapshot: %v, want %v", gotEvents, names)
		}
		t.Logf("backup refused, backup, restore and checks in %s", time.Since(began).Round(time.Millisecond))
	})

	t.Run("events etcd down", func(t *testing.T) {
		began := time.Now()
		events.members[0].kill()
		down := time.Now()
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			code, _ := s.Get(t, "/readyz")
			return code != http.StatusOK, nil
		})
		if err != nil {
			t.Fatal("/readyz still 200 30 s after the events etcd went away")
		}
		t.Logf("/readyz red %s after the events etcd went away", time.Since(down).Round(time.Millisecond))
		code, body := s.Get(t, "/readyz?verbose")
		if code == http.StatusOK || !strings.Contains(body, "[-]etcd-override-0 failed") || !strings.Contains(body, "[+]etcd ok") {
			t.Errorf("/readyz?verbose with the events etcd down: %d\n%s", code, body)
		}
		if code, body := s.Get(t, "/readyz/etcd-override-0"); code == http.StatusOK || !strings.Contains(body, eventsURL) || !strings.Contains(body, "events.events.k8s.io") {
			t.Errorf("/readyz/etcd-override-0: %d %s, want a failure naming %s and its resources", code, body, eventsURL)
		}
		if code, body := s.Get(t, "/livez"); code != http.StatusOK {
			t.Errorf("/livez %d with the events etcd down: %s", code, body)
		}

		// Event requests fail with a Status within the storage timeouts
		// (8 s) plus a margin; every other resource works meanwhile.
		const failWithin = 12 * time.Second
		evBody := `{"apiVersion":"v1","kind":"Event","metadata":{"name":"during"},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"cm"},"reason":"Test","message":"during","type":"Normal"}`
		httpEvents := map[string]func() attempt{
			"HTTP create": func() attempt {
				return do(ctx, s.HTTPClient, http.MethodPost, s.URL+"/api/v1/namespaces/default/events", []byte(evBody))
			},
			"HTTP get": func() attempt {
				return do(ctx, s.HTTPClient, http.MethodGet, s.URL+"/api/v1/namespaces/default/events/http-core", nil)
			},
			"HTTP list events.k8s.io": func() attempt {
				return do(ctx, s.HTTPClient, http.MethodGet, s.URL+"/apis/events.k8s.io/v1/namespaces/default/events", nil)
			},
		}
		inProcessEvents := map[string]func() error{
			"registry client create": func() error {
				_, err := coreEvents.Namespace(ns).Create(ctx, coreEvent("during-registry"), metav1.CreateOptions{})
				return err
			},
			"registry client get": func() error {
				_, err := coreEvents.Namespace(ns).Get(ctx, "registry-core", metav1.GetOptions{})
				return err
			},
			"in-process door create events.k8s.io": func() error {
				_, err := inProcessCS.EventsV1().Events(ns).Create(ctx, newEvent("during-inprocess"), metav1.CreateOptions{})
				return err
			},
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for name, req := range httpEvents {
			wg.Go(func() {
				a := req()
				mu.Lock()
				defer mu.Unlock()
				if !unavailable(a) || a.took() > failWithin {
					t.Errorf("%s with the events etcd down: %d %s %q (%v) after %s, want 503/504 naming etcd within %s",
						name, a.code, a.reason, a.message, a.err, a.took().Round(time.Millisecond), failWithin)
				}
				t.Logf("%s: %d %s after %s", name, a.code, a.reason, a.took().Round(time.Millisecond))
			})
		}
		for name, req := range inProcessEvents {
			wg.Go(func() {
				t0 := time.Now()
				err := req()
				took := time.Since(t0)
				mu.Lock()
				defer mu.Unlock()
				if !(apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err)) || !strings.Contains(err.Error(), "etcd is unavailable") || took > failWithin {
					t.Errorf("%s with the events etcd down: %v after %s, want a 503/504 Status naming etcd within %s", name, err, took.Round(time.Millisecond), failWithin)
				}
				t.Logf("%s: %s after %s", name, apierrors.ReasonForError(err), took.Round(time.Millisecond))
			})
		}
		// Meanwhile, customs, config maps and leases through both doors.
		others := map[string]func(i int) error{
			"HTTP custom": func(i int) error {
				if a := create(ctx, s, fmt.Sprintf("c-during-%d", i)); a.err != nil || a.code != http.StatusCreated {
					return fmt.Errorf("%d %s %v", a.code, a.message, a.err)
				}
				return nil
			},
			"HTTP config map": func(i int) error {
				_, err := httpCS.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-during-%d", i)}}, metav1.CreateOptions{})
				return err
			},
			"in-process door lease": func(i int) error {
				_, err := inProcessCS.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("l-during-%d", i)}}, metav1.CreateOptions{})
				return err
			},
			"HTTP list config maps": func(int) error {
				_, err := httpCS.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
				return err
			},
		}
		for name, req := range others {
			wg.Go(func() {
				for i := range 5 {
					t0 := time.Now()
					err := req(i)
					took := time.Since(t0)
					if err != nil || took > 2*time.Second {
						mu.Lock()
						t.Errorf("%s #%d with the events etcd down: %v after %s, want success at once", name, i, err, took.Round(time.Millisecond))
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()

		events.members[0].start(t)
		restarted := time.Now()
		if _, ok := events.waitQuorum(ctx, 30*time.Second); !ok {
			t.Fatal("the events etcd did not come back within 30 s")
		}
		err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			code, _ := s.Get(t, "/readyz")
			return code == http.StatusOK, nil
		})
		if err != nil {
			_, body := s.Get(t, "/readyz?verbose")
			t.Fatalf("/readyz not green 30 s after the events etcd came back:\n%s", body)
		}
		t.Logf("/readyz green %s after the events etcd was restarted", time.Since(restarted).Round(time.Millisecond))
		if _, err := httpCS.CoreV1().Events(ns).Create(ctx, coreEvent("after"), metav1.CreateOptions{}); err != nil {
			t.Errorf("HTTP create event after the restart: %v", err)
		}
		if _, err := coreEvents.Namespace(ns).Get(ctx, "after", metav1.GetOptions{}); err != nil {
			t.Errorf("registry client get event after the restart: %v", err)
		}
		if got := keysUnder(t, etcd.ClientConfig{Endpoints: events.endpoints()}, "/registry/events/"+ns+"/after"); len(got) != 1 {
			t.Errorf("the event created after the restart is not in the events etcd: %v", got)
		}
		t.Logf("outage and recovery in %s", time.Since(began).Round(time.Millisecond))
	})
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// createCustom creates a custom over HTTP, failing the test otherwise.
func createCustom(t *testing.T, s *customapitest.Server, name string) {
	t.Helper()
	if a := create(t.Context(), s, name); a.err != nil || a.code != http.StatusCreated {
		t.Fatalf("create custom %s: %d %s %v", name, a.code, a.message, a.err)
	}
}

// keysUnder returns the keys under prefix in the etcd of cfg, sorted.
func keysUnder(t *testing.T, cfg etcd.ClientConfig, prefix string) []string {
	t.Helper()
	cli, err := cfg.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(t.Context(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	slices.Sort(keys)
	return keys
}

// keysInSnapshotDir starts an embedded etcd on a restored etcd data dir
// and returns its keys under /registry/, sorted.
func keysInSnapshotDir(t *testing.T, dir string) []string {
	t.Helper()
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true, LogLevel: "error"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	return keysUnder(t, e.ClientConfig(), "/registry/")
}

// addedNames reads n events of w and returns the names of the ADDED
// objects, sorted; it fails the test after 10 s.
func addedNames(t *testing.T, w watch.Interface, n int) []string {
	t.Helper()
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended after %v", got)
			}
			if ev.Type != watch.Added {
				t.Fatalf("watch: %s %+v", ev.Type, ev.Object)
			}
			got = append(got, ev.Object.(*corev1.Event).Name)
		case <-timeout:
			t.Fatalf("watch: %v after 10 s, want %d events", got, n)
		}
	}
	slices.Sort(got)
	return got
}

func itemCount(l *eventsv1.EventList) int {
	if l == nil {
		return -1
	}
	return len(l.Items)
}

package command_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/command"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// noSpaceQuota is the quota of the servers and etcds these tests fill.
const noSpaceQuota = 64 << 20

// runCommand runs the customapi command tree with args and returns its
// standard output and error output, and its error.
func runCommand(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root, err := command.NewRootCommand(command.Config{Name: "customapi", Resources: []resource.Resource{install.Customs}})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// checkNoSpaceStatus fails the test unless err is the Status of a write
// refused for space: 503 ServiceUnavailable, cause EtcdNoSpace, a message
// naming the quota and the recovery command on dataDir.
func checkNoSpaceStatus(t *testing.T, door string, err error, dataDir string) {
	t.Helper()
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		t.Fatalf("%s: %v (%T), want a Status", door, err, err)
	}
	s := st.Status()
	if s.Code != http.StatusServiceUnavailable || s.Reason != metav1.StatusReasonServiceUnavailable || !apierrors.HasStatusCause(err, storage.NoSpaceCause) {
		t.Fatalf("%s: %d %s %+v, want 503 ServiceUnavailable with cause %s", door, s.Code, s.Reason, s.Details, storage.NoSpaceCause)
	}
	for _, want := range []string{"reached its space quota of 64 MiB (--quota-backend-bytes)", "`customapi etcd defrag --data-dir " + dataDir + "`", "deletes still work"} {
		if !strings.Contains(s.Message, want) {
			t.Errorf("%s: message %q lacks %q", door, s.Message, want)
		}
	}
}

// TestNoSpaceAlarmAndRecovery: a server whose embedded etcd's 64 MiB quota
// fills (updates of large config maps by four writers, compaction off)
// answers every write, through both doors, with the NOSPACE Status (a
// writer's update refused as the quota filled is found applied or not, as
// etcd applies a write it finds over the quota and then refuses it; no
// other write is there); reads, a watch and deletes
// keep working; /readyz is red and /readyz/etcd-alarms says why while
// /livez stays green; customapi_etcd_alarm is 1. A restart on the full data
// dir starts (read-only) although its start-up writes are refused (a
// stored versions record and a bootstrap ClusterRole deleted meanwhile,
// the default namespaces' creates). `customapi etcd defrag` on the data dir
// while that server runs makes writes work again, every acknowledged write
// is still there, /readyz is green and the metric 0, and the stored
// versions record is written again.
func TestNoSpaceAlarmAndRecovery(t *testing.T) {
	customapitest.SkipOnSharedEtcd(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	configure := func(o *options.ServerOptions) {
		o.DataDir = dataDir
		o.Storage.Embedded.QuotaBackendBytes = noSpaceQuota
		o.Storage.CompactionInterval = 0 // nothing frees the history
		o.Storage.EtcdAlarmPollPeriod = 200 * time.Millisecond
		o.Authorization.Mode = options.AuthorizationRBAC
		o.GarbageCollector = true
	}
	resources := append(batteries.Resources(batteries.Options{}), install.Customs)
	srv := customapitest.StartWithOptions(t, configure, resources...)
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(srv.Config)
	cms := kube.CoreV1().ConfigMaps("default")
	inProcess, err := client.For[*corev1.ConfigMap, *corev1.ConfigMapList](srv.Registry(), batteries.ConfigMaps)
	if err != nil {
		t.Fatal(err)
	}

	// Four config maps of ~900 KiB, updated until etcd refuses; acked
	// holds each one's last acknowledged generation of content.
	const n = 4
	acked := map[string]string{}
	value := strings.Repeat("v", 900<<10)
	for i := range n {
		name := fmt.Sprintf("big-%d", i)
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"gen": "0", "v": value}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		acked[name] = "0"
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// update writes gen and v into the config map name, read first
	// (config maps are updated at a resourceVersion).
	update := func(name string, gen int, v string) error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data = map[string]string{"gen": fmt.Sprint(gen), "v": v}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}
	// One writer per config map, each until etcd refuses it.
	start := time.Now()
	refused := make([]error, n)
	ackedGen, refusedGen := make([]string, n), make([]string, n)
	var writers sync.WaitGroup
	for i := range n {
		writers.Go(func() {
			name := fmt.Sprintf("big-%d", i)
			for gen := 1; gen <= 200; gen++ {
				if err := update(name, gen, value); err != nil {
					refused[i], refusedGen[i] = err, fmt.Sprint(gen)
					return
				}
				ackedGen[i] = fmt.Sprint(gen)
			}
		})
	}
	writers.Wait()
	for i, gen := range ackedGen {
		if gen != "" {
			acked[fmt.Sprintf("big-%d", i)] = gen
		}
	}
	t.Logf("filled the quota in %s (updates acknowledged %v); refused: %v", time.Since(start).Round(time.Millisecond), acked, refused[0])
	for i := range n {
		if refused[i] == nil {
			t.Fatal("200 updates of 900 KiB fit in a 64 MiB quota")
		}
		checkNoSpaceStatus(t, "HTTP update", refused[i], dataDir)
		// etcd applies a write that passed its quota check before the
		// quota filled and answers it NOSPACE all the same: the refused
		// update of a writer in flight then may be there.
		name := fmt.Sprintf("big-%d", i)
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		switch got := cm.Data["gen"]; got {
		case acked[name]:
		case refusedGen[i]:
			t.Logf("%s: the update refused with NOSPACE (gen %s) was applied: it was in flight when the quota filled", name, got)
			acked[name] = got
		default:
			t.Fatalf("%s: gen %s, want the acknowledged %s or the refused %s", name, got, acked[name], refusedGen[i])
		}
	}
	// Both doors, every kind of write, one Status.
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
	checkNoSpaceStatus(t, "HTTP create", err, dataDir)
	_, err = inProcess.Namespace("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
	checkNoSpaceStatus(t, "in-process create", err, dataDir)
	customs, err := client.For[*testv1.Custom, *testv1.CustomList](srv.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	_, err = customs.Namespace("default").Create(ctx, &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	checkNoSpaceStatus(t, "in-process create of a custom", err, dataDir)

	// Reads, the watch and deletes keep working.
	checkAcked := func(what string) {
		t.Helper()
		for name, gen := range acked {
			for door, read := range map[string]func() (*corev1.ConfigMap, error){
				"HTTP": func() (*corev1.ConfigMap, error) { return cms.Get(ctx, name, metav1.GetOptions{}) },
				"in-process": func() (*corev1.ConfigMap, error) {
					return inProcess.Namespace("default").Get(ctx, name, metav1.GetOptions{})
				},
			} {
				cm, err := read()
				if err != nil || cm.Data["gen"] != gen {
					t.Fatalf("%s: %s get %s: %v, gen %q; want the acknowledged gen %s", what, door, name, err, cm.Data["gen"], gen)
				}
			}
		}
	}
	checkAcked("under NOSPACE")
	if l, err := inProcess.Namespace("default").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != n+1 {
		t.Fatalf("in-process list under NOSPACE: %v, %d items", err, len(l.Items))
	}
	// A watch started under NOSPACE (from the list's resourceVersion)
	// sees a delete, which etcd still takes.
	l, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != n+1 {
		t.Fatalf("list under NOSPACE: %v, %d items", err, len(l.Items))
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := cms.Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete under NOSPACE: %v", err)
	}
	for deleted := false; !deleted; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended under NOSPACE")
			}
			deleted = ev.Type == watch.Deleted && ev.Object.(*corev1.ConfigMap).Name == "doomed"
		case <-time.After(30 * time.Second):
			t.Fatal("no DELETED event for the config map deleted under NOSPACE")
		}
	}

	// The probes and the metric.
	checkProbes := func(s *customapitest.Server, noSpace bool) {
		t.Helper()
		want := http.StatusOK
		if noSpace {
			want = http.StatusInternalServerError
		}
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			code, _ := s.Get(t, "/readyz")
			return code == want, nil
		}); err != nil {
			t.Fatalf("waiting for /readyz %d: %v", want, err)
		}
		code, body := s.Get(t, "/readyz/etcd-alarms")
		if code != want || noSpace && (!strings.Contains(body, "etcd alarm NOSPACE on member") || !strings.Contains(body, "customapi etcd defrag --data-dir "+dataDir)) {
			t.Fatalf("/readyz/etcd-alarms: %d %q", code, body)
		}
		if code, body := s.Get(t, "/livez"); code != http.StatusOK {
			t.Fatalf("/livez: %d %q", code, body)
		}
		metric := `customapi_etcd_alarm{alarm="NOSPACE"} 0`
		if noSpace {
			metric = `customapi_etcd_alarm{alarm="NOSPACE"} 1`
		}
		if _, body := s.Get(t, "/metrics"); !strings.Contains(body, metric) {
			t.Fatalf("/metrics lacks %s", metric)
		}
	}
	checkProbes(srv, true)

	// Start-up writes that will be refused on restart: a stored versions
	// record and a bootstrap ClusterRole, deleted (deletes work).
	if err := kube.RbacV1().ClusterRoles().Delete(ctx, "view", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete clusterrole view under NOSPACE: %v", err)
	}
	etcdCfg, err := etcd.RunningEmbedded(datadir.EmbeddedEtcdDir(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := etcdCfg.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	recordKey := storage.StoredVersionsKey(storage.DefaultPrefix, install.Customs.GroupResource())
	if resp, err := raw.Delete(ctx, recordKey); err != nil || resp.Deleted != 1 {
		t.Fatalf("delete %s: %v %v", recordKey, resp, err)
	}
	raw.Close()

	// A restart on the full data dir starts, read-only.
	w.Stop()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	srv = customapitest.StartWithOptions(t, configure, resources...)
	t.Logf("restart on the full data dir: ready in %s", time.Since(start).Round(time.Millisecond))
	kube = kubernetes.NewForConfigOrDie(srv.Config)
	cms = kube.CoreV1().ConfigMaps("default")
	if inProcess, err = client.For[*corev1.ConfigMap, *corev1.ConfigMapList](srv.Registry(), batteries.ConfigMaps); err != nil {
		t.Fatal(err)
	}
	checkAcked("after the restart under NOSPACE")
	checkNoSpaceStatus(t, "HTTP update after the restart", update("big-0", -1, "x"), dataDir)
	checkProbes(srv, true)

	// The recovery, while the server runs.
	stdout, stderr, err := runCommand(t, "etcd", "defrag", "--data-dir", dataDir)
	t.Logf("etcd defrag:\n%s%s", stderr, stdout)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"compacted etcd's history at revision ", "member customapi (https://127.0.0.1:", "disarmed NOSPACE on member "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("etcd defrag's output lacks %q", want)
		}
	}
	if !strings.Contains(stderr, "a server runs on "+dataDir) {
		t.Errorf("etcd defrag did not say it works on the running server's etcd: %q", stderr)
	}
	checkProbes(srv, false)
	for gen := 1000; gen < 1000+n; gen++ {
		name := fmt.Sprintf("big-%d", gen%n)
		if err := update(name, gen, "small"); err != nil {
			t.Fatalf("update after recovery: %v", err)
		}
		acked[name] = fmt.Sprint(gen)
	}
	if _, err := inProcess.Namespace("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("in-process create after recovery: %v", err)
	}
	checkAcked("after recovery")
	// The record the restart could not write is written once etcd has
	// room (the ClusterRole and namespaces wait for the next start).
	if etcdCfg, err = etcd.RunningEmbedded(datadir.EmbeddedEtcdDir(dataDir)); err != nil { // the restarted etcd's port
		t.Fatal(err)
	}
	raw, err = etcdCfg.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := raw.Get(ctx, recordKey)
		return err == nil && len(resp.Kvs) == 1, nil
	}); err != nil {
		t.Fatalf("waiting for the stored versions record: %v", err)
	}
}

// TestEtcdDefragCommand: `etcd defrag` on a stopped data dir (it starts the
// embedded etcd under the data dir's lock, with the quota it is given) and
// on an external etcd (its flags and TLS files) compacts, defragments and
// disarms a full quota, after which writes work; it refuses the embedded
// etcd's flags with --etcd-servers, and a data dir without etcd data.
func TestEtcdDefragCommand(t *testing.T) {
	customapitest.SkipOnSharedEtcd(t)
	for _, tc := range []struct {
		name     string
		external bool
	}{
		{"stopped data dir", false},
		{"external etcd", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			dataDir := t.TempDir()
			cfg := etcd.EmbeddedConfig{DataDir: datadir.EmbeddedEtcdDir(dataDir), UnsafeNoFsync: true, QuotaBackendBytes: noSpaceQuota}
			e, err := etcd.StartEmbedded(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			fill := func() {
				cli, err := e.ClientConfig().NewClient(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer cli.Close()
				customapitest.FillToNoSpace(t, cli, "/registry/fill", 4)
			}
			fill()
			args := []string{"etcd", "defrag", "--data-dir", dataDir}
			if tc.external {
				c := e.ClientConfig()
				args = append(args, "--etcd-servers", strings.Join(c.Endpoints, ","), "--etcd-cafile", c.CAFile, "--etcd-certfile", c.CertFile, "--etcd-keyfile", c.KeyFile)
			} else {
				e.Close()
				args = append(args, "--quota-backend-bytes", "64Mi")
			}
			stdout, stderr, err := runCommand(t, args...)
			t.Logf("etcd defrag:\n%s%s", stderr, stdout)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"compacted etcd's history at revision ", ", quota 64 MiB, defragmented in ", "disarmed NOSPACE on member "} {
				if !strings.Contains(stdout, want) {
					t.Errorf("output lacks %q", want)
				}
			}
			if started := strings.Contains(stderr, "no server runs on "+dataDir+": started its embedded etcd"); started == tc.external {
				t.Errorf("said it started the embedded etcd: %v (stderr %q)", started, stderr)
			}
			if !tc.external {
				// The lock is released and the etcd stopped: it starts
				// again, without the alarm.
				release, err := datadir.Lock(dataDir)
				if err != nil {
					t.Fatalf("lock after etcd defrag: %v", err)
				}
				if err := release(); err != nil {
					t.Fatal(err)
				}
				if e, err = etcd.StartEmbedded(ctx, cfg); err != nil {
					t.Fatal(err)
				}
				defer e.Close()
			}
			cli, err := e.ClientConfig().NewClient(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			if alarms, err := cli.AlarmList(ctx); err != nil || len(alarms.Alarms) != 0 {
				t.Fatalf("alarms after etcd defrag: %v %v", alarms, err)
			}
			if _, err := cli.Put(ctx, "/registry/after", "v"); err != nil {
				t.Fatalf("put after etcd defrag: %v", err)
			}
			if resp, err := cli.Get(ctx, storage.CompactRevisionKey); err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("%s after etcd defrag: %v %v", storage.CompactRevisionKey, resp, err)
			}
		})
	}

	noEtcd := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--etcd-servers", "https://127.0.0.1:2379", "--quota-backend-bytes", "1Gi"}, "--quota-backend-bytes is the embedded etcd's"},
		{[]string{"--etcd-servers", "https://127.0.0.1:2379", "--bootstrap-defrag-threshold-megabytes", "10"}, "--bootstrap-defrag-threshold-megabytes is the embedded etcd's"},
		{[]string{"--data-dir", noEtcd}, "holds no embedded etcd data"},
		{[]string{"--data-dir", noEtcd, "--quota-backend-bytes", "lots"}, "neither a number of bytes nor a quantity"},
	} {
		_, _, err := runCommand(t, append([]string{"etcd", "defrag"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("etcd defrag %v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(noEtcd, datadir.LockFile)); err == nil {
		t.Errorf("a refused etcd defrag left a lock file in %s", noEtcd)
	}
}

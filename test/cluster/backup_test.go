package cluster_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/pkg/datadir"
)

// TestClusterBackupRestore follows docs/serving.md, "Backup and restore of
// a cluster": `customapi backup` of one server of a three-server cluster
// while all serve; the cluster stopped; `customapi restore` into a new data
// dir, which is a single server (no record, join token or peer CA of the
// old cluster); `serve --cluster-init` makes it the first server of a new
// cluster with its data, and two new servers join it. Every object backed
// up is read through each new server with the old first server's admin
// kubeconfig (the CA and tokens are restored and shared on join), none
// written after the backup is there, the old join token is refused, and
// no watcher goes back in time: a watch from a resourceVersion of the old
// cluster (before the backup, and its last) gets 410 Gone on each new
// server, and new writes get resourceVersions above every old one.
func TestClusterBackupRestore(t *testing.T) {
	old, dirs, _ := processCluster(t)
	ctx := t.Context()
	oldKube := kubernetes.NewForConfigOrDie(old[0].Config)

	// Objects written through every server, and a Secret (encrypted at
	// rest with the generated key, which the restore must bring along).
	want := map[string]*corev1.ConfigMap{}
	for i := range 9 {
		cm, err := kubernetes.NewForConfigOrDie(old[i%3].Config).CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("before-%d", i)}, Data: map[string]string{"via": fmt.Sprint(i % 3)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want[cm.Name] = cm
	}
	if _, err := oldKube.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "kept"}, StringData: map[string]string{"password": "s3cr3t"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	listed, err := kubernetes.NewForConfigOrDie(old[1].Config).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rvBefore := listed.ResourceVersion // taken before the backup

	archive := filepath.Join(t.TempDir(), "cluster.tar")
	backup := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "backup", "--data-dir", dirs[1], "-o", archive)
	if backup.ExitCode != 0 {
		t.Fatalf("backup of server 1 while the cluster serves: %s", backup)
	}
	t.Logf("backup in %s: %s", backup.Elapsed.Round(time.Millisecond), strings.TrimSpace(backup.Stdout))

	// Writes after the backup: not in it, and they take the old cluster's
	// resourceVersions past the snapshot's.
	var rvOldLast string
	for i := range 3 {
		cm, err := oldKube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("after-%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rvOldLast = cm.ResourceVersion
	}
	t.Logf("the old cluster stopped in %s", stopAll(t, old))

	restored := filepath.Join(t.TempDir(), "restored")
	restore := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "restore", "--data-dir", restored, archive)
	if restore.ExitCode != 0 || !strings.Contains(restore.Stdout, "--cluster-init") {
		t.Fatalf("restore: %s", restore)
	}
	t.Logf("restore in %s:\n%s", restore.Elapsed.Round(time.Millisecond), restore.Stdout)
	for _, f := range []string{datadir.ClusterFile, datadir.JoinTokenFile, datadir.PeerCACertFile, datadir.PeerCAKeyFile} {
		if _, err := os.Stat(filepath.Join(restored, f)); !os.IsNotExist(err) {
			t.Errorf("the restored data dir holds the old cluster's %s (%v)", f, err)
		}
	}

	// The new cluster: the restored server first, two new ones join it.
	servers := []*binarytest.Server{binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{
		DataDir: restored, Args: []string{"--cluster-init", "--etcd-peer-url", peerURL(t)},
	})}
	token := filepath.Join(restored, datadir.JoinTokenFile)
	root := t.TempDir()
	for i := 1; i < 3; i++ {
		servers = append(servers, binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{
			DataDir: filepath.Join(root, fmt.Sprintf("new%d", i)),
			Args:    []string{"--server", servers[0].URL, "--token-file", token, "--etcd-peer-url", peerURL(t)},
		}))
	}
	t.Cleanup(func() { t.Logf("the new cluster stopped in %s", stopAll(t, servers)) })
	members := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "cluster", "members", "--data-dir", restored)
	if members.ExitCode != 0 || strings.Count(members.Stdout, "voter") != 3 {
		t.Fatalf("cluster members of the new cluster: %s", members)
	}
	for _, f := range []string{datadir.JoinTokenFile, datadir.PeerCACertFile} {
		was, _ := os.ReadFile(filepath.Join(dirs[0], f))
		now, err := os.ReadFile(filepath.Join(restored, f))
		if err != nil || bytes.Equal(was, now) {
			t.Errorf("the new cluster's %s: %v, or the old cluster's", f, err)
		}
	}

	// The old first server's admin kubeconfig, at each new server's URL.
	oldKubeconfig := filepath.Join(dirs[0], datadir.AdminKubeconfigFile)
	kubes := make([]kubernetes.Interface, len(servers))
	for i, s := range servers {
		cfg, err := clientcmd.BuildConfigFromFlags(s.URL, oldKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		cfg.QPS, cfg.Burst = -1, 0
		kubes[i] = kubernetes.NewForConfigOrDie(cfg)
	}
	for i, kube := range kubes {
		list, err := kube.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("new server %d, with the old first server's kubeconfig: %v", i, err)
		}
		got := map[string]corev1.ConfigMap{}
		for _, cm := range list.Items {
			if cm.Name != "kube-root-ca.crt" {
				got[cm.Name] = cm
			}
		}
		for name, w := range want {
			g, ok := got[name]
			if !ok {
				t.Errorf("new server %d: %s is missing", i, name)
				continue
			}
			if g.UID != w.UID || g.ResourceVersion != w.ResourceVersion || g.Data["via"] != w.Data["via"] {
				t.Errorf("new server %d: %s is uid %s resourceVersion %s %v, was %s %s %v", i, name, g.UID, g.ResourceVersion, g.Data, w.UID, w.ResourceVersion, w.Data)
			}
			delete(got, name)
		}
		for name := range got {
			t.Errorf("new server %d: %s is there, written after the backup or never", i, name)
		}
		secret, err := kube.CoreV1().Secrets("default").Get(ctx, "kept", metav1.GetOptions{})
		if err != nil || string(secret.Data["password"]) != "s3cr3t" {
			t.Errorf("new server %d: the Secret: %v", i, err)
		}
	}

	// The old cluster's join token joins nothing here.
	oldToken, err := os.ReadFile(filepath.Join(dirs[0], datadir.JoinTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := datadir.ParseJoinToken(string(oldToken))
	if err != nil {
		t.Fatal(err)
	}
	joiner := rest.CopyConfig(servers[1].Config)
	joiner.BearerToken = parsed.Secret
	if _, err := kubernetes.NewForConfigOrDie(joiner).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("the old cluster's join token on the new cluster: %v, want 401 Unauthorized", err)
	}

	// No watcher goes back in time: on each new server a watch from a
	// resourceVersion of the old cluster gets 410 Gone; were it to start
	// anyway, no event may be at or below the old cluster's last one.
	oldMax := parseRV(t, rvOldLast)
	type opened struct {
		server int
		from   string
		w      watch.Interface
	}
	var watches []opened
	goneAtOnce, goneAsEvent := 0, 0
	for i, kube := range kubes {
		for _, rv := range []string{rvBefore, rvOldLast} {
			w, err := kube.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
					t.Errorf("new server %d: watch from %s: %v, want 410 Gone", i, rv, err)
				}
				goneAtOnce++
				continue
			}
			defer w.Stop()
			watches = append(watches, opened{i, rv, w})
		}
	}
	for i, kube := range kubes {
		cm, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("restored-%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("new server %d: create: %v", i, err)
		}
		if rv := parseRV(t, cm.ResourceVersion); rv <= oldMax {
			t.Errorf("new server %d: a new write got resourceVersion %d, not above the old cluster's %d", i, rv, oldMax)
		}
	}
	for _, o := range watches {
		select {
		case ev, ok := <-o.w.ResultChan():
			switch {
			case !ok:
				t.Errorf("new server %d: the watch from %s ended without an event", o.server, o.from)
			case ev.Type == watch.Error:
				if st, isStatus := ev.Object.(*metav1.Status); !isStatus || st.Code != 410 {
					t.Errorf("new server %d: watch from %s: %v, want 410 Gone", o.server, o.from, ev.Object)
				}
				goneAsEvent++
			default:
				rv := parseRV(t, ev.Object.(*corev1.ConfigMap).ResourceVersion)
				if rv <= oldMax {
					t.Errorf("new server %d: the watch from %s sent %s at resourceVersion %d, at or below the old cluster's %d: back in time", o.server, o.from, ev.Type, rv, oldMax)
				} else {
					t.Logf("new server %d: the watch from %s started after the bump (%s at %d)", o.server, o.from, ev.Type, rv)
				}
			}
		case <-time.After(10 * time.Second):
			t.Errorf("new server %d: the watch from %s: no event in 10 s", o.server, o.from)
		}
	}
	t.Logf("backed up at resourceVersion %s (the old cluster's last %s): %d watches from them got 410 Gone at once, %d as their first event; the new cluster's writes above %d",
		rvBefore, rvOldLast, goneAtOnce, goneAsEvent, oldMax)
}

// parseRV returns a resourceVersion as a number (etcd's revision).
func parseRV(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// stopAll stops the servers of a cluster at once (binarytest.StopAll) and
// returns each one's time to exit.
func stopAll(t *testing.T, servers []*binarytest.Server) string {
	t.Helper()
	var took []string
	for _, res := range binarytest.StopAll(t, servers...) {
		took = append(took, res.Elapsed.Round(100*time.Millisecond).String())
	}
	return strings.Join(took, ", ")
}

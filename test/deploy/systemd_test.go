package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/customapi/customapi/internal/binarytest"
)

// installedBinary is where the units run customapi from.
const installedBinary = "/usr/local/bin/customapi"

// maxExposure is the highest `systemd-analyze security` exposure the
// services may score (0 is best, 10 worst; below 2 is "OK").
const maxExposure = 2.0

// exposureLine is systemd-analyze security's verdict line.
var exposureLine = regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)

// systemd-analyze verifies every unit, and the service with each cluster
// drop-in, with ExecStart's binary at the built one (verify checks that
// it exists); no warning is accepted. The services' hardening scores at
// most maxExposure. (No systemd runs here as PID 1: the units are checked,
// not started.)
func TestSystemdUnits(t *testing.T) {
	t.Parallel()
	analyze := tool(t, "systemd-analyze", "Debian: systemd")
	dir := t.TempDir()
	for _, name := range []string{"customapi.service", "customapi-backup.service"} {
		rewritten(t, dir, "deploy/systemd/"+name, installedBinary, customapiBinary)
	}
	rewritten(t, dir, "deploy/systemd/customapi-backup.timer")
	verify := func(t *testing.T, env []string, args ...string) {
		t.Helper()
		res := binarytest.Run(t, binarytest.RunOptions{Env: env}, analyze, append([]string{"verify"}, args...)...)
		if res.ExitCode != 0 || strings.TrimSpace(res.Stdout+res.Stderr) != "" {
			t.Errorf("systemd-analyze verify %s: %s", strings.Join(args, " "), res)
		}
	}
	t.Run("units", func(t *testing.T) {
		verify(t, nil, filepath.Join(dir, "customapi.service"), filepath.Join(dir, "customapi-backup.service"), filepath.Join(dir, "customapi-backup.timer"))
	})
	for _, dropIn := range []string{"cluster-first.conf", "cluster-join.conf"} {
		t.Run(dropIn, func(t *testing.T) {
			unitDir := t.TempDir()
			rewritten(t, unitDir, "deploy/systemd/customapi.service", installedBinary, customapiBinary)
			d := filepath.Join(unitDir, "customapi.service.d")
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			f := rewritten(t, d, "deploy/systemd/"+dropIn, installedBinary, customapiBinary)
			if err := os.Rename(f, filepath.Join(d, "cluster.conf")); err != nil {
				t.Fatal(err)
			}
			// The unit path is searched for the unit and its drop-ins; the
			// trailing ":" keeps the built-in paths after it.
			verify(t, append(os.Environ(), "SYSTEMD_UNIT_PATH="+unitDir+":"), "customapi.service")
		})
	}
	for _, name := range []string{"customapi.service", "customapi-backup.service"} {
		t.Run("security "+name, func(t *testing.T) {
			res := binarytest.Run(t, binarytest.RunOptions{}, analyze, "security", "--offline=true", filepath.Join(dir, name))
			m := exposureLine.FindStringSubmatch(res.Stdout)
			if m == nil {
				t.Fatalf("systemd-analyze security: no exposure level: %s", res)
			}
			score, err := strconv.ParseFloat(m[1], 64)
			if err != nil || score > maxExposure {
				t.Errorf("%s: exposure %s, want at most %.1f\n%s", name, m[1], maxExposure, res.Stdout)
			}
			t.Logf("%s: systemd-analyze security exposure %s", name, m[1])
		})
	}
}

// execLines returns the command lines of key (ExecStart, ExecStartPost) of
// a unit file, continuation lines joined and systemd's %% made %: what
// /bin/sh runs the same way for these units (single-quoted arguments, no
// other specifiers).
func execLines(t *testing.T, unit, key string) []string {
	t.Helper()
	text := strings.ReplaceAll(unit, "\\\n", " ")
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			if strings.Contains(strings.ReplaceAll(v, "%%", ""), "%") {
				t.Fatalf("%s=%s: a systemd specifier the test does not expand", key, v)
			}
			out = append(out, strings.ReplaceAll(v, "%%", "%"))
		}
	}
	return out
}

// The backup service's commands, run as the timer runs them (on the
// shared server's data dir, into a backup dir), write a dated archive and
// remove the archives over 14 days old only; the archive restores into an
// empty data dir, and a server on it serves the objects backed up, with
// their uids, and the Secret readable: the page's restore drill.
func TestBackupUnitRestores(t *testing.T) {
	t.Parallel()
	kubectl := binarytest.Kubectl(t)
	srv := sharedServer(t)
	uids := createObjects(t, "drill")

	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy/systemd/customapi-backup.service"))
	if err != nil {
		t.Fatal(err)
	}
	backups := t.TempDir()
	paths := strings.NewReplacer(installedBinary, customapiBinary,
		"/var/lib/customapi-backup", backups, "/var/lib/customapi", srv.DataDir)
	old, recent := filepath.Join(backups, "customapi-20000101T000000Z.tar.gz"), filepath.Join(backups, "customapi-recent.tar.gz")
	for _, f := range []string{old, recent} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(old, time.Now(), time.Now().Add(-20*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(recent, time.Now(), time.Now().Add(-2*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	start, post := execLines(t, string(data), "ExecStart"), execLines(t, string(data), "ExecStartPost")
	if len(start) != 1 || len(post) != 1 {
		t.Fatalf("ExecStart %q, ExecStartPost %q: want one of each", start, post)
	}
	for _, line := range append(start, post...) {
		res := binarytest.Run(t, binarytest.RunOptions{}, "/bin/sh", "-c", paths.Replace(line))
		if res.ExitCode != 0 {
			t.Fatalf("%s: %s", line, res)
		}
		t.Logf("%s: %s in %s", line, strings.TrimSpace(res.Stdout), res.Elapsed.Round(time.Millisecond))
	}
	archives, err := filepath.Glob(filepath.Join(backups, "customapi-2*.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) != 1 || !regexp.MustCompile(`/customapi-\d{8}T\d{6}Z\.tar\.gz$`).MatchString(archives[0]) {
		t.Fatalf("archives after the backup: %v, want one dated customapi-YYYYMMDDTHHMMSSZ.tar.gz (and the old one removed)", archives)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("an archive of 2 days was removed: %v", err)
	}

	// The drill: restore into an empty data dir made beforehand, serve it
	// on another port, read the objects.
	restored := filepath.Join(t.TempDir(), "drill")
	if err := os.Mkdir(restored, 0o700); err != nil {
		t.Fatal(err)
	}
	if res := binarytest.Run(t, binarytest.RunOptions{}, customapiBinary, "restore", "--data-dir", restored, archives[0]); res.ExitCode != 0 {
		t.Fatalf("restore: %s", res)
	}
	drill := binarytest.Serve(t, customapiBinary, binarytest.ServeOptions{DataDir: restored})
	cs, err := kubernetes.NewForConfig(drill.Config)
	if err != nil {
		t.Fatal(err)
	}
	cms, err := cs.CoreV1().ConfigMaps("drill").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, cm := range cms.Items {
		got["configmaps/"+cm.Name] = string(cm.UID)
	}
	secret, err := cs.CoreV1().Secrets("drill").Get(t.Context(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got["secrets/db"] = string(secret.UID)
	for k, uid := range uids {
		if got[k] != uid {
			t.Errorf("restored %s: uid %q, want %q", k, got[k], uid)
		}
	}
	if string(secret.Data["password"]) != "s3cret" {
		t.Errorf("restored secret: %q", secret.Data["password"])
	}
	// The old server's admin kubeconfig works against the restored one
	// (same CA, same tokens), as the page's kubectl check does.
	out, err := exec.Command(kubectl, "--kubeconfig", srv.KubeconfigPath, "--server", drill.URL,
		"-n", "drill", "get", "configmaps,secrets", "-o", "name").CombinedOutput()
	if err != nil || strings.Count(string(out), "\n") != len(uids) {
		t.Errorf("kubectl get with the old kubeconfig: %v\n%s", err, out)
	}
}

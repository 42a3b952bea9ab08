package release

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	apimachineryversion "k8s.io/apimachinery/pkg/version"

	"github.com/customapi/customapi/internal/binarytest"
	"github.com/customapi/customapi/internal/ociimage"
	"github.com/customapi/customapi/pkg/customapitest"
)

// loadedImage is podman load's line naming the image it loaded.
var loadedImage = regexp.MustCompile(`(?m)^Loaded image(?:\(s\))?: (\S+)$`)

// TestImageRunsWithPodman: the image's tarball loads into podman, runs
// with its own command and a published port, and serves kubectl with the
// admin.kubeconfig the server wrote into its volume; it stops cleanly.
func TestImageRunsWithPodman(t *testing.T) {
	podmanPath := lookPodman(t)
	kubectl := binarytest.Kubectl(t)
	dir := t.TempDir()
	podman := func(timeout time.Duration, args ...string) binarytest.Result {
		t.Helper()
		res := binarytest.Run(t, binarytest.RunOptions{Timeout: timeout}, podmanPath, args...)
		if res.ExitCode != 0 {
			t.Fatalf("podman %s: %s", strings.Join(args, " "), res)
		}
		return res
	}

	// A tag of this test run's own, should another run load at the same time.
	unique := fmt.Sprintf("%s-%d", ociimage.Tag(testVersion), os.Getpid())
	ref, err := name.NewTag(ociimage.Repository+":"+unique, name.WithDefaultRegistry(""))
	if err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(dir, "image.tar")
	if err := ociimage.WriteTarball(tarball, ref, testImage); err != nil {
		t.Fatal(err)
	}
	res := podman(2*time.Minute, "load", "-i", tarball)
	m := loadedImage.FindStringSubmatch(res.Stdout + res.Stderr)
	if m == nil || !strings.HasSuffix(m[1], "/"+ref.String()) && m[1] != ref.String() {
		t.Fatalf("podman load named no image %s:\n%s", ref, res)
	}
	image := m[1]
	t.Logf("podman load: %s in %s", image, res.Elapsed.Round(time.Millisecond))
	t.Cleanup(func() { binarytest.Run(t, binarytest.RunOptions{}, podmanPath, "rmi", "--force", image) })

	port := customapitest.FreePorts(t, 1)[0]
	container := "customapi-releasetest-" + unique
	args := append(append(podmanRuntime(), "run"), runLimits()...)
	args = append(args, "--detach", "--name", container, "--publish", fmt.Sprintf("127.0.0.1:%d:6443", port), image)
	res = podman(time.Minute, args...)
	t.Logf("podman %s: %s", strings.Join(args, " "), res.Elapsed.Round(time.Millisecond))
	t.Cleanup(func() {
		binarytest.Run(t, binarytest.RunOptions{}, podmanPath, "rm", "--force", "--volumes", container)
	})

	// ready once the server printed its ready line; an exited container
	// fails at once
	start := time.Now()
	customapitest.Eventually(t, 2*time.Minute, "the server's ready line in the container's log", func(ctx context.Context) (bool, error) {
		out, err := exec.CommandContext(ctx, podmanPath, "logs", container).CombinedOutput()
		if err != nil {
			return false, fmt.Errorf("podman logs: %w\n%s", err, out)
		}
		for line := range strings.Lines(string(out)) {
			if binarytest.ReadyLine.MatchString(strings.TrimRight(line, "\n")) {
				return true, nil
			}
		}
		state, err := exec.CommandContext(ctx, podmanPath, "inspect", "--format", "{{.State.Status}}", container).Output()
		if err == nil && strings.TrimSpace(string(state)) == "exited" {
			return false, fmt.Errorf("the container exited:\n%s", binarytest.Tail(string(out), 40))
		}
		return false, nil
	})
	t.Logf("ready %s after podman run", time.Since(start).Round(time.Millisecond))

	// The kubeconfig names https://127.0.0.1:6443, the port in the
	// container; the test published it on a free port instead.
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	podman(time.Minute, "cp", container+":/var/lib/customapi/admin.kubeconfig", kubeconfig)
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	kc := func(args ...string) string {
		t.Helper()
		res := binarytest.Run(t, binarytest.RunOptions{}, kubectl, append([]string{"--kubeconfig", kubeconfig, "--server", server}, args...)...)
		if res.ExitCode != 0 {
			t.Fatalf("kubectl %s: %s", strings.Join(args, " "), res)
		}
		return res.Stdout
	}
	if out := kc("get", "namespaces", "-o", "name"); !strings.Contains(out, "namespace/default\n") {
		t.Errorf("kubectl get namespaces: no namespace/default in\n%s", out)
	}
	var info apimachineryversion.Info
	if err := json.Unmarshal([]byte(kc("get", "--raw", "/version")), &info); err != nil {
		t.Fatal(err)
	}
	if want := "+customapi." + testVersion; !strings.HasSuffix(info.GitVersion, want) || info.BuildDate != testDate {
		t.Errorf("/version: gitVersion %q, buildDate %q; want ...%s and %s", info.GitVersion, info.BuildDate, want, testDate)
	}
	if out := podman(time.Minute, "top", container, "user").Stdout; !strings.Contains(out, "nonroot") {
		t.Errorf("podman top: the server does not run as nonroot:\n%s", out)
	}

	podman(time.Minute, "stop", "--time", "30", container)
	code := strings.TrimSpace(podman(time.Minute, "inspect", "--format", "{{.State.ExitCode}}", container).Stdout)
	logs := podman(time.Minute, "logs", container)
	if code != "0" {
		t.Errorf("exit status %s after podman stop, want 0; stderr:\n%s", code, binarytest.Tail(logs.Stderr, 40))
	}
	for _, l := range binarytest.ClassifyStderr(logs.Stderr).Errors {
		t.Errorf("error-level log line: %s", l)
	}
}

// lookPodman returns podman's path, or skips the test without one (fails
// it with CI=true: CI must not skip silently).
func lookPodman(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("podman")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("podman not found on PATH; CI=true, so this is a failure, not a skip (apt-get install podman runc)")
		}
		t.Skip("podman not found on PATH: the image's run is not tested (apt-get install podman runc)")
	}
	return p
}

// podmanRuntime is podman's global flag choosing runc as the runtime when
// it is installed (Debian's default, crun, refuses a hybrid cgroup
// hierarchy: cgroup v1 controllers with controllers in cgroup v2 too).
func podmanRuntime() []string {
	var flags []string
	if _, err := exec.LookPath("runc"); err == nil {
		flags = append(flags, "--runtime", "runc")
	}
	return flags
}

// runLimits are podman run's --ulimit flags, set so that they raise
// nothing (podman's defaults raise the open-files and process limits,
// which needs CAP_SYS_RESOURCE): the open files of this process, and 1024
// processes, ample for the server's threads.
func runLimits() []string {
	nofile := "nofile=1024:1024"
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err == nil {
		nofile = fmt.Sprintf("nofile=%d:%d", l.Cur, l.Cur)
	}
	return []string{"--ulimit", nofile, "--ulimit", "nproc=1024:1024"}
}

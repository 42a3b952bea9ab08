// Package binarytest builds customapi's server binaries and runs them as
// child processes of a test, as a user runs them: one `go build` of main
// packages (Build, or BuildWith for a static build as the release makes),
// `<binary> serve` on a data dir and a free loopback port, ready once it
// prints its ready line and stopped with SIGTERM when the test ends
// (Serve, or Launch without a test), a command run to its end (Run), a
// process in the background (Start), and kubectl (Kubectl).
//
// It is the harness of customapi's own end-to-end tests (test/e2e,
// test/upgrade, test/ecosystem); a user's test starts a server in process with
// pkg/customapitest instead. Every child process is built with Command:
// on Linux the kernel kills it if the test binary dies, so that no server
// outlives an interrupted run.
//
// A package builds its binaries once, in TestMain, and serves them in its
// tests:
//
//	var customapi string
//
//	func TestMain(m *testing.M) {
//		dir, _ := os.MkdirTemp("", "e2e-")
//		bins, err := binarytest.Build(dir, binarytest.Customapi)
//		...
//		customapi = bins[0]
//		code := m.Run()
//		os.RemoveAll(dir)
//		os.Exit(code)
//	}
//
//	func TestBackup(t *testing.T) {
//		s := binarytest.Serve(t, customapi, binarytest.ServeOptions{DataDir: t.TempDir()})
//		res := binarytest.Run(t, binarytest.RunOptions{}, customapi, "backup", "--kubeconfig", s.KubeconfigPath, ...)
//		if res.ExitCode != 0 {
//			t.Fatal(res)
//		}
//		...
//	}
package binarytest

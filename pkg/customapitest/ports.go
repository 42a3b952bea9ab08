package customapitest

import (
	"net"
	"testing"
)

// FreePorts returns n distinct TCP ports on 127.0.0.1 that nothing listens
// on (each bound, then all released together), for processes a test starts
// that need their ports known in advance, such as etcd peers. Another
// process may take one meanwhile: a test starts its servers soon after.
func FreePorts(tb testing.TB, n int) []int {
	tb.Helper()
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

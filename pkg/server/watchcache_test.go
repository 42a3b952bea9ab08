package server_test

import (
	"strings"
	"testing"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/server"
)

// A --watch-cache-sizes entry for a resource the server does not serve
// fails the start, naming it.
func TestWatchCacheSizesUnserved(t *testing.T) {
	o := options.NewServerOptions()
	o.DataDir = t.TempDir()
	o.Storage.EtcdUnsafeNoFsync = true
	o.Serving.SecurePort = 0
	o.Storage.WatchCacheSizes = []string{"widgets.example.com#0"}
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(t.Context(), cfg, install.Customs)
	if err == nil {
		_ = srv.Close()
		t.Fatal("New succeeded")
	}
	if !strings.Contains(err.Error(), "--watch-cache-sizes names widgets.example.com, which the server does not serve") {
		t.Fatalf("New: %v", err)
	}
}

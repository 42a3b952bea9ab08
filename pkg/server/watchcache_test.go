package server_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/server"
)

// --watch-cache-sizes takes kube-apiserver's resource[.group]#size
// entries and refuses anything else, naming the flag and the entry.
func TestWatchCacheSizesValidate(t *testing.T) {
	for _, tc := range []struct {
		entries []string
		want    string // "" for valid
	}{
		{[]string{"customs.test#0", "events#0", "samples.bench.customapi.io#100"}, ""},
		{[]string{"customs.test"}, `--watch-cache-sizes: "customs.test" is not resource[.group]#size`},
		{[]string{"customs.test#-1"}, `--watch-cache-sizes: "customs.test#-1"`},
		{[]string{"#0"}, `--watch-cache-sizes: "#0"`},
		{[]string{"test/customs#0"}, `--watch-cache-sizes: "test/customs#0"`},
		{[]string{"customs.test#many"}, `--watch-cache-sizes: "customs.test#many"`},
	} {
		t.Run(strings.Join(tc.entries, ","), func(t *testing.T) {
			o := options.NewServerOptions()
			o.DataDir = t.TempDir()
			o.Storage.WatchCacheSizes = tc.entries
			err := errors.Join(o.Validate()...)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

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

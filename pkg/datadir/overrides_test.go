package datadir_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
)

// TestCheckEtcdOverrides: the commands that work on the stored
// objects without the server refuse, naming the flag and the value to
// pass, to leave out the resources the data dir's server recorded as kept
// on etcds of their own, and refuse overrides it did not record; the same
// overrides (by other URLs too) pass.
func TestCheckEtcdOverrides(t *testing.T) {
	dir := t.TempDir()
	record := `{"overrides":[{"resource":"/events","servers":["https://10.0.0.5:2379"],"resources":["events","events.events.k8s.io"]}]}`
	if err := os.WriteFile(filepath.Join(dir, datadir.EtcdOverridesFile), []byte(record), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(values ...string) []storage.Override {
		t.Helper()
		o, err := storage.ParseEtcdServersOverrides(values, etcd.ClientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, tc := range []struct {
		name      string
		overrides []storage.Override
		want      string // "" for none
	}{
		{"the same", parse("/events#https://10.0.0.5:2379"), ""},
		{"the same etcd by another URL", parse("/events#https://etcd-events.example.com:2379"), ""},
		{"none", nil, `backup: the server on data dir ` + dir + ` stores events, events.events.k8s.io on etcd https://10.0.0.5:2379 (--etcd-servers-overrides, recorded in ` + filepath.Join(dir, datadir.EtcdOverridesFile) + `): pass --etcd-servers-overrides=/events#https://10.0.0.5:2379 too, or those objects are left out`},
		{"another", parse("coordination.k8s.io/leases#https://10.0.0.7:2379"), "pass --etcd-servers-overrides=/events#https://10.0.0.5:2379 too"},
		{"one more", parse("/events#https://10.0.0.5:2379", "coordination.k8s.io/leases#https://10.0.0.7:2379"), `--etcd-servers-overrides names "coordination.k8s.io/leases", which the server on data dir`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := datadir.CheckEtcdOverrides(dir, tc.overrides, "backup")
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("CheckEtcdOverrides: %v, want %q", err, tc.want)
			}
		})
	}
	if err := datadir.CheckEtcdOverrides(t.TempDir(), parse("/events#https://10.0.0.5:2379"), "backup"); err != nil {
		t.Errorf("a data dir without a record: %v", err)
	}
}

// TestWriteEtcdOverrides: a record is read back as written; an empty one
// removes the file.
func TestWriteEtcdOverrides(t *testing.T) {
	dir := t.TempDir()
	rec := datadir.EtcdOverridesRecord{Overrides: []datadir.RecordedOverride{
		{Resource: "/events", Servers: []string{"https://10.0.0.5:2379"}, Resources: []string{"events", "events.events.k8s.io"}},
	}}
	if err := datadir.WriteEtcdOverrides(dir, rec); err != nil {
		t.Fatal(err)
	}
	got, err := datadir.ReadEtcdOverrides(dir)
	if err != nil || got == nil || len(got.Overrides) != 1 || got.Overrides[0].Resource != "/events" || len(got.Overrides[0].Resources) != 2 {
		t.Fatalf("ReadEtcdOverrides: %+v, %v; want %+v", got, err, rec)
	}
	if err := datadir.WriteEtcdOverrides(dir, datadir.EtcdOverridesRecord{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, datadir.EtcdOverridesFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("record after writing none: %v, want it removed", err)
	}
	if got, err := datadir.ReadEtcdOverrides(dir); got != nil || err != nil {
		t.Errorf("ReadEtcdOverrides without a record: %+v, %v", got, err)
	}
}

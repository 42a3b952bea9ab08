package datadir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/customapi/customapi/internal/pki"
	"github.com/customapi/customapi/pkg/storage"
)

// EtcdOverridesFile is the file in the data dir in which a server records
// the resources it stores on etcds of their own (--etcd-servers-overrides),
// as JSON (EtcdOverridesRecord), written (WriteEtcdOverrides) when the
// server has opened its storage and removed when it starts without
// overrides. The commands that work on the stored objects without the
// server (`customapi backup`, `storage rewrite`, `storage migrate`) read it
// (CheckEtcdOverrides), so that they refuse to leave those objects out when
// they are not given the same flag.
const EtcdOverridesFile = "etcd-servers-overrides.json"

// EtcdOverridesRecord is the content of EtcdOverridesFile.
type EtcdOverridesRecord struct {
	// Overrides are the server's --etcd-servers-overrides, in the flag's
	// order.
	Overrides []RecordedOverride `json:"overrides"`
}

// RecordedOverride is one override of EtcdOverridesRecord.
type RecordedOverride struct {
	// Resource is the overridden resource as the flag writes it:
	// "/events", "coordination.k8s.io/leases".
	Resource string `json:"resource"`
	// Servers are the client URLs of its etcd.
	Servers []string `json:"servers"`
	// Resources are the served resources whose objects that etcd holds
	// for it: the overridden one and those stored as it ("events",
	// "events.events.k8s.io").
	Resources []string `json:"resources"`
}

// WriteEtcdOverrides records rec in the data dir dir's EtcdOverridesFile
// (JSON, atomically, mode 0600), or removes the file when rec has no
// overrides.
func WriteEtcdOverrides(dir string, rec EtcdOverridesRecord) error {
	path := filepath.Join(dir, EtcdOverridesFile)
	if len(rec.Overrides) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := pki.WriteFileAtomic(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("record the etcd overrides: %w", err)
	}
	return nil
}

// ReadEtcdOverrides returns the overrides the last server on dataDir
// recorded (EtcdOverridesFile), or nil when it recorded none (no file).
// Errors: the file cannot be read or is not such a record.
func ReadEtcdOverrides(dataDir string) (*EtcdOverridesRecord, error) {
	path := filepath.Join(dataDir, EtcdOverridesFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec EtcdOverridesRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("the etcd overrides record %s: %w", path, err)
	}
	return &rec, nil
}

// CheckEtcdOverrides returns nil when overrides name the resources the
// server on dataDir stores on etcds of their own (its
// EtcdOverridesRecord), or when it recorded none; otherwise an error that
// names --etcd-servers-overrides, the resources and their etcd, and the
// value to pass. command is what refuses ("backup", "storage rewrite"):
// run without the flag, it would leave those objects out. Only the
// resources are compared: the servers may be given by other URLs.
func CheckEtcdOverrides(dataDir string, overrides []storage.Override, command string) error {
	rec, err := ReadEtcdOverrides(dataDir)
	if err != nil || rec == nil {
		return err
	}
	given := map[string]bool{}
	for _, o := range overrides {
		given[storage.OverrideName(o.Resource)] = true
	}
	var missing, values []string
	recorded := map[string]bool{}
	for _, r := range rec.Overrides {
		recorded[r.Resource] = true
		values = append(values, r.Resource+"#"+strings.Join(r.Servers, ";"))
		if !given[r.Resource] {
			missing = append(missing, fmt.Sprintf("%s on etcd %s", strings.Join(r.Resources, ", "), strings.Join(r.Servers, ",")))
		}
	}
	path := filepath.Join(dataDir, EtcdOverridesFile)
	if len(missing) != 0 {
		return fmt.Errorf("%s: the server on data dir %s stores %s (--etcd-servers-overrides, recorded in %s): pass --etcd-servers-overrides=%s too, or those objects are left out",
			command, dataDir, strings.Join(missing, "; "), path, strings.Join(values, ","))
	}
	var extra []string
	for name := range given {
		if !recorded[name] {
			extra = append(extra, fmt.Sprintf("%q", name))
		}
	}
	if len(extra) != 0 {
		slices.Sort(extra)
		return fmt.Errorf("%s: --etcd-servers-overrides names %s, which the server on data dir %s does not store on an etcd of its own (its record %s: --etcd-servers-overrides=%s)",
			command, strings.Join(extra, ", "), dataDir, path, strings.Join(values, ","))
	}
	return nil
}

package storage_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/storage"
)

// smallQuota is the quota of the etcds these tests fill: 16 MiB.
const smallQuota = 16 << 20

// startEtcd starts an etcd of the test's own on dir with quota, and a
// client of it; the test's cleanup closes them.
func startEtcd(t *testing.T, dir string, quota int64) (*etcd.Embedded, *clientv3.Client) {
	t.Helper()
	e, err := etcd.StartEmbedded(t.Context(), etcd.EmbeddedConfig{DataDir: dir, UnsafeNoFsync: true, QuotaBackendBytes: quota})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cli, err := e.ClientConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return e, cli
}

// TestReclaimSpace: ReclaimSpace compacts at the current revision (recorded
// in compact_rev_key as kube's compactor does, its version counting the
// compactions), defragments the member (the database shrinks) and disarms
// NOSPACE, after which writes work; when the live data itself fills the
// quota it leaves the alarm raised and says so, deletes work meanwhile,
// and a run after deleting succeeds. The alarm monitor follows: Check and
// NoSpace while raised, nil once disarmed.
func TestReclaimSpace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		keys     int  // distinct keys the fill writes; 0: no fill
		liveFull bool // the live data fills the quota
	}{
		{"history fills the quota", 4, false},
		// 20 MiB written under a 32 MiB quota, then etcd restarted
		// with 16 MiB: its next write raises NOSPACE.
		{"live data fills the quota", 80, true},
		{"no alarm", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			_, cli := startEtcd(t, t.TempDir(), smallQuota)
			monitor := storage.NewAlarmMonitor(storage.AlarmMonitorConfig{QuotaBackendBytes: smallQuota, Embedded: true, Recovery: "customapi etcd defrag --data-dir d"})
			var written int
			if tc.keys != 0 {
				if tc.liveFull {
					bigDir := t.TempDir()
					e, big := startEtcd(t, bigDir, 2*smallQuota)
					value := strings.Repeat("x", 256<<10)
					for i := range tc.keys {
						if _, err := big.Put(ctx, fmt.Sprintf("/k/%04d", i), value); err != nil {
							t.Fatal(err)
						}
					}
					_ = big.Close()
					e.Close()
					// The same data, the smaller quota.
					_, cli = startEtcd(t, bigDir, smallQuota)
					if _, err := cli.Put(ctx, "/k/more", "v"); !storage.IsNoSpace(err) {
						t.Fatalf("a put with 20 MiB of data under a 16 MiB quota: %v, want NOSPACE", err)
					}
					written = tc.keys
				} else {
					written = customapitest.FillToNoSpace(t, cli, "/k", tc.keys)
				}
				if err := monitor.Poll(ctx, cli); err != nil {
					t.Fatal(err)
				}
				if !monitor.NoSpace() {
					t.Fatalf("after NOSPACE: monitor says no NOSPACE (alarms %v)", monitor.Alarms())
				}
				err := monitor.Check()
				if err == nil || !strings.Contains(err.Error(), "etcd alarm NOSPACE on member ") || !strings.Contains(err.Error(), "16 MiB (--quota-backend-bytes)") || !strings.Contains(err.Error(), "`customapi etcd defrag --data-dir d`") {
					t.Fatalf("Check: %v", err)
				}
			} else {
				for i := range 20 {
					if _, err := cli.Put(ctx, "/k/0", strconv.Itoa(i)); err != nil {
						t.Fatal(err)
					}
				}
			}
			compactVersion := keyVersion(t, cli, storage.CompactRevisionKey)
			var steps []string
			rep, err := storage.ReclaimSpace(ctx, cli, storage.ReclaimOptions{Progress: func(s string) { steps = append(steps, s) }})
			t.Logf("wrote %d values; %d member(s): %v; steps %q", written, len(rep.Members), rep.Members, steps)
			if len(rep.Members) != 1 {
				t.Fatalf("report of %d members, want 1: %+v", len(rep.Members), rep)
			}
			m := rep.Members[0]
			if m.Quota != smallQuota || m.After.Size == 0 || m.After.Size > m.Before.Size {
				t.Fatalf("member %v: quota %d, sizes before %+v after %+v", m, m.Quota, m.Before, m.After)
			}
			if tc.liveFull {
				if err == nil || !strings.Contains(err.Error(), "the live data itself fills the quota") {
					t.Fatalf("ReclaimSpace with the live data filling the quota: %v", err)
				}
				if len(rep.Disarmed) != 0 || len(rep.Alarms) != 1 || rep.Alarms[0].Type != storage.AlarmNoSpace {
					t.Fatalf("disarmed %v, still raised %v; want NOSPACE still raised", rep.Disarmed, rep.Alarms)
				}
				// Deletes are the way out: etcd charges them nothing.
				if _, err := cli.Delete(ctx, "/k/00", clientv3.WithPrefix()); err != nil {
					t.Fatalf("delete under NOSPACE: %v", err)
				}
				rep, err = storage.ReclaimSpace(ctx, cli, storage.ReclaimOptions{})
				t.Logf("after deleting: %v", rep.Members)
			}
			if err != nil {
				t.Fatal(err)
			}
			if wantDisarmed := tc.keys != 0; (len(rep.Disarmed) == 1) != wantDisarmed || len(rep.Alarms) != 0 {
				t.Fatalf("disarmed %v, still raised %v", rep.Disarmed, rep.Alarms)
			}
			if after := rep.Members[0].After.Size; tc.keys != 0 && after >= smallQuota/2 {
				t.Errorf("database still %d bytes after reclaiming", after)
			}
			// Writes work again.
			if _, err := cli.Put(ctx, "/k/after", "v"); err != nil {
				t.Fatalf("put after reclaiming: %v", err)
			}
			// The compaction is recorded as kube's compactor records it.
			resp, err := cli.Get(ctx, storage.CompactRevisionKey)
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("%s: %v %v", storage.CompactRevisionKey, resp, err)
			}
			if got := string(resp.Kvs[0].Value); got != strconv.FormatInt(rep.Revision, 10) || resp.Kvs[0].Version != compactVersion+1 && !tc.liveFull {
				t.Fatalf("%s = %q (version %d), want %d (version %d)", storage.CompactRevisionKey, got, resp.Kvs[0].Version, rep.Revision, compactVersion+1)
			}
			if _, err := cli.Get(ctx, "/k/0000", clientv3.WithRev(rep.Revision-1)); err == nil || !strings.Contains(err.Error(), rpctypes.ErrCompacted.Error()) {
				t.Fatalf("read before the compacted revision: %v, want compacted", err)
			}
			if err := monitor.Poll(ctx, cli); err != nil {
				t.Fatal(err)
			}
			if monitor.NoSpace() || monitor.Check() != nil {
				t.Fatalf("after reclaiming: NoSpace %v, Check %v", monitor.NoSpace(), monitor.Check())
			}
		})
	}
}

// keyVersion is the version of key (0 when it does not exist).
func keyVersion(t *testing.T, cli *clientv3.Client, key string) int64 {
	t.Helper()
	resp, err := cli.Get(context.WithoutCancel(t.Context()), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].Version
}

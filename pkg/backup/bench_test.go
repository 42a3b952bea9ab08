package backup_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/customapi/customapi/pkg/backup"
	"github.com/customapi/customapi/pkg/customapitest"
)

// BenchmarkBackupRestore measures Backup and Restore of a 100 MiB etcd
// (200 values of 512 KiB) and reports each one's time and throughput:
//
//	go test ./pkg/backup -run '^$' -bench BackupRestore -benchtime 3x
func BenchmarkBackupRestore(b *testing.B) {
	ctx := b.Context()
	external := customapitest.EmbeddedEtcd(b)
	cli, err := external.NewClient(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	value := string(bytes.Repeat([]byte("0123456789abcdef"), 512<<10/16))
	for i := range 200 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/registry/big/%03d", i), value); err != nil {
			b.Fatal(err)
		}
	}
	dataDir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, "ca.crt"), []byte("ca"), 0o600); err != nil {
		b.Fatal(err)
	}
	var backupTime, restoreTime time.Duration
	var size int64
	for i := 0; b.Loop(); i++ {
		dir := b.TempDir()
		archive := filepath.Join(dir, "b.tar")
		start := time.Now()
		m, err := backup.Backup(ctx, backup.BackupOptions{DataDir: dataDir, Etcd: external, Output: archive})
		if err != nil {
			b.Fatal(err)
		}
		backupTime += time.Since(start)
		size = m.Snapshot.Size
		start = time.Now()
		if _, err := backup.Restore(ctx, backup.RestoreOptions{Archive: archive, DataDir: filepath.Join(dir, "restored")}); err != nil {
			b.Fatal(err)
		}
		restoreTime += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(size)/(1<<20), "snapshot-MiB")
	b.ReportMetric(backupTime.Seconds()/n, "backup-s")
	b.ReportMetric(float64(size)/(1<<20)/(backupTime.Seconds()/n), "backup-MiB/s")
	b.ReportMetric(restoreTime.Seconds()/n, "restore-s")
	b.ReportMetric(float64(size)/(1<<20)/(restoreTime.Seconds()/n), "restore-MiB/s")
}

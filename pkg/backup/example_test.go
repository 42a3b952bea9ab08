package backup_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/backup"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/options"
)

// Example backs up a running server's data dir (its embedded etcd, its
// keys, tokens and the generated encryption key) into one archive, then restores the archive into a new data dir,
// ready for a server: etcd's revision is raised by DefaultRevisionBump
// and marked compacted.
func Example() {
	ctx := context.Background()
	srv, err := customapitest.NewServer(customapitest.Options{Configure: func(o *options.ServerOptions) {
		o.SetEtcd(etcd.ClientConfig{}) // the embedded etcd, whatever the test environment says
		o.Storage.Prefix = options.NewServerOptions().Storage.Prefix
	}}, install.Customs)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "backup-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// Online: the server keeps serving.
	archive := filepath.Join(dir, "backup.tar")
	m, err := backup.Backup(ctx, backup.BackupOptions{DataDir: srv.DataDir, Output: archive})
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range m.Files {
		fmt.Println("file:", f.Name, f.Mode)
	}

	// Offline, into a data dir that does not exist yet.
	restored := filepath.Join(dir, "restored")
	if _, err := backup.Restore(ctx, backup.RestoreOptions{Archive: archive, DataDir: restored}); err != nil {
		log.Fatal(err)
	}
	e, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: datadir.EmbeddedEtcdDir(restored)})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	cli, err := e.ClientConfig().NewClient(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("revision bumped:", resp.Header.Revision == m.Snapshot.Revision+int64(backup.DefaultRevisionBump))

	// Output:
	// file: admin.kubeconfig 0600
	// file: ca.crt 0644
	// file: ca.key 0600
	// file: encryption-config.yaml 0600
	// file: identity 0600
	// file: serving.crt 0644
	// file: serving.key 0600
	// file: super-admin.kubeconfig 0600
	// file: tokens.csv 0600
	// revision bumped: true
}

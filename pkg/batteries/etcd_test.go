package batteries_test

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func clientv3LeaseID(id int64) clientv3.LeaseID { return clientv3.LeaseID(id) }

// mustLease returns the lease attached to key (0 for none).
func mustLease(t *testing.T, c *clientv3.Client, key string) int64 {
	t.Helper()
	resp, err := c.Get(t.Context(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get %s: %v", key, err)
	}
	return resp.Kvs[0].Lease
}

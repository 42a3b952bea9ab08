package bench

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// storedValue returns the etcd value of the sample namespace/name stored
// under prefix (whatever the layout of the keys below the prefix: the key
// that ends in /namespace/name), as the storage layer wrote it: the
// encoded object in the storage media type (JSON and YAML end in a
// newline).
func storedValue(ctx context.Context, cli *clientv3.Client, prefix, namespace, name string) ([]byte, error) {
	suffix := "/" + namespace + "/" + name
	resp, err := cli.Get(ctx, strings.TrimSuffix(prefix, "/")+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), suffix) {
			v, err := cli.Get(ctx, string(kv.Key))
			if err != nil {
				return nil, err
			}
			if len(v.Kvs) == 1 {
				return v.Kvs[0].Value, nil
			}
		}
	}
	return nil, fmt.Errorf("no key under %s ends in %s", prefix, suffix)
}

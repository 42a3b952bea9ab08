package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdTarget writes the samples' JSON bytes to etcd directly, the way the
// etcd3 storage of k8s.io/apiserver does (create-if-absent transactions,
// compare-mod-revision updates, prefix ranges) but with nothing else: the
// physical limit of the machine. With put, creates are plain puts.
type etcdTarget struct {
	cli    *clientv3.Client
	prefix string
	put    bool
}

func (t *etcdTarget) Name() string {
	if t.put {
		return "etcd-put"
	}
	return "etcd"
}

func (t *etcdTarget) key(namespace, name string) string {
	return t.prefix + "/" + namespace + "/" + name
}

func (t *etcdTarget) Create(ctx context.Context, namespace, name string, s *sample) (string, error) {
	key, value := t.key(namespace, name), string(sampleJSON(s))
	if t.put {
		resp, err := t.cli.Put(ctx, key, value)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(resp.Header.Revision, 10), nil
	}
	resp, err := t.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, value)).
		Commit()
	if err != nil {
		return "", err
	}
	if !resp.Succeeded {
		return "", fmt.Errorf("%s exists", key)
	}
	return strconv.FormatInt(resp.Header.Revision, 10), nil
}

func (t *etcdTarget) Get(ctx context.Context, namespace, name string) error {
	resp, err := t.cli.Get(ctx, t.key(namespace, name))
	if err == nil && len(resp.Kvs) == 0 {
		err = fmt.Errorf("%s/%s not found", namespace, name)
	}
	return err
}

func (t *etcdTarget) Update(ctx context.Context, namespace, name string, value int64) (string, error) {
	key := t.key(namespace, name)
	resp, err := t.cli.Get(ctx, key)
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("%s not found", key)
	}
	var s sample
	if err := json.Unmarshal(resp.Kvs[0].Value, &s); err != nil {
		return "", err
	}
	setFirstNumber(&s.Spec, value)
	txn, err := t.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)).
		Then(clientv3.OpPut(key, string(sampleJSON(&s)))).
		Commit()
	if err != nil {
		return "", err
	}
	if !txn.Succeeded {
		return "", errConflict
	}
	return strconv.FormatInt(txn.Header.Revision, 10), nil
}

func (t *etcdTarget) List(ctx context.Context, namespace, rv string, limit int64) (int, error) {
	prefix := t.prefix + "/" + namespace + "/"
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if rv == "0" {
		opts = append(opts, clientv3.WithSerializable())
	}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(limit))
	}
	n, from := 0, prefix
	var rev int64
	for {
		o := opts
		if rev != 0 {
			o = append(o, clientv3.WithRev(rev)) // pages of one snapshot
		}
		resp, err := t.cli.Get(ctx, from, o...)
		if err != nil {
			return n, err
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			var s sample
			if err := json.Unmarshal(kv.Value, &s); err != nil {
				return n, err
			}
		}
		n += len(resp.Kvs)
		if !resp.More || len(resp.Kvs) == 0 {
			return n, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

func (t *etcdTarget) Watch(ctx context.Context, namespace, rv string) (<-chan string, error) {
	rev, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return nil, err
	}
	wc := t.cli.Watch(clientv3.WithRequireLeader(ctx), t.prefix+"/"+namespace+"/", clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithCreatedNotify())
	// Return once etcd has created the watch, as the other targets do.
	if created, ok := <-wc; !ok || created.Err() != nil {
		return nil, fmt.Errorf("etcd watch not created: %v", created.Err())
	}
	out := make(chan string, 1024)
	go func() {
		defer close(out)
		for resp := range wc {
			for _, ev := range resp.Events {
				var s sample
				if err := json.Unmarshal(ev.Kv.Value, &s); err != nil {
					return
				}
				select {
				case out <- strconv.FormatInt(ev.Kv.ModRevision, 10):
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

func (t *etcdTarget) Memory() (int64, string, error) { return 0, "", errNoMemory }

func (t *etcdTarget) Close() error { return nil }

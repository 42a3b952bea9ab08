package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/customapi/customapi/internal/pki"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/etcd"
)

// TestEmbeddedCluster: three embedded members form one cluster as a
// joining server would (added as a learner through a member, started with
// the initial cluster, promoted once in sync); a write through one is read
// through the others; with one member stopped the other two still write;
// the stopped one restarts on its data dir and catches up; a peer whose
// certificate another CA signed is refused.
func TestEmbeddedCluster(t *testing.T) {
	dir := t.TempDir()
	caFile, caKey := peerCA(t, dir)
	urls := map[string]string{}
	for i, port := range customapitest.FreePorts(t, 4) {
		urls[string(rune('a'+i))] = fmt.Sprintf("https://127.0.0.1:%d", port)
	}
	cfg := func(name, initial string) etcd.EmbeddedConfig {
		return etcd.EmbeddedConfig{
			DataDir: filepath.Join(dir, name), UnsafeNoFsync: true,
			Peer: &etcd.PeerConfig{Name: name, URL: urls[name], CAFile: caFile, CAKeyFile: caKey, InitialCluster: initial},
		}
	}
	members := map[string]*etcd.Embedded{}
	start := func(name, initial string) {
		t.Helper()
		e, err := etcd.StartEmbedded(t.Context(), cfg(name, initial))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		members[name] = e
		t.Cleanup(e.Close)
	}
	client := func(name string) *clientv3.Client {
		t.Helper()
		cli, err := members[name].ClientConfig().NewClient(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cli.Close() })
		return cli
	}
	start("a", "")
	a := client("a")
	// The members' promotion loop, as a server runs it: a joining member's
	// start returns once it is promoted.
	promoter, stopPromoter := context.WithCancel(t.Context())
	defer stopPromoter()
	go func() {
		for promoter.Err() == nil {
			_, _ = etcd.PromoteLearners(promoter, a)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	initial := "a=" + urls["a"]
	for _, name := range []string{"b", "c"} {
		addLearner(t, a, urls[name])
		initial += "," + name + "=" + urls[name]
		start(name, initial)
	}

	list, err := a.MemberList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Members) != 3 {
		t.Fatalf("%d members, want 3", len(list.Members))
	}
	for _, m := range list.Members {
		if m.IsLearner {
			t.Errorf("member %s is still a learner", m.Name)
		}
	}
	if _, err := a.Put(t.Context(), "/k", "1"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b", "c"} {
		resp, err := client(name).Get(t.Context(), "/k")
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "1" {
			t.Fatalf("read through %s: %v %v", name, err, resp)
		}
	}

	// One member down: the two others keep a quorum.
	members["c"].Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := a.Put(ctx, "/k", "2"); err != nil {
		t.Fatalf("write with c down: %v", err)
	}
	start("c", "") // its data dir records the cluster
	c := client("c")
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.Get(t.Context(), "/k")
		if err == nil && len(resp.Kvs) == 1 && string(resp.Kvs[0].Value) == "2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("c did not catch up: %v %v", err, resp)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A member whose peer certificate another CA signed is not let in.
	other, err := pki.NewCA(pki.Spec{CommonName: "other-ca", Validity: time.Hour, Backdate: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	otherCA, otherKey := filepath.Join(dir, "other.crt"), filepath.Join(dir, "other.key")
	if err := other.WriteFiles(otherCA, otherKey); err != nil {
		t.Fatal(err)
	}
	addLearner(t, a, urls["d"])
	stopPromoter()
	d := cfg("d", initial+",d="+urls["d"])
	d.Peer.CAFile, d.Peer.CAKeyFile, d.ReadyTimeout = otherCA, otherKey, 3*time.Second
	short, cancelShort := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancelShort()
	if e, err := etcd.StartEmbedded(short, d); err == nil {
		e.Close()
		t.Fatal("a member of another CA joined")
	} else if !strings.Contains(err.Error(), "not ready") && !strings.Contains(err.Error(), "failed") {
		t.Logf("refused: %v", err)
	}
}

// addLearner adds a learner at peerURL through cli, retrying while etcd's
// strict reconfiguration check finds the cluster unhealthy (a member
// connected less than its health interval, 5 s, ago), at most 30 s.
func addLearner(t *testing.T, cli *clientv3.Client, peerURL string) *clientv3.MemberAddResponse {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := cli.MemberAddAsLearner(t.Context(), []string{peerURL})
		if err == nil {
			return resp
		}
		if !errors.Is(err, rpctypes.ErrUnhealthy) || time.Now().After(deadline) {
			t.Fatalf("add %s: %v", peerURL, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestEmbeddedMemberRemoved: a running member removed from its cluster
// (through another member) is stopped by etcd, and Err says so
// (ErrMemberRemoved) instead of staying silent; started again on its data
// dir, it fails at once with ErrMemberRemoved.
func TestEmbeddedMemberRemoved(t *testing.T) {
	dir := t.TempDir()
	caFile, caKey := peerCA(t, dir)
	ports := customapitest.FreePorts(t, 2)
	urlA, urlB := fmt.Sprintf("https://127.0.0.1:%d", ports[0]), fmt.Sprintf("https://127.0.0.1:%d", ports[1])
	cfg := func(name, url, initial string) etcd.EmbeddedConfig {
		return etcd.EmbeddedConfig{
			DataDir: filepath.Join(dir, name), UnsafeNoFsync: true, ReadyTimeout: 20 * time.Second,
			Peer: &etcd.PeerConfig{Name: name, URL: url, CAFile: caFile, CAKeyFile: caKey, InitialCluster: initial},
		}
	}
	a, err := etcd.StartEmbedded(t.Context(), cfg("a", urlA, ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	cli, err := a.ClientConfig().NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	added := addLearner(t, cli, urlB)
	started := make(chan error, 1)
	var b *etcd.Embedded
	go func() {
		var err error
		b, err = etcd.StartEmbedded(t.Context(), cfg("b", urlB, "a="+urlA+",b="+urlB))
		started <- err
	}()
	// b's start returns once it is promoted.
	for promoted := false; !promoted; {
		select {
		case err := <-started:
			t.Fatalf("b: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		names, _ := etcd.PromoteLearners(t.Context(), cli)
		promoted = len(names) == 1
	}
	if err := <-started; err != nil {
		t.Fatalf("b: %v", err)
	}
	t.Cleanup(b.Close)

	// etcd's strict reconfiguration check counts b once it has been
	// connected for 5 s.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cli.MemberRemove(t.Context(), added.Member.ID)
		if err == nil {
			break
		}
		if !errors.Is(err, rpctypes.ErrUnhealthy) || time.Now().After(deadline) {
			t.Fatalf("remove b: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	select {
	case err := <-b.Err():
		if !errors.Is(err, etcd.ErrMemberRemoved) {
			t.Fatalf("b's Err after its removal: %v, want ErrMemberRemoved", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("b reported nothing 20 s after its removal")
	}
	b.Close()

	start := time.Now()
	if e, err := etcd.StartEmbedded(t.Context(), cfg("b", urlB, "")); err == nil {
		e.Close()
		t.Fatal("a removed member started again")
	} else if !errors.Is(err, etcd.ErrMemberRemoved) {
		t.Fatalf("a removed member started again: %v, want ErrMemberRemoved", err)
	}
	t.Logf("the removed member's start failed after %s", time.Since(start).Round(time.Millisecond))
}

// peerCA writes a peer CA into dir and returns its certificate and key
// files.
func peerCA(t *testing.T, dir string) (caFile, caKey string) {
	t.Helper()
	ca, err := pki.NewCA(pki.Spec{CommonName: "test-peer-ca", Validity: time.Hour, Backdate: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	caFile, caKey = filepath.Join(dir, "peer-ca.crt"), filepath.Join(dir, "peer-ca.key")
	if err := ca.WriteFiles(caFile, caKey); err != nil {
		t.Fatal(err)
	}
	return caFile, caKey
}

package options

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/customapi/customapi/pkg/cluster"
	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/etcd"
)

// DefaultPeerPort is the port of the etcd peer URL when --etcd-peer-url is
// not given: etcd's own.
const DefaultPeerPort = 2380

// joinTimeout bounds a join request (the member add waits up to 30 s for
// a healthy cluster).
const joinTimeout = 2 * time.Minute

// ClusterOptions make the server one of a highly available cluster of
// servers whose embedded etcds are the members of one etcd cluster, as
// k3s' servers are (docs/serving.md, "A highly available cluster"): the
// first starts it (--cluster-init), the others join through a running one
// (--server, --token). A data dir that is a member remembers it
// (datadir.ClusterFile): its restarts need none of these flags.
type ClusterOptions struct {
	// Init makes this server the first of a cluster (--cluster-init): its
	// member listens for peers, and the data dir gets the cluster's etcd
	// peer CA and join token (datadir.JoinTokenFile). A data dir of a
	// single server becomes the first of a cluster with its data.
	Init bool
	// Server is a running server of the cluster to join (--server
	// https://host:port), with Token or TokenFile. Only for a data dir
	// without etcd data of its own.
	Server string
	// Token is the cluster's join token (--token: the content of the
	// first server's datadir.JoinTokenFile); TokenFile is a file holding
	// it (--token-file).
	Token, TokenFile string
	// PeerURL is where the other members reach this server's etcd member
	// (--etcd-peer-url https://host:port); default
	// https://<AdvertiseAddress>:DefaultPeerPort, or the bind address's
	// when it is a specific address.
	PeerURL string
	// AdvertiseAddress is the address the other servers and clients reach
	// this one at (--advertise-address, kube-apiserver's flag): the
	// default host of PeerURL, and a name of the serving certificate.
	AdvertiseAddress net.IP
}

// AddFlags binds the options to k3s' and kube-apiserver's flag names.
func (o *ClusterOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Init, "cluster-init", o.Init, "Start a highly available cluster of servers (their embedded etcds one etcd cluster) with this one as its first member; others join with --server and --token. Writes the join token to <data-dir>/"+datadir.JoinTokenFile+".")
	fs.StringVar(&o.Server, "server", o.Server, "Join the cluster of the server at this URL (https://host:port), with --token or --token-file.")
	fs.StringVar(&o.Token, "token", o.Token, "The cluster's join token (the first server's <data-dir>/"+datadir.JoinTokenFile+"), with --server.")
	fs.StringVar(&o.TokenFile, "token-file", o.TokenFile, "A file holding the cluster's join token, with --server.")
	fs.StringVar(&o.PeerURL, "etcd-peer-url", o.PeerURL, "Where the other servers reach this server's embedded etcd member (https://host:port), with --cluster-init or --server; default https://<advertise-address>:2380.")
	fs.IPVar(&o.AdvertiseAddress, "advertise-address", o.AdvertiseAddress, "The IP address other servers and clients reach this server at: the default host of --etcd-peer-url, and a name of the serving certificate.")
}

// Validate returns every problem, naming the flags.
func (o *ClusterOptions) Validate() []error {
	var errs []error
	if o.Init && o.Server != "" {
		errs = append(errs, errors.New("--cluster-init and --server exclude each other: the first server starts the cluster, the others join it"))
	}
	if o.Server != "" {
		if u, err := url.Parse(o.Server); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--server %q is not https://host:port", o.Server))
		}
		if _, err := o.token(); err != nil {
			errs = append(errs, err)
		}
	} else if o.Token != "" || o.TokenFile != "" {
		errs = append(errs, errors.New("--token and --token-file go with --server"))
	}
	if o.PeerURL != "" {
		if u, err := url.Parse(o.PeerURL); err != nil || u.Scheme != "https" || u.Hostname() == "" || u.Port() == "" {
			errs = append(errs, fmt.Errorf("--etcd-peer-url %q is not https://host:port", o.PeerURL))
		}
	}
	return errs
}

// token returns the join token of Token or TokenFile.
func (o *ClusterOptions) token() (datadir.JoinToken, error) {
	text := o.Token
	switch {
	case o.Token != "" && o.TokenFile != "":
		return datadir.JoinToken{}, errors.New("--token and --token-file exclude each other")
	case o.TokenFile != "":
		data, err := os.ReadFile(o.TokenFile)
		if err != nil {
			return datadir.JoinToken{}, fmt.Errorf("--token-file: %w", err)
		}
		text = string(data)
	case o.Token == "":
		return datadir.JoinToken{}, errors.New("--server needs --token or --token-file")
	}
	t, err := datadir.ParseJoinToken(text)
	if err != nil {
		return datadir.JoinToken{}, fmt.Errorf("--token: %w", err)
	}
	return t, nil
}

// peerURL returns PeerURL or its default (see PeerURL).
func (o *ClusterOptions) peerURL(bind net.IP) (string, error) {
	if o.PeerURL != "" {
		return o.PeerURL, nil
	}
	host := o.AdvertiseAddress
	if host == nil && bind != nil && !bind.IsUnspecified() {
		host = bind
	}
	if host == nil {
		return "", errors.New("--cluster-init and --server need --etcd-peer-url or --advertise-address (the address the other servers reach this one at)")
	}
	return "https://" + net.JoinHostPort(host.String(), strconv.Itoa(DefaultPeerPort)), nil
}

// prepare returns the server's membership in dir (nil for a single
// server), holding the data dir's lock: the recorded one of a member's
// data dir (PeerURL, when given, replaces its peer URL); with Server, the
// join (cluster.Join: the shared files written into dir, the member
// added); with Init, a new record. identity names a new member. A data
// dir whose member was removed (datadir.ClusterRecord.Removed) is refused
// while it holds its etcd data, with what to do; without it, Server joins
// again (and Init starts a new cluster).
func (o *ClusterOptions) prepare(dir, identity string, bind net.IP) (*datadir.ClusterRecord, error) {
	rec, err := datadir.ReadClusterRecord(dir)
	if err != nil {
		return nil, err
	}
	hasData := etcdHasData(dir)
	if rec != nil && rec.Removed {
		// Left the cluster (or removed from it while it ran): its etcd
		// data is of a member the cluster no longer has.
		if hasData {
			return nil, fmt.Errorf("data dir %s was the cluster member %s, which left the cluster (its etcd member was removed: cluster leave, or cluster remove): its etcd data cannot serve again. To join the cluster again as a new member, remove %s (or the whole data dir) and start with --server https://<a server of the cluster>:<port> and --token-file <that server's data dir>/%s",
				dir, rec.Name, datadir.EmbeddedEtcdDir(dir), datadir.JoinTokenFile)
		}
		if o.Server == "" && !o.Init {
			return nil, fmt.Errorf("data dir %s was the cluster member %s, which left the cluster: to join it again as a new member, start with --server https://<a server of the cluster>:<port> and --token-file <that server's data dir>/%s",
				dir, rec.Name, datadir.JoinTokenFile)
		}
		rec = nil // joins (or starts) a cluster anew, below
	}
	switch {
	case rec != nil:
		if o.PeerURL != "" && o.PeerURL != rec.PeerURL {
			rec.PeerURL = o.PeerURL
			if err := datadir.WriteClusterRecord(dir, *rec); err != nil {
				return nil, err
			}
		}
		return rec, nil
	case o.Server == "" && !o.Init:
		return nil, nil
	}
	peerURL, err := o.peerURL(bind)
	if err != nil {
		return nil, err
	}
	if o.Init {
		name := identity
		if hasData {
			name = etcd.EmbeddedMemberName // the member the data dir holds
		}
		rec = &datadir.ClusterRecord{Name: name, PeerURL: peerURL}
	} else {
		if hasData {
			return nil, fmt.Errorf("--server: data dir %s holds etcd data of its own (%s): a server joins a cluster with an empty data dir; start it without --server, or move the data dir away", dir, datadir.EmbeddedEtcdDir(dir))
		}
		token, _ := o.token() // Validate checked it
		ctx, cancel := context.WithTimeout(context.Background(), joinTimeout)
		defer cancel()
		resp, err := cluster.Join(ctx, o.Server, token, cluster.JoinRequest{Name: identity, PeerURL: peerURL})
		if err != nil {
			return nil, err
		}
		if err := resp.WriteFiles(dir); err != nil {
			return nil, err
		}
		rec = &datadir.ClusterRecord{Name: identity, PeerURL: peerURL, InitialCluster: resp.InitialCluster}
	}
	if err := datadir.WriteClusterRecord(dir, *rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// peerConfig returns the etcd member's peer configuration of rec in dir.
func peerConfig(dir string, rec *datadir.ClusterRecord) *etcd.PeerConfig {
	p := &etcd.PeerConfig{
		Name: rec.Name, URL: rec.PeerURL,
		CAFile: filepath.Join(dir, datadir.PeerCACertFile), CAKeyFile: filepath.Join(dir, datadir.PeerCAKeyFile),
	}
	if !etcdHasData(dir) {
		p.InitialCluster = rec.InitialCluster
	}
	return p
}

// etcdHasData says whether dir's embedded etcd holds a member's data.
func etcdHasData(dir string) bool {
	_, err := os.Stat(filepath.Join(datadir.EmbeddedEtcdDir(dir), "member"))
	return err == nil
}

// hostOf returns the host of a URL, "" when it has none.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Hostname()
}

package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// DefaultReadyTimeout bounds how long StartEmbedded waits for the embedded
// server to become ready.
const DefaultReadyTimeout = 60 * time.Second

// DefaultQuotaBackendBytes is the embedded etcd's backend quota (etcd's
// --quota-backend-bytes): 8 GiB, the largest etcd recommends, instead of
// etcd's own 2 GiB default. A million objects of 1.4 KB fill about 2 GB of
// etcd's database; the rest is room for the revisions written between two
// compactions and for the pages freed but not yet returned by a
// defragmentation. When the database reaches the quota etcd raises its
// NOSPACE alarm and refuses every write until the space is reclaimed
// (`customapi etcd defrag`).
const DefaultQuotaBackendBytes int64 = 8 << 30

// DefaultBootstrapDefragThresholdBytes is how much space a defragmentation
// at start must free for the embedded etcd to run it (etcd's
// --bootstrap-defrag-threshold-megabytes) with the default quota: 512 MiB,
// a sixteenth of DefaultQuotaBackendBytes. With another quota the default
// is a sixteenth of that quota (see
// EmbeddedConfig.BootstrapDefragThresholdBytes), so that a small quota is
// defragmented at start too.
const DefaultBootstrapDefragThresholdBytes int64 = DefaultQuotaBackendBytes / bootstrapDefragQuotaFraction

// bootstrapDefragQuotaFraction: the default threshold of a defragmentation
// at start is the quota divided by this.
const bootstrapDefragQuotaFraction = 16

// DefaultMaxRequestBytes is etcd's own limit on one request (1.5 MiB), which
// also bounds the size of one stored object.
const DefaultMaxRequestBytes = embed.DefaultMaxRequestBytes

// The identity of the single member of an embedded etcd cluster. A data
// dir restored from a snapshot for an embedded etcd must name the same
// member (backup.RestoreSnapshot does).
const (
	// EmbeddedMemberName is the member's name.
	EmbeddedMemberName = "customapi"
	// EmbeddedPeerURL is the member's advertised peer URL: port 0 on
	// loopback, where nothing listens (a single member has no peers).
	EmbeddedPeerURL = "http://127.0.0.1:0"
	// EmbeddedClusterToken is the initial cluster token (etcd's default).
	EmbeddedClusterToken = "etcd-cluster"
)

// The raft timing of the embedded member (etcd's --heartbeat-interval and
// --election-timeout, in milliseconds; etcd's defaults are 100 and 1000).
// A single member has no peers to send heartbeats to or to lose, so the
// only effect of the election timeout is how long a start waits for the
// member to elect itself: etcd fast-forwards all but one tick of it and
// raft then waits a random 1 to ElectionMs/HeartbeatMs ticks, 20-100 ms
// here against 0.1-1 s with the defaults. The election timeout is the
// shortest etcd accepts, five heartbeats; the cost is the ticks of an
// idle server, five times as many as with the defaults (docs/performance.md:
// a 10 ms heartbeat measured faster still, for a larger idle cost). What
// follows from the shorter timeout: etcd's own request timeout (5 s plus
// twice the election timeout) is 5.2 s instead of 7 s, and the shortest
// lease etcd grants is 1 s instead of 2 s; an external etcd keeps its own
// settings.
const (
	EmbeddedHeartbeatMs = 20
	EmbeddedElectionMs  = 100
)

// EmbeddedConfig configures an embedded etcd server. The zero value except
// DataDir is a valid configuration.
type EmbeddedConfig struct {
	// DataDir is where etcd keeps its write-ahead log and database. It is
	// created with mode 0700 if it does not exist. Required.
	DataDir string
	// ClientPort is the loopback TCP port clients connect to (HTTPS, client
	// certificate required); 0 picks a free one.
	ClientPort int
	// PeerPort is ignored: the single member has no peer listener.
	//
	// Deprecated: kept so that existing callers compile.
	PeerPort int
	// ReadyTimeout bounds the wait for readiness; 0 means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// MaxRequestBytes is the largest request etcd accepts, in bytes; 0 means
	// DefaultMaxRequestBytes (1.5 MiB).
	MaxRequestBytes uint
	// UnsafeNoFsync disables fsync. Only for tests: a crash loses data.
	UnsafeNoFsync bool
	// QuotaBackendBytes is the largest the database file may grow, in
	// bytes (etcd's --quota-backend-bytes): a write that would pass it
	// raises etcd's NOSPACE alarm, and from then on etcd refuses every
	// write that adds data (reads, watches, deletes and compactions go
	// on) until the space is reclaimed and the alarm disarmed (the alarm
	// is kept in the database: it outlives a restart). 0 means
	// DefaultQuotaBackendBytes; a negative value means no quota (etcd's
	// meaning: the database grows until the disk is full).
	QuotaBackendBytes int64
	// SnapshotCount is how many applied entries etcd keeps in its raft
	// log (in memory, and in the write-ahead log replayed at start)
	// before it takes a snapshot (etcd's --snapshot-count); 0 means
	// etcd's default, 10,000. A bulk loader whose entries are large
	// transactions sets it low, so that a later start does not read them
	// all back into memory.
	SnapshotCount uint64
	// BootstrapDefragThresholdBytes makes etcd defragment its database
	// when it starts, before it serves, if that frees at least this many
	// bytes (etcd's --bootstrap-defrag-threshold-megabytes, rounded up
	// to MiB): the moment a defragmentation, which blocks every request
	// while it copies the database, stalls nobody. 0 means a sixteenth
	// of the quota (EffectiveQuotaBackendBytes), at least 1 MiB:
	// DefaultBootstrapDefragThresholdBytes (512 MiB) with the default
	// quota; a negative value never defragments at start.
	BootstrapDefragThresholdBytes int64
	// LogLevel is etcd's log level: debug, info, warn or error. "" means
	// error: etcd's warnings about its single-member, loopback-only setup
	// ("Running http and grpc server on single port", "simple token is not
	// cryptographically signed") are expected here.
	LogLevel string
	// Peer, when set, makes the member able to be one of a cluster of
	// several: it listens for its peers (see PeerConfig). Nil: a single
	// member without a peer listener.
	Peer *PeerConfig
}

// PeerConfig makes an embedded etcd a member of a cluster of embedded
// etcds (EmbeddedConfig.Peer): it listens for its peers on URL, over TLS
// with a certificate of the cluster's peer CA (mutual: a peer must present
// one too), and talks raft with them at etcd's own default timing
// (heartbeat 100 ms, election 1 s), which tolerates a network. Its client
// listener stays on loopback: each server uses its own member.
type PeerConfig struct {
	// Name is the member's name, unique in the cluster; "" means
	// EmbeddedMemberName. A member keeps the name it was added with.
	Name string
	// URL is where the member's peers reach it, https://host:port (etcd's
	// --initial-advertise-peer-urls); the member listens on that address
	// (on every interface when host is a DNS name). Required.
	URL string
	// CAFile and CAKeyFile are the cluster's peer CA (PEM certificate and
	// ECDSA key), shared by every member: StartEmbedded issues the member's
	// peer certificate for URL's host from it (<DataDir>/tls/peer.crt,
	// renewed when it is not valid for that host and CA, or expires within
	// 30 days), and the member accepts only peers whose certificate it
	// signed. Required.
	CAFile, CAKeyFile string
	// InitialCluster joins an existing cluster: its members as
	// "name=url,..." with this member's own entry, after the member was
	// added to it (clientv3.Cluster.MemberAddAsLearner); etcd's
	// --initial-cluster with --initial-cluster-state=existing. Empty: a new
	// cluster of this member alone. Ignored once the data dir holds the
	// member's data: a restart rejoins the cluster it records.
	InitialCluster string
}

// peerRaft is the raft timing of a member with peers (etcd's defaults, in
// milliseconds): they tolerate a network's latency and a busy peer, where
// a single member's short timing (EmbeddedHeartbeatMs) would call
// elections.
const (
	peerHeartbeatMs = 100
	peerElectionMs  = 1000
)

// EffectiveQuotaBackendBytes is the quota the embedded etcd runs with:
// QuotaBackendBytes, or DefaultQuotaBackendBytes for 0.
func (c EmbeddedConfig) EffectiveQuotaBackendBytes() int64 {
	if c.QuotaBackendBytes == 0 {
		return DefaultQuotaBackendBytes
	}
	return c.QuotaBackendBytes
}

// EffectiveBootstrapDefragThresholdBytes is the threshold of a
// defragmentation at start (see BootstrapDefragThresholdBytes): the
// configured one, a sixteenth of the effective quota (at least 1 MiB) for
// 0, or 0 (never) for a negative value.
func (c EmbeddedConfig) EffectiveBootstrapDefragThresholdBytes() int64 {
	switch t := c.BootstrapDefragThresholdBytes; {
	case t < 0:
		return 0
	case t > 0:
		return t
	}
	q := c.EffectiveQuotaBackendBytes()
	if q <= 0 { // no quota (etcd: negative): the default quota's threshold
		return DefaultBootstrapDefragThresholdBytes
	}
	return max(q/bootstrapDefragQuotaFraction, 1<<20)
}

// Embedded is a running embedded etcd server. Create it with StartEmbedded
// and stop it with Close.
type Embedded struct {
	etcd      *embed.Etcd
	dataDir   string // absolute EmbeddedConfig.DataDir
	endpoints []string
	tls       tlsFiles
	closeOnce sync.Once
	// errc is Err's channel, fed by watch; closing is closed when Close
	// begins, watched once watch has returned (errc closed).
	errc     chan error
	closing  chan struct{}
	watching chan struct{}
}

// ErrMemberRemoved is the error (wrapped) of Err and StartEmbedded when the
// member was removed from its cluster (clientv3.Cluster.MemberRemove
// through any member, also itself): etcd then stops the member for good
// ("the member has been permanently removed from the cluster"), either as
// it applies its own removal or when a peer answers it that it is no
// longer a member (a member removed while it was down, started again on
// its old data dir). Its data dir cannot serve again: a member joins again
// with an empty one.
var ErrMemberRemoved = errors.New("the member has been permanently removed from the cluster")

// newEmbedded returns the Embedded of the ready server e and starts
// watching it (watch).
func newEmbedded(e *embed.Etcd, dataDir string, endpoints []string, tls tlsFiles) *Embedded {
	em := &Embedded{etcd: e, dataDir: dataDir, endpoints: endpoints, tls: tls,
		errc: make(chan error, 1), closing: make(chan struct{}), watching: make(chan struct{})}
	go em.watch()
	return em
}

// watch sends Err's one value: the first error of etcd's listeners
// (embed.Etcd.Err), or ErrMemberRemoved when the etcd server stopped
// without Close (etcd stops a member on its own only when it was removed
// from the cluster: its server loop ends on nothing else). It closes the
// channel once Close has begun.
func (e *Embedded) watch() {
	defer close(e.watching)
	defer close(e.errc)
	var err error
	select {
	case <-e.closing:
		return
	case lerr, ok := <-e.etcd.Err():
		if !ok {
			return // closed: Close ran
		}
		err = lerr
		if err == nil {
			err = errors.New("etcd: a listener stopped serving")
		}
	case <-e.etcd.Server.StoppingNotify():
	}
	select {
	case <-e.closing: // Close stopped it
		return
	default:
	}
	if stopping(e.etcd) { // on its own: removed
		err = fmt.Errorf("etcd: member %s (%s) stopped: %w", e.etcd.Config().Name, e.etcd.Server.MemberID(), ErrMemberRemoved)
	}
	e.errc <- err
	<-e.closing
}

// stopping says whether e's server is stopping or stopped: before Close,
// because its member was removed (see ErrMemberRemoved).
func stopping(e *embed.Etcd) bool {
	select {
	case <-e.Server.StoppingNotify():
		return true
	default:
		return false
	}
}

// StartEmbedded starts a single-member etcd server and returns once it serves
// requests. Its only listener is the client URL https://127.0.0.1:<port>,
// which requires a client certificate signed by the CA in
// <DataDir>/tls (see TLSDirName; generated on first start, reused after):
// a local process without read access to the data dir can neither read nor
// write. There is no peer listener. Once ready it records the client URL in
// <DataDir>/endpoints (EndpointsFileName; RunningEmbedded reads it), which
// Close removes. It returns an error if the
// configuration is invalid, the port cannot be bound, the data directory or
// certificates cannot be used, or the server is not ready within
// cfg.ReadyTimeout or before ctx ends; in each case nothing is left running.
// etcd's own server metrics are served by k8s.io/component-base's registry
// from then on (RegisterServerMetrics).
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("etcd: EmbeddedConfig.DataDir is required")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("etcd: create data dir: %w", err)
	}
	RegisterServerMetrics()
	tlsFiles, err := ensureTLS(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if cfg.Peer != nil {
		if tlsFiles, err = ensurePeerTLS(tlsFiles, *cfg.Peer); err != nil {
			return nil, err
		}
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	// A file left by a killed process names a port nobody answers on.
	if err := removeEndpoints(dataDir); err != nil {
		return nil, err
	}
	readyTimeout := cfg.ReadyTimeout
	if readyTimeout == 0 {
		readyTimeout = DefaultReadyTimeout
	}

	// Ports picked here may be taken by someone else before etcd binds them;
	// retry a few times with new ones in that unlikely case.
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		e, err := startOnce(cfg, tlsFiles)
		if err != nil {
			lastErr = err
			if cfg.ClientPort == 0 && isAddrInUse(err) {
				continue
			}
			return nil, err
		}
		select {
		case <-e.Server.ReadyNotify():
		case err := <-e.Err():
			// Only a removed member stops on its own (see
			// ErrMemberRemoved): one started on the data dir of a member
			// removed while it was down, told so by its peers. Its
			// client listener then fails ("server is stopping").
			removed := stopping(e)
			e.Close()
			if removed {
				return nil, fmt.Errorf("etcd: member %s stopped before it was ready: %w", e.Config().Name, ErrMemberRemoved)
			}
			return nil, fmt.Errorf("etcd: server failed before ready: %w", err)
		case <-e.Server.StoppingNotify():
			e.Close()
			return nil, fmt.Errorf("etcd: member %s stopped before it was ready: %w", e.Config().Name, ErrMemberRemoved)
		case <-time.After(readyTimeout):
			e.Close()
			return nil, fmt.Errorf("etcd: server not ready after %s", readyTimeout)
		case <-ctx.Done():
			e.Close()
			return nil, fmt.Errorf("etcd: waiting for readiness: %w", ctx.Err())
		}
		if cfg.Peer != nil {
			if err := waitPromoted(ctx, e); err != nil {
				e.Close()
				return nil, err
			}
			if err := advertisePeerURL(ctx, e, cfg.Peer.URL); err != nil {
				e.Close()
				return nil, err
			}
		}
		endpoints := make([]string, 0, len(e.Clients))
		for _, l := range e.Clients {
			endpoints = append(endpoints, "https://"+l.Addr().String())
		}
		if err := writeEndpoints(dataDir, endpoints); err != nil {
			e.Close()
			return nil, err
		}
		return newEmbedded(e, dataDir, endpoints, tlsFiles), nil
	}
	return nil, fmt.Errorf("etcd: no free ports after retries: %w", lastErr)
}

func startOnce(cfg EmbeddedConfig, certs tlsFiles) (*embed.Etcd, error) {
	ports, err := freePorts(cfg.ClientPort)
	if err != nil {
		return nil, err
	}
	ec := embed.NewConfig()
	ec.Name = EmbeddedMemberName
	ec.InitialClusterToken = EmbeddedClusterToken
	ec.Dir = cfg.DataDir
	clientURL := url.URL{Scheme: "https", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.AdvertiseClientUrls = []url.URL{clientURL}
	ec.ClientTLSInfo.CertFile = certs.serverCert
	ec.ClientTLSInfo.KeyFile = certs.serverKey
	ec.ClientTLSInfo.TrustedCAFile = certs.ca
	ec.ClientTLSInfo.ClientCertAuth = true
	// etcd's HTTP/JSON gateway dials the gRPC server in-process and must
	// then present a client certificate too.
	ec.ClientTLSInfo.ClientCertFile = certs.clientCert
	ec.ClientTLSInfo.ClientKeyFile = certs.clientKey
	if cfg.Peer != nil {
		if err := applyPeer(ec, *cfg.Peer, certs); err != nil {
			return nil, err
		}
	} else {
		// A single member never talks to peers, so it listens for none.
		// The cluster still needs an advertised peer URL to name the
		// member: port 0 on loopback, where nothing can listen. (Data
		// dirs of older versions keep the peer URL they were created
		// with; it is not dialed either.)
		ec.ListenPeerUrls = nil
		peerURL, err := url.Parse(EmbeddedPeerURL)
		if err != nil {
			return nil, fmt.Errorf("etcd: peer URL: %w", err)
		}
		ec.AdvertisePeerUrls = []url.URL{*peerURL}
		ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
		// A restart with an existing data dir rejoins its own cluster
		// whatever the advertised URLs say.
		ec.StrictReconfigCheck = false
		ec.TickMs = EmbeddedHeartbeatMs
		ec.ElectionMs = EmbeddedElectionMs
	}
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	if cfg.MaxRequestBytes != 0 {
		ec.MaxRequestBytes = cfg.MaxRequestBytes
	}
	if cfg.SnapshotCount != 0 {
		ec.SnapshotCount = cfg.SnapshotCount
	}
	ec.QuotaBackendBytes = cfg.EffectiveQuotaBackendBytes()
	if threshold := cfg.EffectiveBootstrapDefragThresholdBytes(); threshold > 0 {
		ec.BootstrapDefragThresholdMegabytes = uint((threshold + 1<<20 - 1) >> 20)
	}
	logger, err := newLogger(cfg.LogLevel)
	if err != nil {
		return nil, err
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)
	if err := ec.Validate(); err != nil {
		return nil, fmt.Errorf("etcd: invalid config: %w", err)
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("etcd: start: %w", err)
	}
	return e, nil
}

// waitPromoted returns once the member is a voting member: at once for
// one that is, else when a member of its cluster promotes it
// (PromoteLearners), which it does once the learner has caught up with the
// leader's log, however long that takes. Errors: ctx's, or the server's
// failure.
func waitPromoted(ctx context.Context, e *embed.Etcd) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for e.Server.IsLearner() {
		select {
		case <-t.C:
		case err := <-e.Err():
			if stopping(e) { // removed before it was promoted
				return fmt.Errorf("etcd: member %s stopped while a learner: %w", e.Config().Name, ErrMemberRemoved)
			}
			return fmt.Errorf("etcd: failed while a learner: %w", err)
		case <-e.Server.StoppingNotify(): // removed before it was promoted
			return fmt.Errorf("etcd: member %s stopped while a learner: %w", e.Config().Name, ErrMemberRemoved)
		case <-ctx.Done():
			return fmt.Errorf("etcd: waiting to be promoted from learner: %w", ctx.Err())
		}
	}
	return nil
}

// advertisePeerURL makes the member's peer URL in the cluster's
// membership peerURL when it is another (a single member's data dir
// becoming the first of a cluster, or a member whose address changed), as
// etcd's `member update` does; the cluster must have quorum for it.
func advertisePeerURL(ctx context.Context, e *embed.Etcd, peerURL string) error {
	id := e.Server.MemberID()
	m := e.Server.Cluster().Member(id)
	if m == nil || slices.Equal(m.PeerURLs, []string{peerURL}) {
		return nil
	}
	if _, err := e.Server.UpdateMember(ctx, membership.Member{ID: id, RaftAttributes: membership.RaftAttributes{PeerURLs: []string{peerURL}}}); err != nil {
		return fmt.Errorf("etcd: advertise the peer URL %s: %w", peerURL, err)
	}
	return nil
}

// applyPeer makes ec a member with peers (see PeerConfig): its name, the
// peer listener with mutual TLS from the cluster's peer CA, the initial
// cluster, etcd's default raft timing, and etcd's strict reconfiguration
// check (a membership change that would lose quorum is refused).
func applyPeer(ec *embed.Config, p PeerConfig, certs tlsFiles) error {
	if p.Name != "" {
		ec.Name = p.Name
	}
	u, err := url.Parse(p.URL)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.Port() == "" {
		return fmt.Errorf("etcd: peer URL %q is not https://host:port", p.URL)
	}
	listen := *u
	if net.ParseIP(u.Hostname()) == nil {
		listen.Host = net.JoinHostPort("0.0.0.0", u.Port())
	}
	ec.ListenPeerUrls = []url.URL{listen}
	ec.AdvertisePeerUrls = []url.URL{*u}
	ec.PeerTLSInfo.CertFile = certs.peerCert
	ec.PeerTLSInfo.KeyFile = certs.peerKey
	ec.PeerTLSInfo.TrustedCAFile = p.CAFile
	ec.PeerTLSInfo.ClientCertAuth = true
	if p.InitialCluster != "" {
		ec.InitialCluster = p.InitialCluster
		ec.ClusterState = embed.ClusterStateFlagExisting
	} else {
		ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	}
	ec.StrictReconfigCheck = true
	ec.TickMs = peerHeartbeatMs
	ec.ElectionMs = peerElectionMs
	return nil
}

// Endpoints returns the client URLs of the running server, for example
// ["https://127.0.0.1:40123"]. They need the TLS files of ClientConfig.
func (e *Embedded) Endpoints() []string { return append([]string(nil), e.endpoints...) }

// ClientConfig returns everything clients need to reach this server: the
// endpoints, the CA that signed the server's certificate and the client
// certificate and key (absolute paths in <DataDir>/tls).
func (e *Embedded) ClientConfig() ClientConfig {
	return ClientConfig{Endpoints: e.Endpoints(), CAFile: e.tls.ca, CertFile: e.tls.clientCert, KeyFile: e.tls.clientKey}
}

// EtcdctlFlags returns the etcdctl flags that reach this server, for example
// "--endpoints=https://127.0.0.1:40123 --cacert=/d/tls/ca.crt
// --cert=/d/tls/client.crt --key=/d/tls/client.key" (paths shell-quoted when
// they need it).
func (e *Embedded) EtcdctlFlags() string { return e.ClientConfig().EtcdctlFlags() }

// Err returns the channel on which the running server reports, once, that
// it stopped serving after start: the first fatal error of etcd's
// listeners (embed.Etcd.Err), or an error wrapping ErrMemberRemoved when
// the member was removed from its cluster and etcd stopped it. A value
// received before Close means the server no longer serves (it is never
// nil); Close closes the channel.
func (e *Embedded) Err() <-chan error { return e.errc }

// Close stops the server and waits until it has stopped, then removes
// <DataDir>/endpoints (see EndpointsFileName). Calling it more than once is
// safe. Pending client requests end with an error.
func (e *Embedded) Close() {
	e.closeOnce.Do(func() {
		close(e.closing)
		e.etcd.Close()
		<-e.watching
		_ = removeEndpoints(e.dataDir)
	})
}

// freePorts returns the given ports, replacing each 0 with a loopback port
// that was free a moment ago.
func freePorts(ports ...int) ([]int, error) {
	out := make([]int, len(ports))
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for i, p := range ports {
		if p != 0 {
			out[i] = p
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("etcd: find a free port: %w", err)
		}
		listeners = append(listeners, l)
		out[i] = l.Addr().(*net.TCPAddr).Port
	}
	return out, nil
}

func isAddrInUse(err error) bool {
	// etcd does not always wrap the listener error, so match its text too.
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// newLogger builds etcd's zap logger at the given level, dropping the
// "mux: server closed" / "http: Server closed" error lines that etcd logs on
// every clean shutdown.
func newLogger(level string) (*zap.Logger, error) {
	if level == "" {
		level = "error"
	}
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("etcd: log level: %w", err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.Sampling = nil
	zc.OutputPaths = []string{"stderr"}
	zc.ErrorOutputPaths = []string{"stderr"}
	l, err := zc.Build()
	if err != nil {
		return nil, fmt.Errorf("etcd: logger: %w", err)
	}
	return l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return shutdownNoiseFilter{c} })), nil
}

// shutdownNoiseFilter drops the error-level lines etcd writes when its own
// listeners are closed during a clean shutdown ("setting up serving from
// embedded etcd failed" with "mux: server closed", "http: Server closed",
// "use of closed network connection" or, before ready, "server is
// stopping"), those about a port taken
// between picking and binding it, which StartEmbedded retries, and the
// storage version monitor's "missing term information" on a new data dir,
// and the refused promotions of a learner still catching up.
type shutdownNoiseFilter struct{ zapcore.Core }

func (f shutdownNoiseFilter) With(fields []zapcore.Field) zapcore.Core {
	return shutdownNoiseFilter{f.Core.With(fields)}
}

func (f shutdownNoiseFilter) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if f.Enabled(ent.Level) {
		return ce.AddCore(ent, f)
	}
	return ce
}

func (f shutdownNoiseFilter) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	// StartEmbedded retries with other ports when one picked was taken
	// meanwhile; etcd's own error line about it is noise then.
	if strings.HasPrefix(ent.Message, "creating peer listener failed") || strings.HasPrefix(ent.Message, "creating client listener failed") {
		for _, fl := range fields {
			if err, ok := fl.Interface.(error); ok && isAddrInUse(err) {
				return nil
			}
		}
	}
	if ent.Message == "setting up serving from embedded etcd failed." {
		for _, fl := range fields {
			if err, ok := fl.Interface.(error); ok && isClosedError(err) {
				return nil
			}
		}
	}
	// With a 100 ms election timeout (EmbeddedElectionMs) a new member can
	// elect itself before the backend's first commit (every 100 ms) has
	// written the term; the storage version monitor, woken by the cluster
	// version the new leader sets, then fails once with "missing term
	// information" and succeeds on its next round (every 4 s). The line
	// says nothing wrong with the data.
	if ent.Message == "failed to update storage version" {
		for _, fl := range fields {
			if err, ok := fl.Interface.(error); ok && strings.Contains(err.Error(), "missing term information") {
				return nil
			}
		}
	}
	// A cluster's members try to promote every learner each second
	// (PromoteLearners); the leader refuses, and logs at error level with
	// a stack, each try while the learner is catching up: the join's
	// normal course, not a fault.
	if ent.Message == "rejecting promote learner: learner is not ready" {
		return nil
	}
	// Servers joining at once: etcd admits one learner at a time, and the
	// joins' handler retries the others until the first is promoted; each
	// refusal is an error line with a stack on every member.
	if ent.Message == "Validation on configuration change failed" {
		for _, fl := range fields {
			if err, ok := fl.Interface.(error); ok && strings.Contains(err.Error(), "too many learner members") {
				return nil
			}
		}
	}
	return f.Core.Write(ent, fields)
}

func isClosedError(err error) bool {
	msg := err.Error()
	return errors.Is(err, net.ErrClosed) || strings.Contains(msg, "server closed") ||
		strings.Contains(msg, "Server closed") || strings.Contains(msg, "use of closed network connection") ||
		// cmux and grpc.ErrServerStopped, when Close comes before ready
		strings.Contains(msg, "listener closed") || strings.Contains(msg, "the server has been stopped") ||
		// a client listener whose server stopped before it was ready
		// (Close, or a removed member: ErrMemberRemoved says so)
		msg == "server is stopping"
}

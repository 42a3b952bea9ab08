package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/etcd"
)

// addTimeout bounds how long a join waits for etcd to accept the new
// member while its strict reconfiguration check finds the cluster
// unhealthy (a member connected less than 5 s ago, or one down).
const addTimeout = 30 * time.Second

// Handler answers POST JoinPath for a server on the data dir dataDir whose
// etcd member cfg reaches: it adds the requested member as a learner
// (etcd's strict reconfiguration check refuses one that would leave the
// cluster without quorum while a member is down) and answers a
// JoinResponse. Errors are Status answers: 400 for a bad request, 409
// Conflict when a member of that name (or peer URL) exists (naming the
// command that removes it), 503 when etcd refuses the member (the cluster
// unhealthy, or another learner not promoted, after addTimeout). The caller authenticates and authorizes the
// request (JoinersGroup). removeCommand is the command line that removes a
// member, with NAME where its name goes, for the 409's message.
func Handler(dataDir string, cfg etcd.ClientConfig, removeCommand string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			writeStatus(w, r, apierrors.NewMethodNotSupported(joinResource, r.Method))
			return
		}
		var req JoinRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			writeStatus(w, r, apierrors.NewBadRequest("join: the body is not a JoinRequest: "+err.Error()))
			return
		}
		if err := req.validate(); err != nil {
			writeStatus(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
		resp, err := join(r.Context(), dataDir, cfg, req, removeCommand)
		if err != nil {
			writeStatus(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	})
}

// joinResource names the join in Status details.
var joinResource = schema.GroupResource{Group: "cluster.customapi.io", Resource: "members"}

func (r JoinRequest) validate() error {
	if r.Name == "" || strings.ContainsAny(r.Name, "=,") {
		return fmt.Errorf("join: name %q must be non-empty without '=' or ','", r.Name)
	}
	u, err := url.Parse(r.PeerURL)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.Port() == "" || u.Path != "" {
		return fmt.Errorf("join: peer URL %q is not https://host:port", r.PeerURL)
	}
	return nil
}

func join(ctx context.Context, dataDir string, cfg etcd.ClientConfig, req JoinRequest, removeCommand string) (*JoinResponse, error) {
	cli, err := cfg.NewClient(ctx)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable("join: etcd: " + err.Error())
	}
	defer cli.Close()
	list, err := cli.MemberList(ctx)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable("join: etcd member list: " + err.Error())
	}
	for _, m := range list.Members {
		if m.Name == req.Name || slices.Contains(m.PeerURLs, req.PeerURL) {
			what := m.Name
			if what == "" {
				what = fmt.Sprintf("%x (a learner that never started)", m.ID)
			}
			return nil, apierrors.NewConflict(joinResource, req.Name, fmt.Errorf(
				"the cluster already has member %s with peer URLs %s: a server whose data dir was lost joins again once the old member is removed: %s",
				what, strings.Join(m.PeerURLs, ","), strings.ReplaceAll(removeCommand, "NAME", memberRef(m.Name, m.ID))))
		}
	}
	files, err := readShared(dataDir)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	added, err := addLearner(ctx, cli, req.PeerURL)
	if err != nil {
		return nil, err
	}
	klog.InfoS("Added a cluster member as a learner", "name", req.Name, "peerURL", req.PeerURL, "id", fmt.Sprintf("%x", added.Member.ID))
	var initial []string
	for _, m := range added.Members {
		name := m.Name
		if m.ID == added.Member.ID {
			name = req.Name
		}
		if name == "" || len(m.PeerURLs) == 0 {
			continue // another learner that has not started: not part of the start
		}
		initial = append(initial, name+"="+m.PeerURLs[0])
	}
	return &JoinResponse{Files: files, InitialCluster: strings.Join(initial, ",")}, nil
}

// addLearner adds a learner at peerURL, retrying while etcd finds the
// cluster unhealthy or another learner waits for its promotion (servers
// joining at once join one after the other), at most addTimeout.
func addLearner(ctx context.Context, cli *clientv3.Client, peerURL string) (*clientv3.MemberAddResponse, error) {
	deadline := time.Now().Add(addTimeout)
	for {
		resp, err := cli.MemberAddAsLearner(ctx, []string{peerURL})
		if err == nil {
			return resp, nil
		}
		// Retried: a cluster etcd finds unhealthy, and another joiner's
		// learner not yet promoted (etcd allows one learner at a time).
		retry := errors.Is(err, rpctypes.ErrUnhealthy) || errors.Is(err, rpctypes.ErrTooManyLearners)
		if !retry || time.Now().After(deadline) {
			return nil, apierrors.NewServiceUnavailable("join: etcd refused the new member: " + err.Error())
		}
		select {
		case <-ctx.Done():
			return nil, apierrors.NewServiceUnavailable("join: " + ctx.Err().Error())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// readShared reads the SharedFiles dataDir has.
func readShared(dataDir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, name := range SharedFiles {
		data, err := os.ReadFile(filepath.Join(dataDir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("join: %w", err)
		}
		files[name] = data
	}
	return files, nil
}

// memberRef is how a command names a member: its name, or its hex ID when
// it has none yet.
func memberRef(name string, id uint64) string {
	if name != "" {
		return name
	}
	return fmt.Sprintf("%x", id)
}

func writeStatus(w http.ResponseWriter, r *http.Request, err error) {
	responsewriters.ErrorNegotiated(err, metainternalversionscheme.Codecs, metav1.SchemeGroupVersion, w, r)
}

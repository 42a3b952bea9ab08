package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// PeerProbeTimeout bounds Leave's probe of one member at its peer URL.
const PeerProbeTimeout = 3 * time.Second

// LeaveRetryTimeout is how long Leave retries the removal while etcd's
// strict reconfiguration check refuses it although every member Leave
// counts on answered: etcd counts a peer only once it has been connected
// for its health interval (5 s), so a member that was just restarted is
// refused for a few seconds.
const LeaveRetryTimeout = 15 * time.Second

// Leave's refusals (wrapped, with the details).
var (
	// ErrLastMember: the member is the cluster's only voting member;
	// removing it would leave nothing to hold the data.
	ErrLastMember = errors.New("the last voting member of the cluster")
	// ErrWouldLoseQuorum: the remaining voting members would not have a
	// quorum of healthy members (or etcd's own check refuses).
	ErrWouldLoseQuorum = errors.New("the remaining members would be without a quorum of healthy members")
)

// PeerHealth is what Leave's probe found of a member.
type PeerHealth struct {
	Member Member
	// Err says why the member does not count as healthy: it never started
	// (no name yet), or it does not answer at its peer URL as a member of
	// this cluster within PeerProbeTimeout. Nil: healthy.
	Err error
}

// LeaveResult is what Leave did.
type LeaveResult struct {
	// Member is the member that left.
	Member Member
	// LeaderMovedTo names the member etcd's leadership was handed to
	// before the removal, when the leaving member was the leader; "" when
	// it was not, or when the move failed (LeaderMoveErr).
	LeaderMovedTo string
	// LeaderMoveErr is why handing the leadership over failed; the
	// removal went ahead (etcd lets a leader remove itself: the others
	// elect a new leader, after an election timeout).
	LeaderMoveErr error
	// Remaining are the other members, as the leaving member last saw
	// them.
	Remaining []Member
	// Health is the probe of the other voting members.
	Health []PeerHealth
}

// Leave removes the member cli reaches (the one a server's data dir runs:
// cli's first endpoint) from its cluster, safely:
//
//   - it refuses (ErrLastMember) when the member is the only voting member;
//   - it probes every other voting member at its peer URL, with peerTLS
//     (etcd.PeerClientTLS: the data dir's peer certificate), as its peers
//     reach it (GET /members, which must answer for this cluster), and
//     refuses (ErrWouldLoseQuorum, naming those that do not answer) unless
//     a quorum of the remaining voting members is healthy: started and
//     answering. Membership is read serializably, so that a cluster
//     without quorum is refused at once rather than after a timeout;
//   - it checks that the cluster has a quorum now (a linearizable read);
//   - when the member is the leader, it hands the leadership to a healthy
//     member first (etcd's MoveLeader), so the others need not wait for an
//     election;
//   - it removes the member. etcd's strict reconfiguration check may still
//     refuse (a peer connected less than 5 s ago): Leave retries for
//     LeaveRetryTimeout, then returns ErrWouldLoseQuorum with etcd's error.
//     When the answer is lost (the member stopped as it applied its own
//     removal) a healthy member's membership says whether it happened.
//
// etcd then stops the removed member (see etcd.ErrMemberRemoved): its
// server stops.
func Leave(ctx context.Context, cli *clientv3.Client, peerTLS *tls.Config) (LeaveResult, error) {
	var res LeaveResult
	if len(cli.Endpoints()) == 0 {
		return res, errors.New("the client has no endpoint")
	}
	st, err := cli.Status(ctx, cli.Endpoints()[0])
	if err != nil {
		return res, fmt.Errorf("the member does not answer: %w", err)
	}
	selfID, clusterID := st.Header.MemberId, st.Header.ClusterId
	members, err := listMembers(ctx, cli, selfID, st.Leader, clientv3.WithSerializable())
	if err != nil {
		return res, fmt.Errorf("member list: %w", err)
	}
	i := slices.IndexFunc(members, func(m Member) bool { return m.Self })
	if i < 0 {
		return res, fmt.Errorf("member %x is not in its cluster's membership: was it removed already?", selfID)
	}
	self := members[i]
	res.Member = self
	res.Remaining = slices.Delete(slices.Clone(members), i, i+1)
	var others []Member
	for _, m := range res.Remaining {
		if !m.Learner {
			others = append(others, m)
		}
	}
	if !self.Learner {
		if len(others) == 0 {
			return res, fmt.Errorf("%s is %w: removing it would leave the data with no member to serve it; stop its server instead (its data dir keeps everything)", self.Name, ErrLastMember)
		}
	}

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: peerTLS}}
	defer client.CloseIdleConnections()
	cid := strconv.FormatUint(clusterID, 16)
	res.Health = probePeers(ctx, client, others, cid)
	var healthy []Member
	var down []string
	for _, h := range res.Health {
		if h.Err == nil {
			healthy = append(healthy, h.Member)
		} else {
			down = append(down, fmt.Sprintf("%s (%v)", h.Member.Name, h.Err))
		}
	}
	if !self.Learner {
		if need := len(others)/2 + 1; len(healthy) < need {
			var names []string
			for _, m := range others {
				names = append(names, m.Name)
			}
			return res, fmt.Errorf("%w: without %s the voting members would be %s, whose quorum is %d, and %d of them answer; not answering: %s. Start the members that are down first (or remove one that is gone for good through a running server, while the cluster has a quorum)",
				ErrWouldLoseQuorum, self.Name, strings.Join(names, ", "), need, len(healthy), strings.Join(down, "; "))
		}
	}
	if err := checkQuorum(ctx, cli); err != nil {
		return res, fmt.Errorf("%w: the cluster has no quorum now (a linearizable read through %s failed: %v); start the members that are down first", ErrWouldLoseQuorum, self.Name, err)
	}

	if self.Leader && len(healthy) > 0 {
		to := healthy[0]
		id, _ := strconv.ParseUint(to.ID, 16, 64)
		if _, err := cli.MoveLeader(ctx, id); err != nil {
			res.LeaderMoveErr = err
		} else {
			res.LeaderMovedTo = to.Name
		}
	}

	id, _ := strconv.ParseUint(self.ID, 16, 64)
	deadline := time.Now().Add(LeaveRetryTimeout)
	for {
		_, err := cli.MemberRemove(ctx, id)
		if err == nil {
			return res, nil
		}
		if errors.Is(err, rpctypes.ErrUnhealthy) || errors.Is(err, rpctypes.ErrMemberNotEnoughStarted) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return res, fmt.Errorf("%w: etcd refuses to remove %s (%v) after %s: a member may be down, or connected only moments ago; start the members that are down", ErrWouldLoseQuorum, self.Name, err, LeaveRetryTimeout)
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		// The member may have applied its removal and stopped before it
		// answered: ask the others.
		if removedPer(ctx, client, healthy, id, cid) {
			return res, nil
		}
		return res, fmt.Errorf("remove %s: %w", self.Name, err)
	}
}

// checkQuorum makes a linearizable read through cli (as etcdctl endpoint
// health does), bounded by PeerProbeTimeout plus etcd's own request
// timeout's margin.
func checkQuorum(ctx context.Context, cli *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 2*PeerProbeTimeout)
	defer cancel()
	_, err := cli.Get(ctx, "health")
	return err
}

// peerMember is a member as a peer's GET /members lists it (etcd's
// membership.Member).
type peerMember struct {
	ID uint64 `json:"id"`
}

// probePeers probes each member at its peer URL at once (peerMembers).
func probePeers(ctx context.Context, client *http.Client, members []Member, clusterID string) []PeerHealth {
	out := make([]PeerHealth, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		out[i].Member = m
		if m.Name == "" {
			out[i].Err = errors.New("it never started")
			continue
		}
		wg.Go(func() {
			_, out[i].Err = peerMembers(ctx, client, m.PeerURL, clusterID)
		})
	}
	wg.Wait()
	return out
}

// peerMembers asks the member at peerURL for the membership it sees (GET
// /members, etcd's peer API), within PeerProbeTimeout. Errors: it does
// not answer, or answers for another cluster than clusterID (hex).
func peerMembers(ctx context.Context, client *http.Client, peerURL, clusterID string) ([]peerMember, error) {
	ctx, cancel := context.WithTimeout(ctx, PeerProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(peerURL, "/")+"/members", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s does not answer: %w", peerURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", peerURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answers %s", peerURL, resp.Status)
	}
	if got := resp.Header.Get("X-Etcd-Cluster-ID"); got != clusterID {
		return nil, fmt.Errorf("%s is a member of another cluster (%s, not %s)", peerURL, got, clusterID)
	}
	var ms []peerMember
	if err := json.Unmarshal(body, &ms); err != nil {
		return nil, fmt.Errorf("%s: members: %w", peerURL, err)
	}
	return ms, nil
}

// removedPer says whether a member of members answers with a membership
// of cluster clusterID (hex) without the member id.
func removedPer(ctx context.Context, client *http.Client, members []Member, id uint64, clusterID string) bool {
	for _, m := range members {
		ms, err := peerMembers(ctx, client, m.PeerURL, clusterID)
		if err == nil && !slices.ContainsFunc(ms, func(p peerMember) bool { return p.ID == id }) {
			return true
		}
	}
	return false
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is one member of a cluster as Members reports it.
type Member struct {
	// Name is the member's name (its server's identity; "" for a learner
	// that has not started yet).
	Name string
	// ID is etcd's member ID, in hex as etcdctl prints it.
	ID string
	// PeerURL is where its peers reach it.
	PeerURL string
	// Learner says the member is still catching up, not yet voting.
	Learner bool
	// Leader says the member is the raft leader, as the member asked
	// sees it.
	Leader bool
	// Self says the member is the one asked (the data dir's server).
	Self bool
}

// Members returns the cluster's members, sorted by name, as the member cli
// reaches sees them (its membership and its leader). Errors: etcd's.
func Members(ctx context.Context, cli *clientv3.Client) ([]Member, error) {
	var leader, self uint64
	if len(cli.Endpoints()) > 0 {
		if st, err := cli.Status(ctx, cli.Endpoints()[0]); err == nil {
			leader, self = st.Leader, st.Header.MemberId
		}
	}
	return listMembers(ctx, cli, self, leader)
}

// listMembers is Members with the IDs of the member asked (self) and of
// the leader given; opts are MemberList's (clientv3.WithSerializable).
func listMembers(ctx context.Context, cli *clientv3.Client, self, leader uint64, opts ...clientv3.OpOption) ([]Member, error) {
	list, err := cli.MemberList(ctx, opts...)
	if err != nil {
		return nil, err
	}
	out := make([]Member, 0, len(list.Members))
	for _, m := range list.Members {
		mem := Member{Name: m.Name, ID: strconv.FormatUint(m.ID, 16), Learner: m.IsLearner, Leader: m.ID == leader, Self: m.ID == self}
		if len(m.PeerURLs) > 0 {
			mem.PeerURL = m.PeerURLs[0]
		}
		out = append(out, mem)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ErrUnknownMember is Remove's error for a name or ID no member has.
var ErrUnknownMember = errors.New("no member of that name or ID")

// ErrRemoveSelf is Remove's error for the member it is asked through:
// that member's server leaves with Leave, which checks the others first
// and lets its server stop.
var ErrRemoveSelf = errors.New("the member is the one asked (the data dir's own)")

// Remove removes the member named ref (a name, or a hex ID as Members
// reports it) from the cluster. etcd refuses a removal that would leave
// fewer started, connected members than a quorum of the rest (its strict
// reconfiguration check): the error then says so. It refuses to remove
// the member cli reaches itself (ErrRemoveSelf): that is Leave's. Stop the
// member's server first: a removed member's etcd is stopped by the
// cluster (etcd.ErrMemberRemoved), and its server with it.
func Remove(ctx context.Context, cli *clientv3.Client, ref string) (Member, error) {
	members, err := Members(ctx, cli)
	if err != nil {
		return Member{}, err
	}
	for _, m := range members {
		if m.Name != ref && m.ID != ref {
			continue
		}
		if m.Self {
			return m, fmt.Errorf("%q: %w", ref, ErrRemoveSelf)
		}
		id, _ := strconv.ParseUint(m.ID, 16, 64)
		if _, err := cli.MemberRemove(ctx, id); err != nil {
			if errors.Is(err, rpctypes.ErrUnhealthy) || errors.Is(err, rpctypes.ErrMemberNotEnoughStarted) {
				return m, fmt.Errorf("etcd refuses to remove %s: the cluster would be left without a quorum of started, connected members (%w); start the members that are down, or remove a member that is down instead", ref, err)
			}
			return m, err
		}
		return m, nil
	}
	return Member{}, fmt.Errorf("%q: %w", ref, ErrUnknownMember)
}

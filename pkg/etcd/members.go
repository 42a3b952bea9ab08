package etcd

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// PromoteLearners promotes every learner of cli's cluster that has caught
// up with the leader (clientv3.Cluster.MemberPromote) and returns the
// names of those it promoted; a learner not yet in sync is left for a
// later call, and a learner another member promoted meanwhile is not an
// error. A joining server waits for this (StartEmbedded with
// PeerConfig.InitialCluster), so every member of a cluster calls it now
// and then.
func PromoteLearners(ctx context.Context, cli *clientv3.Client) ([]string, error) {
	list, err := cli.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	var promoted []string
	var errs []error
	for _, m := range list.Members {
		if !m.IsLearner {
			continue
		}
		_, err := cli.MemberPromote(ctx, m.ID)
		switch {
		case err == nil:
			promoted = append(promoted, m.Name)
		case errors.Is(err, rpctypes.ErrMemberLearnerNotReady), errors.Is(err, rpctypes.ErrMemberNotLearner), errors.Is(err, rpctypes.ErrMemberNotFound):
		default:
			errs = append(errs, err)
		}
	}
	return promoted, errors.Join(errs...)
}

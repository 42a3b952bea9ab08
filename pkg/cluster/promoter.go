package cluster

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/etcd"
)

// PromoteInterval is how often a server of a cluster promotes the learners
// that have caught up (RunPromoter).
const PromoteInterval = time.Second

// RunPromoter promotes the cluster's learners once they have caught up
// with the leader (etcd.PromoteLearners), every PromoteInterval, through
// the etcd member cfg reaches, until ctx ends. Every server runs it: a
// joining member is promoted by whichever server gets there first, also
// when the server it joined through stopped meanwhile. Errors are logged
// at -v=2 and retried (a member without quorum cannot promote anybody).
func RunPromoter(ctx context.Context, cfg etcd.ClientConfig) {
	cli, err := cfg.NewClient(ctx)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cluster learner promotion: no etcd client")
		return
	}
	defer cli.Close()
	t := time.NewTicker(PromoteInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		call, cancel := context.WithTimeout(ctx, 5*time.Second)
		promoted, err := etcd.PromoteLearners(call, cli)
		cancel()
		for _, name := range promoted {
			klog.FromContext(ctx).Info("Promoted a cluster member from learner to voting member", "name", name)
		}
		if err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Cluster learner promotion failed; retrying", "err", err)
		}
	}
}

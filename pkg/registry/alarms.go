package registry

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/storage"
)

// startAlarms reads etcd's alarms once (so that a start on an etcd whose
// quota is full says so at once, and Open's hooks know it), then runs the
// registry's alarm monitor (storage.Config.Alarms) on its own etcd client
// until Close; it also writes the stored versions records that a full
// quota kept Open from writing, once the alarm is cleared.
func (r *Registry) startAlarms(ctx context.Context) error {
	cli, err := r.etcdCfg.NewClient(ctx)
	if err != nil {
		return fmt.Errorf("registry: etcd alarms: %w", err)
	}
	r.alarmsClient = cli
	if err := r.alarms.Poll(ctx, cli); err != nil {
		klog.V(2).InfoS("Reading etcd's alarms failed", "err", err)
	}
	if r.alarms.NoSpace() {
		klog.ErrorS(nil, "etcd's database is full (NOSPACE): the server starts read-only; reads, watches and deletes work, other writes are refused until space is reclaimed", "endpoints", r.etcdCfg.Endpoints)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.stopAlarms = cancel
	r.background.Go(func() { r.alarms.Run(runCtx, cli) })
	if r.storedVersionsPending {
		r.background.Go(func() { r.writeStoredVersionsOnceWritable(runCtx) })
	}
	return nil
}

// writeStoredVersionsOnceWritable writes the stored versions records Open
// could not write for a full quota, once etcd's NOSPACE alarm is cleared
// (retrying at each change of the alarms while etcd still refuses).
func (r *Registry) writeStoredVersionsOnceWritable(ctx context.Context) {
	for {
		changed := r.alarms.Changed()
		if !r.alarms.NoSpace() {
			err := r.openStoredVersions(ctx)
			switch {
			case err == nil:
				klog.InfoS("The stored versions records that a full etcd kept from being written at start are written")
				return
			case ctx.Err() != nil:
				return
			case !storage.IsNoSpace(err):
				klog.ErrorS(err, "Writing the stored versions records once etcd had space again failed; the next start writes them")
				return
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// EtcdAlarms returns the monitor of etcd's alarms (storage.Config.Alarms,
// or the one Open created): whether etcd's quota is full, and the Status
// of a write it refused for space.
func (r *Registry) EtcdAlarms() *storage.AlarmMonitor { return r.alarms }

// CheckEtcdAlarms returns nil when etcd had no alarm raised at the last
// read of its alarms (every storage.DefaultAlarmPollPeriod, and at once
// after a write refused for space), and otherwise an error naming the
// alarms, for NOSPACE with the quota and the way out
// (storage.AlarmMonitor.Check): a server's /readyz check "etcd-alarms".
func (r *Registry) CheckEtcdAlarms() error { return r.alarms.Check() }

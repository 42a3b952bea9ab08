package server

import (
	"fmt"
	"net/http"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"

	"github.com/customapi/customapi/pkg/registry"
)

// addHealthChecks adds the watch caches' readyz check "watch-caches": red
// while a store's watch cache is still loading from etcd
// (registry.Registry.Ready), its error, shown at /readyz/watch-caches, in
// the log and in /readyz?verbose to those who may read it, naming each
// resource still loading with the objects read so far, of how many, and
// for how long (readyz only: a load is progress, not a fault); and the etcd health check ("etcd": a linearizable read,
// registry.CheckEtcd) to the probes that should follow etcd:
//   - with the embedded etcd (no --etcd-servers) to /livez, /healthz and
//     /readyz (Config.AddHealthChecks, as kube-apiserver adds its etcd
//     check): the etcd is part of this process, so a failing check is this
//     process's failure and a restart (which restarts the etcd, replaying
//     its WAL) is the remedy a liveness probe should apply;
//   - with an external etcd (--etcd-servers) to /readyz only
//     (Config.AddReadyzChecks): an outage of that cluster (quorum lost, a
//     network partition) is not this process's failure, a restart cannot
//     fix it and only adds a cold start (watch caches relisting everything)
//     to the recovery; kube-apiserver's /livez goes red there too, which is
//     why kubeadm's liveness probe needs ~80 s of grace. /readyz red takes
//     the replica out of load balancing meanwhile.
//
// The check is /readyz/etcd in both modes.
//
// Each distinct etcd of --etcd-servers-overrides (registry.EtcdOverrides,
// numbered from 0 in the order the flag first names it) gets a check of
// its own, named as kube-apiserver names them: etcd-override-N, in the
// check group "etcd" (so that /readyz?exclude=etcd leaves out every etcd
// check, as in kube). An override's etcd is always external, so its check
// is in /readyz only, for the reason above (kube-apiserver also puts it in
// /livez). /readyz/etcd-override-N's failure names the etcd's endpoints
// and the resources it holds.
//
// It also adds etcdAlarmsCheck, etcd's alarms (a full quota: NOSPACE), to
// /readyz only, with either etcd: a replica whose writes all fail should
// leave load balancing, but a restart cannot make room in etcd (the alarm
// outlives it), so /livez stays green.
func addHealthChecks(gc *genericapiserver.Config, reg *registry.Registry, externalEtcd bool) {
	gc.AddReadyzChecks(healthz.NamedCheck("watch-caches", func(*http.Request) error { return reg.Ready() }))
	check := healthz.NamedCheck("etcd", func(*http.Request) error { return reg.CheckEtcd() })
	if !externalEtcd {
		gc.AddHealthChecks(check)
	} else {
		gc.AddReadyzChecks(check)
	}
	for i, o := range reg.EtcdOverrides() {
		gc.AddReadyzChecks(healthz.NamedGroupedCheck(EtcdOverrideCheckName(i), "etcd", func(*http.Request) error { return o.Check() }))
	}
	gc.AddReadyzChecks(healthz.NamedCheck(etcdAlarmsCheck, func(*http.Request) error { return reg.CheckEtcdAlarms() }))
}

// EtcdOverrideCheckName is the name of the /readyz check of the i-th etcd
// of --etcd-servers-overrides (registry.Registry.EtcdOverrides):
// "etcd-override-<i>", kube-apiserver's name.
func EtcdOverrideCheckName(i int) string { return fmt.Sprintf("etcd-override-%d", i) }

// etcdAlarmsCheck is the /readyz check of etcd's alarms
// (registry.Registry.CheckEtcdAlarms, read every
// options.StorageOptions.EtcdAlarmPollPeriod): red while etcd has an alarm raised, its
// message naming the alarm and, for NOSPACE, the quota and the recovery
// command (/readyz/etcd-alarms). ReadyNotify leaves it out: a server that
// starts on a full etcd serves (read-only) and says so.
const etcdAlarmsCheck = "etcd-alarms"

package server

import (
	"net/http"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
)

// addEtcdCheck adds the etcd health check ("etcd": a linearizable read,
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
// It also adds etcdAlarmsCheck, etcd's alarms (a full quota: NOSPACE), to
// /readyz only, with either etcd: a replica whose writes all fail should
// leave load balancing, but a restart cannot make room in etcd (the alarm
// outlives it), so /livez stays green.
func (s *Server) addEtcdCheck(gc *genericapiserver.Config) {
	check := healthz.NamedCheck("etcd", func(*http.Request) error { return s.registry.CheckEtcd() })
	if !s.config.Options.Storage.Etcd.External() {
		gc.AddHealthChecks(check)
	} else {
		gc.AddReadyzChecks(check)
	}
	gc.AddReadyzChecks(healthz.NamedCheck(etcdAlarmsCheck, func(*http.Request) error { return s.registry.CheckEtcdAlarms() }))
}

// etcdAlarmsCheck is the /readyz check of etcd's alarms
// (registry.Registry.CheckEtcdAlarms, read every
// Options.EtcdAlarmPollPeriod): red while etcd has an alarm raised, its
// message naming the alarm and, for NOSPACE, the quota and the recovery
// command (/readyz/etcd-alarms). ReadyNotify leaves it out: a server that
// starts on a full etcd serves (read-only) and says so.
const etcdAlarmsCheck = "etcd-alarms"

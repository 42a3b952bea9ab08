// Package logfilter keeps the server's log readable: errors in it are the
// server's errors.
//
// A RepeatLimiter keeps a flood of one repeated message from drowning the
// log. With etcd's quorum lost, k8s.io/apiserver's etcd3 watcher logs
// "watch chan error: etcdserver: no leader" thousands of times a second
// (klog, k8s.io/apiserver/pkg/storage/etcd3/watcher.go); a RepeatLimiter in
// front of the log stream lets each distinct message through a few times per
// interval and drops the rest, counting them, while every other message
// passes at once.
//
// A ClientErrorFilter and InstallUnhandledErrorHandler make what a client
// did wrong info instead of error: k8s.io/apiserver logs at error level a
// query that does not parse (?limit=abc), a token it does not know, a
// client that hangs up or times out itself, although the client gets its
// 4xx Status (or left). Those entries are shown at -v=2
// (ClientErrorVerbosity) and dropped below; the server's own errors (etcd
// failures, panics, 500s, a request that runs out of the server's
// --request-timeout) stay errors.
//
// The writers are installed where k8s.io/component-base/logs writes (the
// ErrorStream of logsapi.LoggingOptions), so they work for klog's
// printf-style calls and structured calls alike; Apply installs all of it
// as `customapi serve` does:
//
//	logOpts := logs.NewOptions() // with logsapi.AddFlags(logOpts, flags)
//	err := logfilter.Apply(logOpts, os.Stderr, os.Stdout, time.Minute)
package logfilter

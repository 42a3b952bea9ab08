// Package logfilter keeps a flood of one repeated log message from drowning
// the log. With etcd's quorum lost, k8s.io/apiserver's etcd3 watcher logs
// "watch chan error: etcdserver: no leader" thousands of times a second
// (klog, k8s.io/apiserver/pkg/storage/etcd3/watcher.go); a RepeatLimiter in
// front of the log stream lets each distinct message through a few times per
// interval and drops the rest, counting them, while every other message
// passes at once.
//
// It is an io.Writer, installed where k8s.io/component-base/logs writes
// (the ErrorStream of logsapi.LoggingOptions), so it works for every log
// format and for klog's printf-style calls and structured calls alike:
//
//	w := logfilter.NewRepeatLimiter(os.Stderr, logfilter.DefaultInterval, logfilter.DefaultBurst)
//	err := logsapi.ValidateAndApplyWithOptions(logOpts,
//		&logsapi.LoggingOptions{ErrorStream: w, InfoStream: os.Stdout}, nil)
package logfilter

package logfilter

import (
	"io"
	"time"

	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
)

// Apply sets up klog as `customapi serve` does: c's format, verbosity and
// options (the -v and --log-* flags of logsapi.AddFlags) with the entries
// written to stderr (and info entries to stdout with a split stream),
// through a ClientErrorFilter (client-caused errors of k8s.io/apiserver
// become info entries at ClientErrorVerbosity) and a RepeatLimiter
// (DefaultInterval, DefaultBurst), and InstallUnhandledErrorHandler with
// requestTimeout, the server's --request-timeout. It fails as
// logsapi.ValidateAndApplyWithOptions does, for example when the logging
// configuration was applied before in the process.
func Apply(c *logsapi.LoggingConfiguration, stderr, stdout io.Writer, requestTimeout time.Duration) error {
	streams := &logsapi.LoggingOptions{
		ErrorStream: NewClientErrorFilter(NewRepeatLimiter(stderr, DefaultInterval, DefaultBurst), verbose),
		InfoStream:  stdout,
	}
	if err := logsapi.ValidateAndApplyWithOptions(c, streams, nil); err != nil {
		return err
	}
	InstallUnhandledErrorHandler(requestTimeout)
	return nil
}

// verbose says whether the logger logsapi installed logs at
// ClientErrorVerbosity (its -v, also as changed at run time through
// /debug/flags/v). With contextual logging, which Apply's nil feature gate
// leaves on, klog.Background() is that logger, whose check does not take
// klog's lock.
func verbose() bool {
	return klog.Background().V(ClientErrorVerbosity).Enabled()
}

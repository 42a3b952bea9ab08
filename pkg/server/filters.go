package server

import (
	"time"
)

// DefaultRequestBodyTimeout is Options.RequestBodyTimeout's default: a
// request's body must have arrived within a minute of the request.
const DefaultRequestBodyTimeout = time.Minute

// DefaultRequestTimeout is Options.RequestTimeout's default, as
// kube-apiserver's --request-timeout: a minute.
const DefaultRequestTimeout = time.Minute

// requestTimeout returns RequestTimeout, or DefaultRequestTimeout for 0.
func (o *Options) requestTimeout() time.Duration {
	if o.RequestTimeout > 0 {
		return o.RequestTimeout
	}
	return DefaultRequestTimeout
}

package logfilter

import (
	"bytes"
	"io"
	"regexp"
)

// ClientErrorVerbosity is the verbosity (-v) at which the log shows the
// client-caused messages k8s.io/apiserver logs as errors: below it they are
// dropped, at it or above they are info entries.
const ClientErrorVerbosity = 2

// ClientErrorFilter is an io.Writer in front of klog's text output that
// demotes the error entries k8s.io/apiserver v0.37 writes about a bad
// request, whose client already gets a 4xx Status saying what is wrong, to
// info entries at ClientErrorVerbosity: when verbose reports true the entry
// is written with its severity letter changed from E to I (the rest of the
// line, header included, as upstream wrote it); otherwise it is dropped.
// The entries, matched on the file of the klog header and the exact
// message (and for authentication the exact error), are:
//
//   - endpoints/request/requestinfo.go: "Couldn't parse request" err=...:
//     the query of a GET on a collection does not decode as ListOptions
//     (?limit=abc, ?timeoutSeconds=x, a label or field selector that does
//     not parse); the request is answered 400 BadRequest;
//   - util/flowcontrol/request/list_work_estimator.go: "Failed to convert
//     options while estimating work for the list request" err=...: the
//     same query, as the LIST work estimator (customapi's in-flight seats)
//     reads it;
//   - endpoints/filters/request_deadline.go: Error - invalid timeout
//     specified in the request URL - ...: a ?timeout= that is not a
//     duration (400 BadRequest);
//   - endpoints/filters/authentication.go: "Unable to authenticate the
//     request" with err="invalid bearer token" (no token authenticator
//     knows the token) or err="verifying certificate ... failed: x509:
//     ..." (a client certificate no client CA of the server signed, or
//     expired): 401 Unauthorized. Other authentication errors (an OIDC
//     issuer that cannot be reached, several errors at once) stay errors.
//
// Every other entry, and entries that are not klog text (JSON), pass
// unchanged. The errors of a request that the client abandons or times out
// itself go through k8s.io/apimachinery's HandleError instead; see
// InstallUnhandledErrorHandler.
//
// verbose is called for each demoted entry, from within klog's output path:
// it must not call klog.V, which takes klog's lock when -vmodule is set;
// klog.Background().V(ClientErrorVerbosity).Enabled, the logger logsapi
// installs, is safe. Safe for concurrent use if out is.
type ClientErrorFilter struct {
	out     io.Writer
	verbose func() bool
}

// NewClientErrorFilter returns a ClientErrorFilter writing to out.
func NewClientErrorFilter(out io.Writer, verbose func() bool) *ClientErrorFilter {
	return &ClientErrorFilter{out: out, verbose: verbose}
}

// Write writes p to the underlying writer, demoted when it is one of the
// client-caused entries, or drops it. It reports len(p) written for a
// dropped or rewritten entry.
func (f *ClientErrorFilter) Write(p []byte) (int, error) {
	if !isClientError(p) {
		return f.out.Write(p)
	}
	if !f.verbose() {
		return len(p), nil
	}
	demoted := make([]byte, len(p))
	copy(demoted, p)
	demoted[0] = 'I'
	if _, err := f.out.Write(demoted); err != nil {
		return 0, err
	}
	return len(p), nil
}

// klogErrorHeader matches the header of a klog text error entry, capturing
// the source file's base name, for example
// "E0102 15:04:05.123456   12345 requestinfo.go:226] ".
var klogErrorHeader = regexp.MustCompile(`^E\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ ([^\]:]+):\d+\] `)

// clientError is one entry of ClientErrorFilter: an error logged in file
// whose text after the header starts with prefix and, when contains is
// set, holds it too.
type clientError struct {
	file, prefix, contains string
}

var clientErrors = []clientError{
	{file: "requestinfo.go", prefix: `"Couldn't parse request" err=`},
	{file: "list_work_estimator.go", prefix: `"Failed to convert options while estimating work for the list request" err=`},
	{file: "request_deadline.go", prefix: `Error - invalid timeout specified in the request URL - `},
	{file: "authentication.go", prefix: `"Unable to authenticate the request" err="invalid bearer token"` + "\n"},
	{file: "authentication.go", prefix: `"Unable to authenticate the request" err="verifying certificate SN=`, contains: ` failed: x509: `},
}

// isClientError says whether p is one of the entries of clientErrors.
func isClientError(p []byte) bool {
	m := klogErrorHeader.FindSubmatchIndex(p)
	if m == nil {
		return false
	}
	file, text := p[m[2]:m[3]], p[m[1]:]
	for _, e := range clientErrors {
		if string(file) == e.file && bytes.HasPrefix(text, []byte(e.prefix)) &&
			(e.contains == "" || bytes.Contains(text, []byte(e.contains))) {
			return true
		}
	}
	return false
}

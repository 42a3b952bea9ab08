package logfilter

import (
	"bytes"
	"testing"
)

// TestClientErrorFilter: the client-caused entries k8s.io/apiserver logs as
// errors (as measured from a server, see TestBadRequestsLogNoErrors) are
// info at -v=2 and dropped below; the server's errors and everything else
// pass unchanged.
func TestClientErrorFilter(t *testing.T) {
	const h = "E1207 06:22:38.536670   19493 "
	for _, tc := range []struct {
		name    string
		entry   string
		demoted bool
	}{
		{"bad limit", h + `requestinfo.go:226] "Couldn't parse request" err="strconv.ParseInt: parsing \"abc\": invalid syntax" request={"limit":["abc"]}` + "\n", true},
		{"bad limit, LIST work estimator", h + `list_work_estimator.go:82] "Failed to convert options while estimating work for the list request" err="strconv.ParseInt: parsing \"abc\": invalid syntax"` + "\n", true},
		{"bad timeout", h + `request_deadline.go:73] Error - invalid timeout specified in the request URL - time: invalid duration "abc": "/apis/test/v1/namespaces/default/customs?timeout=abc"` + "\n", true},
		{"unknown token", h + `authentication.go:76] "Unable to authenticate the request" err="invalid bearer token"` + "\n", true},
		{"certificate of an unknown CA", h + `authentication.go:76] "Unable to authenticate the request" err="verifying certificate SN=1, SKID=, AKID= failed: x509: certificate signed by unknown authority"` + "\n", true},

		{"OIDC issuer not reachable", h + `authentication.go:76] "Unable to authenticate the request" err="oidc: authenticator for issuer \"https://idp.example\" is not initialized"` + "\n", false},
		{"several authentication errors", h + `authentication.go:76] "Unable to authenticate the request" err="[invalid bearer token, verifying certificate SN=1, SKID=, AKID= failed: x509: certificate signed by unknown authority]"` + "\n", false},
		{"bearer token and more", h + `authentication.go:76] "Unable to authenticate the request" err="invalid bearer token" extra="x"` + "\n", false},
		{"etcd without leader", h + "watcher.go:425] watch chan error: etcdserver: no leader\n", false},
		{"panic", h + `wrap.go:57] "apiserver panic'd" method="GET" URI="/apis/test/v1/customs" auditID="a"` + "\n", false},
		{"500", h + `status.go:71] "Unhandled Error" err="apiserver received an error that is not an metav1.Status: etcdserver: request timed out" logger="UnhandledError"` + "\n", false},
		{"same message, another file", h + `handler.go:1] "Couldn't parse request" err="x"` + "\n", false},
		{"info entry", "I1207 06:22:38.536670   19493 " + `requestinfo.go:226] "Couldn't parse request" err="x"` + "\n", false},
		{"warning entry", "W1207 06:22:38.536670   19493 " + `requestinfo.go:226] "Couldn't parse request" err="x"` + "\n", false},
		{"JSON", `{"ts":1767366245.1,"caller":"request/requestinfo.go:226","msg":"Couldn't parse request","err":"x"}` + "\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, verbose := range []bool{false, true} {
				var out bytes.Buffer
				f := NewClientErrorFilter(&out, func() bool { return verbose })
				if n, err := f.Write([]byte(tc.entry)); err != nil || n != len(tc.entry) {
					t.Fatalf("Write = %d, %v", n, err)
				}
				want := tc.entry
				switch {
				case tc.demoted && verbose:
					want = "I" + tc.entry[1:]
				case tc.demoted:
					want = ""
				}
				if out.String() != want {
					t.Errorf("verbose %v: wrote %q, want %q", verbose, out.String(), want)
				}
			}
		})
	}
}

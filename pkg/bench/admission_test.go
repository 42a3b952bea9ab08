package bench

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func TestParseAdmission(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    []string
		wantErr string
	}{
		{nil, nil, ""},
		{[]string{"none"}, nil, ""},
		{[]string{"policy", "none", "webhook"}, []string{"none", "webhook", "policy"}, ""},
		{[]string{"webhook-unmatched", "webhook"}, []string{"webhook", "webhook-unmatched"}, ""},
		{[]string{"webhooks"}, nil, `unknown admission mode "webhooks"`},
	} {
		got, err := parseAdmission(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: err %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// The webhook serves TLS that its caBundle verifies (as the API server's
// webhook client does) and allows every review but a probe's.
func TestWebhookServer(t *testing.T) {
	w, err := startWebhook()
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(w.caPEM) {
		t.Fatal("caBundle holds no certificate")
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	for _, tc := range []struct {
		name    string
		allowed bool
	}{{"create-s-1", true}, {probePrefix + "7", false}} {
		obj, _ := json.Marshal(metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: tc.name}})
		body, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  &admissionv1.AdmissionRequest{UID: types.UID("uid-" + tc.name), Object: runtime.RawExtension{Raw: obj}},
		})
		resp, err := hc.Post(w.url+"/k", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var review admissionv1.AdmissionReview
		err = json.NewDecoder(resp.Body).Decode(&review)
		resp.Body.Close()
		if err != nil || review.Response == nil {
			t.Fatalf("%s: %v %+v", tc.name, err, review)
		}
		r := review.Response
		if r.UID != types.UID("uid-"+tc.name) || r.Allowed != tc.allowed || review.Kind != "AdmissionReview" {
			t.Errorf("%s: %+v in %+v, want allowed %v with the request's uid", tc.name, r, review.TypeMeta, tc.allowed)
		}
		if !tc.allowed && (r.Result == nil || r.Result.Message != probeMessage || r.Result.Code != http.StatusForbidden) {
			t.Errorf("%s: denial %+v, want 403 %q", tc.name, r.Result, probeMessage)
		}
	}
	if n := w.count("k"); n != 2 {
		t.Errorf("%d reviews counted, want 2", n)
	}
}

// Raw etcd's creates in the same rounds are the ratio's baseline.
func TestAdmissionRatios(t *testing.T) {
	etcd := Result{Target: "etcd", RoundOpsPerSec: []float64{100, 200, 100}}
	rows := []Result{{Target: "self", RoundOpsPerSec: []float64{50, 50, 10}, Notes: "3 rounds"}, {}}
	admissionRatios(etcd, rows)
	if r := rows[0]; r.VsEtcd != 0.25 || r.VsEtcdMin != 0.1 || r.VsEtcdMax != 0.5 || !strings.Contains(r.Notes, "raw etcd has no admission") {
		t.Errorf("ratios %+v", r)
	}
	if rows[1].VsEtcd != 0 {
		t.Errorf("a row without a target got a ratio: %+v", rows[1])
	}
}

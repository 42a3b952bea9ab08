package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// namespaces returns every namespace the workloads of cfg write to.
func namespaces(cfg Config) []string {
	seen := map[string]bool{}
	var out []string
	add := func(ns string) {
		if !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	for _, w := range cfg.CreateWorkers {
		add(fmt.Sprintf("%s-%d", nsCreate, w))
	}
	for _, ns := range []string{nsUpdate, nsList, nsWatch} {
		add(ns)
	}
	if cfg.CPUProfileDir != "" {
		add(nsProfile)
	}
	if modes, _ := parseAdmission(cfg.Admission); modes != nil {
		add(nsAdmission)
	}
	return out
}

// ensureNamespaces makes sure each namespace exists on a server that
// enforces namespaces (kube-apiserver's NamespaceLifecycle admission
// refuses writes into a missing one): GET /api/v1/namespaces/NAME, and on
// a 404 that names a missing namespace, POST it. A server without a
// namespaces API (404 for the resource itself, as customapi) needs nothing
// and is left alone. It returns how many namespaces it created.
func ensureNamespaces(ctx context.Context, hc *http.Client, base string, names []string) (int, error) {
	created := 0
	for _, name := range names {
		code, status, err := jsonCall(ctx, hc, http.MethodGet, base+"/api/v1/namespaces/"+name, nil)
		if err != nil {
			return created, err
		}
		switch {
		case code == http.StatusOK:
			continue
		case code == http.StatusNotFound && status.Details != nil && status.Details.Kind == "namespaces" && status.Details.Name == name:
			// The namespaces API exists; this one does not.
		case code == http.StatusNotFound:
			return created, nil // no namespaces API: nothing enforces them
		default:
			return created, fmt.Errorf("GET namespace %s: %d %s", name, code, status.Message)
		}
		body, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]string{"name": name}})
		code, status, err = jsonCall(ctx, hc, http.MethodPost, base+"/api/v1/namespaces", body)
		if err != nil {
			return created, err
		}
		switch code {
		case http.StatusCreated, http.StatusOK:
			created++
		case http.StatusConflict: // created meanwhile
		default:
			return created, fmt.Errorf("create namespace %s: %d %s", name, code, status.Message)
		}
	}
	return created, nil
}

// jsonCall sends a JSON request and returns the status code and, for an
// error answer, the Status it carried (empty when it was not one).
func jsonCall(ctx context.Context, hc *http.Client, method, url string, body []byte) (int, metav1.Status, error) {
	var status metav1.Status
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, status, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, status, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, status, err
	}
	if resp.StatusCode >= 300 {
		if json.Unmarshal(data, &status) != nil || status.Kind != "Status" {
			status = metav1.Status{Message: strings.TrimSpace(string(data))}
		}
	}
	return resp.StatusCode, status, nil
}

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// httpTarget talks to a Kubernetes-style API server over HTTPS, as any
// client does: JSON bodies, one shared HTTP/2 connection (client-go's
// transport for the kubeconfig's credentials).
type httpTarget struct {
	name   string
	base   string // https://host:port
	client *http.Client
	gvr    schema.GroupVersionResource
	kind   string
	// pid of the server process when known (self target), for Memory.
	pid int
	// stop ends the server the target started, if any.
	stop func() error
}

func (t *httpTarget) Name() string { return t.name }

func (t *httpTarget) collection(namespace string) string {
	return fmt.Sprintf("%s/apis/%s/%s/namespaces/%s/%s", t.base, t.gvr.Group, t.gvr.Version, namespace, t.gvr.Resource)
}

// objectMeta is the part of a response the benchmark reads.
type objectMeta struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
		Continue        string `json:"continue"`
	} `json:"metadata"`
}

func (t *httpTarget) do(ctx context.Context, method, url string, body []byte, want int, out any) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode == http.StatusConflict {
			return errConflict
		}
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (t *httpTarget) Create(ctx context.Context, namespace, name string, s *sample) (string, error) {
	s.APIVersion, s.Kind = t.gvr.GroupVersion().String(), t.kind
	var out objectMeta
	if err := t.do(ctx, http.MethodPost, t.collection(namespace), sampleJSON(s), http.StatusCreated, &out); err != nil {
		return "", err
	}
	return out.Metadata.ResourceVersion, nil
}

func (t *httpTarget) Get(ctx context.Context, namespace, name string) error {
	return t.do(ctx, http.MethodGet, t.collection(namespace)+"/"+name, nil, http.StatusOK, nil)
}

func (t *httpTarget) Update(ctx context.Context, namespace, name string, value int64) (string, error) {
	u := t.collection(namespace) + "/" + name
	var s sample
	if err := t.do(ctx, http.MethodGet, u, nil, http.StatusOK, &s); err != nil {
		return "", err
	}
	setFirstNumber(&s.Spec, value)
	var out objectMeta
	if err := t.do(ctx, http.MethodPut, u, sampleJSON(&s), http.StatusOK, &out); err != nil {
		return "", err
	}
	return out.Metadata.ResourceVersion, nil
}

func (t *httpTarget) List(ctx context.Context, namespace, rv string, limit int64) (int, error) {
	n, cont := 0, ""
	for {
		q := url.Values{}
		if cont != "" {
			q.Set("continue", cont)
		} else {
			q.Set("resourceVersion", rv)
		}
		if limit > 0 {
			q.Set("limit", strconv.FormatInt(limit, 10))
		}
		var page struct {
			objectMeta
			Items []json.RawMessage `json:"items"`
		}
		if err := t.do(ctx, http.MethodGet, t.collection(namespace)+"?"+q.Encode(), nil, http.StatusOK, &page); err != nil {
			return n, err
		}
		n += len(page.Items)
		if cont = page.Metadata.Continue; cont == "" {
			return n, nil
		}
	}
}

func (t *httpTarget) Watch(ctx context.Context, namespace, rv string) (<-chan string, error) {
	q := url.Values{"watch": {"1"}, "resourceVersion": {rv}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.collection(namespace)+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("watch: %d", resp.StatusCode)
	}
	out := make(chan string, 1024)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		dec := json.NewDecoder(bufio.NewReader(resp.Body))
		for {
			var ev struct {
				Type   string     `json:"type"`
				Object objectMeta `json:"object"`
			}
			if err := dec.Decode(&ev); err != nil {
				return
			}
			if ev.Type == "ERROR" {
				return
			}
			if ev.Type == "BOOKMARK" {
				continue
			}
			select {
			case out <- ev.Object.Metadata.ResourceVersion:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Memory reads the server's resident set size from /proc (Linux), when the
// benchmark started the server.
func (t *httpTarget) Memory() (int64, string, error) {
	if t.pid == 0 {
		return 0, "", errNoMemory
	}
	return processRSS(t.pid)
}

func (t *httpTarget) Close() error {
	if t.stop != nil {
		return t.stop()
	}
	return nil
}

// processRSS returns VmRSS of a process in bytes.
func processRSS(pid int) (int64, string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, "", err
			}
			return kb * 1024, "RSS of the server process", nil
		}
	}
	return 0, "", fmt.Errorf("no VmRSS for pid %d", pid)
}

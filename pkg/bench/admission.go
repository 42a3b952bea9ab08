package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// Admission modes of Config.Admission: what is installed on a target
// before one create workload of its own ("create admission=MODE",
// admissionWorkers workers) and removed after it.
const (
	// AdmissionNone installs nothing: the baseline, measured in the same
	// way and next to the others.
	AdmissionNone = "none"
	// AdmissionWebhook installs one ValidatingWebhookConfiguration that
	// matches the bench resource (CREATE and UPDATE), served by an HTTPS
	// webhook in the bench process that allows every request of the
	// workload (failurePolicy Fail, sideEffects None, timeoutSeconds 10).
	AdmissionWebhook = "webhook"
	// AdmissionPolicy installs one ValidatingAdmissionPolicy matching the
	// bench resource, with one cheap CEL validation that every object of
	// the workload passes, and its binding (validationActions Deny).
	AdmissionPolicy = "policy"
	// AdmissionWebhookUnmatched installs the webhook of AdmissionWebhook,
	// matching configmaps instead: the bench resource must not be slowed
	// by a webhook it does not match.
	AdmissionWebhookUnmatched = "webhook-unmatched"
)

// admissionModes are the valid Config.Admission values, in the order the
// workloads run.
var admissionModes = []string{AdmissionNone, AdmissionWebhook, AdmissionPolicy, AdmissionWebhookUnmatched}

// admissionWorkers is the worker count of the admission create workloads
// (the "create c16").
const admissionWorkers = 16

// nsAdmission is the namespace of the admission create workloads and
// probes.
const nsAdmission = "bench-admission"

// Names of what the admission workloads install and of their probes.
const (
	admissionObjectName  = "customapi-bench"
	admissionWebhookName = "samples.bench.customapi.io"
	// probePrefix starts the names of the probe objects, which the
	// webhook and the policy deny (and nothing else): a probe's denial
	// says the configuration took effect on the target, its admission
	// after removal that the removal did.
	probePrefix = "bench-deny-"
	// probeMessage is in every denial of a probe.
	probeMessage = "customapi bench probe denied"
	// admissionEffectTimeout bounds the wait for an installed or removed
	// configuration to take effect (an informer's delay on the server).
	admissionEffectTimeout = 60 * time.Second
)

// policyExpression is the policy's validation: one string test, which
// every object of the workload passes and only probes fail.
const policyExpression = "!object.metadata.name.startsWith('" + probePrefix + "')"

// parseAdmission checks Config.Admission and returns the modes to run, in
// admissionModes' order; nil when there is nothing but none (the default:
// no admission workload at all, the run unchanged).
func parseAdmission(in []string) ([]string, error) {
	seen := map[string]bool{}
	for _, m := range in {
		if !slices.Contains(admissionModes, m) {
			return nil, fmt.Errorf("unknown admission mode %q (%s)", m, strings.Join(admissionModes, ", "))
		}
		seen[m] = true
	}
	if len(seen) == 0 || len(seen) == 1 && seen[AdmissionNone] {
		return nil, nil
	}
	var out []string
	for _, m := range admissionModes {
		if seen[m] {
			out = append(out, m)
		}
	}
	return out, nil
}

// admissionTarget is a target whose server serves the admissionregistration
// kinds: the admission workloads run on it. The clientset reaches the same
// registry as the target's own door.
type admissionTarget interface {
	Target
	admissionClient() (kubernetes.Interface, error)
}

// runAdmission runs one create workload per mode on every target that
// serves admission (alongside raw etcd, the baseline of their ratios), in
// rounds as the create workloads: install on each, wait until it takes
// effect on each, run, remove, wait until the removal took effect.
func runAdmission(ctx context.Context, cfg Config, modes []string, open []*openTarget) error {
	if len(modes) == 0 {
		return nil
	}
	var runners []*runner
	var rows []*[]Result
	var clients []kubernetes.Interface
	var etcd *runner
	for _, o := range open {
		if o.name == "etcd" {
			etcd = o.r
			continue
		}
		at, ok := o.r.target.(admissionTarget)
		if !ok {
			continue
		}
		c, err := at.admissionClient()
		if err != nil {
			return fmt.Errorf("%s: %w", o.name, err)
		}
		runners, rows, clients = append(runners, o.r), append(rows, &o.rows), append(clients, c)
	}
	if len(runners) == 0 {
		return nil
	}
	var hook *webhookServer
	if slices.Contains(modes, AdmissionWebhook) || slices.Contains(modes, AdmissionWebhookUnmatched) {
		var err error
		if hook, err = startWebhook(); err != nil {
			return fmt.Errorf("webhook server: %w", err)
		}
		defer hook.close()
	}
	var probes atomic.Int64
	for _, mode := range modes {
		installs := make([]admissionInstall, len(runners))
		for i, r := range runners {
			// Each target's webhook has a path of its own, so that the
			// reviews it causes are counted apart.
			installs[i] = admissionObjects(mode, cfg.Resource, hook, strconv.Itoa(i))
			install := installs[i]
			if err := install.apply(ctx, clients[i]); err != nil {
				return fmt.Errorf("%s: admission=%s: install: %w", r.target.Name(), mode, err)
			}
			t0 := time.Now()
			if err := install.await(ctx, r, clients[i], &probes, true); err != nil {
				_ = install.remove(context.WithoutCancel(ctx), clients[i])
				return fmt.Errorf("%s: admission=%s: %w", r.target.Name(), mode, err)
			}
			if cfg.Progress != nil && mode != AdmissionNone {
				fmt.Fprintf(cfg.Progress, "%s: admission=%s: installed, in effect after %s\n", r.target.Name(), mode, time.Since(t0).Round(time.Millisecond))
			}
		}
		all := runners
		if etcd != nil {
			all = append([]*runner{etcd}, runners...)
		}
		workload := "create admission=" + mode
		reviews0 := make([]int64, len(runners))
		plugins0 := make([]map[string]pluginTime, len(runners))
		for i, r := range runners {
			reviews0[i] = hook.count(strconv.Itoa(i))
			plugins0[i] = admissionPluginTimes(ctx, r.target)
		}
		res, err := inRounds(ctx, all, workload, admissionWorkers, cfg.Creates, cfg.Rounds, admissionBatch(mode))
		if etcd != nil {
			admissionRatios(res[0], res[1:])
			res = res[1:]
		}
		for i, r := range res {
			if r.Target != "" {
				res[i].Notes = r.Notes + "; " + installs[i].notes
				if installs[i].webhook != nil {
					res[i].Notes += fmt.Sprintf("; the webhook answered %d reviews", hook.count(strconv.Itoa(i))-reviews0[i])
				}
				res[i].Notes += pluginNotes(plugins0[i], admissionPluginTimes(ctx, runners[i].target))
				*rows[i] = append(*rows[i], res[i])
			}
		}
		for i, r := range runners {
			install := installs[i]
			rctx := context.WithoutCancel(ctx)
			if rerr := install.remove(rctx, clients[i]); rerr != nil && err == nil {
				err = fmt.Errorf("%s: admission=%s: remove: %w", r.target.Name(), mode, rerr)
			}
			if err == nil {
				if aerr := install.await(ctx, r, clients[i], &probes, false); aerr != nil {
					err = fmt.Errorf("%s: admission=%s: removal: %w", r.target.Name(), mode, aerr)
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// admissionBatch creates samples MODE-s-from .. MODE-s-(to-1) in
// nsAdmission.
func admissionBatch(mode string) batchFunc {
	return func(ctx context.Context, r *runner, label string, from, to int) (latencies, time.Duration, error) {
		return r.parallel(ctx, label, to-from, admissionWorkers, func(ctx context.Context, i int) error {
			name := fmt.Sprintf("%s-s-%d", mode, from+i)
			_, err := r.target.Create(ctx, nsAdmission, name, r.sample(nsAdmission, name))
			return err
		})
	}
}

// admissionRatios gives the rows of an admission workload their ratio
// against raw etcd's creates in the same rounds (etcd has no admission,
// so it is the same baseline for every mode): per-round ratios, their
// median and range, as addRatios does for the create rows.
func admissionRatios(etcd Result, rows []Result) {
	for i, r := range rows {
		if r.Target == "" || len(r.RoundOpsPerSec) == 0 || len(r.RoundOpsPerSec) != len(etcd.RoundOpsPerSec) {
			continue
		}
		ratios := make([]float64, 0, len(r.RoundOpsPerSec))
		for k, v := range r.RoundOpsPerSec {
			if etcd.RoundOpsPerSec[k] > 0 {
				ratios = append(ratios, v/etcd.RoundOpsPerSec[k])
			}
		}
		if len(ratios) > 0 {
			rows[i].VsEtcdRounds = ratios
			rows[i].VsEtcd, rows[i].VsEtcdMin, rows[i].VsEtcdMax = medianSpread(ratios)
		}
		rows[i].Notes = r.Notes + "; vs raw etcd's creates at 16 workers in the same rounds (raw etcd has no admission)"
	}
}

// admissionInstall is what one mode installs on a target.
type admissionInstall struct {
	mode    string
	webhook *admissionregistrationv1.ValidatingWebhookConfiguration
	policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// probeConfigMaps: the configuration matches configmaps, so the
	// probes are configmaps (created through the clientset).
	probeConfigMaps bool
	// notes describe the mode in its row.
	notes string
}

// admissionObjects builds what mode installs: webhook configurations
// call hook at the path of key.
func admissionObjects(mode string, gvr schema.GroupVersionResource, hook *webhookServer, key string) admissionInstall {
	fail := admissionregistrationv1.Fail
	rule := func(group, version, resource string) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}},
		}
	}
	webhook := func(r admissionregistrationv1.RuleWithOperations) *admissionregistrationv1.ValidatingWebhookConfiguration {
		none := admissionregistrationv1.SideEffectClassNone
		timeout := int32(10)
		url := hook.url + "/" + key
		return &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: admissionObjectName},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name:                    admissionWebhookName,
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: hook.caPEM},
				Rules:                   []admissionregistrationv1.RuleWithOperations{r},
				FailurePolicy:           &fail,
				SideEffects:             &none,
				TimeoutSeconds:          &timeout,
				AdmissionReviewVersions: []string{"v1"},
			}},
		}
	}
	switch mode {
	case AdmissionWebhook:
		return admissionInstall{mode: mode, webhook: webhook(rule(gvr.Group, gvr.Version, gvr.Resource)),
			notes: "one validating webhook matching " + gvr.Resource + " (HTTPS to the bench process, allows)"}
	case AdmissionWebhookUnmatched:
		return admissionInstall{mode: mode, webhook: webhook(rule("", "v1", "configmaps")), probeConfigMaps: true,
			notes: "one validating webhook matching configmaps only (" + gvr.Resource + " not matched)"}
	case AdmissionPolicy:
		r := rule(gvr.Group, gvr.Version, gvr.Resource)
		return admissionInstall{mode: mode,
			policy: &admissionregistrationv1.ValidatingAdmissionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: admissionObjectName},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
					FailurePolicy: &fail,
					MatchConstraints: &admissionregistrationv1.MatchResources{
						ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: r}},
					},
					Validations: []admissionregistrationv1.Validation{{Expression: policyExpression, Message: probeMessage}},
				},
			},
			binding: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: admissionObjectName},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
					PolicyName:        admissionObjectName,
					ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				},
			},
			notes: "one ValidatingAdmissionPolicy + binding matching " + gvr.Resource + " (one CEL expression, passes)"}
	default:
		return admissionInstall{mode: mode, notes: "nothing installed"}
	}
}

// apply creates the mode's objects on a target (replacing leftovers of an
// earlier run of the same names).
func (a admissionInstall) apply(ctx context.Context, c kubernetes.Interface) error {
	ar := c.AdmissionregistrationV1()
	if err := a.remove(ctx, c); err != nil {
		return err
	}
	if a.webhook != nil {
		if _, err := ar.ValidatingWebhookConfigurations().Create(ctx, a.webhook, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if a.policy != nil {
		if _, err := ar.ValidatingAdmissionPolicies().Create(ctx, a.policy, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if a.binding != nil {
		if _, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, a.binding, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes the mode's objects from a target, if present.
func (a admissionInstall) remove(ctx context.Context, c kubernetes.Interface) error {
	ar := c.AdmissionregistrationV1()
	var errs []error
	ignore := func(err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if a.binding != nil {
		ignore(ar.ValidatingAdmissionPolicyBindings().Delete(ctx, a.binding.Name, metav1.DeleteOptions{}))
	}
	if a.policy != nil {
		ignore(ar.ValidatingAdmissionPolicies().Delete(ctx, a.policy.Name, metav1.DeleteOptions{}))
	}
	if a.webhook != nil {
		ignore(ar.ValidatingWebhookConfigurations().Delete(ctx, a.webhook.Name, metav1.DeleteOptions{}))
	}
	return errors.Join(errs...)
}

// await polls with probes until the mode's objects are in effect on the
// target (installed: a probe is denied with probeMessage) or no longer
// (installed false: a probe is admitted), at most admissionEffectTimeout:
// new configurations reach the server's admission plugins through
// informers, a moment after they are stored. Probes are samples named
// probePrefix+N created through the target's own door (so that an
// in-process target is probed in-process), or configmaps for a
// configuration that matches configmaps. Mode none has nothing to wait
// for.
func (a admissionInstall) await(ctx context.Context, r *runner, c kubernetes.Interface, probes *atomic.Int64, installed bool) error {
	if a.webhook == nil && a.policy == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, admissionEffectTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		name := fmt.Sprintf("%s%d", probePrefix, probes.Add(1))
		var err error
		if a.probeConfigMaps {
			_, err = c.CoreV1().ConfigMaps(nsAdmission).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		} else {
			_, err = r.target.Create(ctx, nsAdmission, name, r.sample(nsAdmission, name))
		}
		denied := err != nil && strings.Contains(err.Error(), probeMessage)
		switch {
		case installed && denied, !installed && err == nil:
			return nil
		case err != nil && !denied && ctx.Err() == nil:
			last = err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			what := "a probe denied (installed)"
			if !installed {
				what = "a probe admitted (removed)"
			}
			if last != nil {
				return fmt.Errorf("not in effect after %s, waiting for %s; last error: %w", admissionEffectTimeout, what, last)
			}
			return fmt.Errorf("not in effect after %s, waiting for %s", admissionEffectTimeout, what)
		}
	}
}

// webhookServer is the validating webhook of the admission workloads: an
// HTTPS server on 127.0.0.1 with a self-signed certificate (its caPEM goes
// into the configurations' caBundle) that allows every AdmissionReview
// except for objects named probePrefix*.
type webhookServer struct {
	url   string // https://127.0.0.1:PORT/validate; the webhook is at url/KEY
	caPEM []byte
	srv   *http.Server
	// reviews counts the reviews answered, by KEY.
	mu      sync.Mutex
	reviews map[string]int64
}

// count returns the number of reviews answered at url/key.
func (w *webhookServer) count(key string) int64 {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reviews[key]
}

// startWebhook starts the webhook server.
func startWebhook() (*webhookServer, error) {
	cert, caPEM, err := selfSignedCert()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &webhookServer{url: "https://" + l.Addr().String() + "/validate", caPEM: caPEM, reviews: map[string]int64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /validate/{key}", w.validate)
	w.srv = &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = w.srv.ServeTLS(l, "", "") }()
	return w, nil
}

func (w *webhookServer) close() { _ = w.srv.Close() }

// validate answers an AdmissionReview v1: allowed, unless the object's
// name starts with probePrefix (403 with probeMessage).
func (w *webhookServer) validate(rw http.ResponseWriter, req *http.Request) {
	var review admissionv1.AdmissionReview
	body, err := io.ReadAll(io.LimitReader(req.Body, 3<<20))
	if err == nil {
		err = json.Unmarshal(body, &review)
	}
	if err != nil || review.Request == nil {
		http.Error(rw, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.reviews[req.PathValue("key")]++
	w.mu.Unlock()
	var obj metav1.PartialObjectMetadata
	_ = json.Unmarshal(review.Request.Object.Raw, &obj)
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	if strings.HasPrefix(obj.Name, probePrefix) {
		resp.Allowed = false
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: probeMessage}
	}
	out, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write(out)
}

// selfSignedCert returns a self-signed CA certificate for 127.0.0.1 (its
// own root: the PEM is the caBundle) and its TLS form.
func selfSignedCert() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "customapi bench webhook"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return cert, certPEM, err
}

// validatingPlugins are the dynamic validating plugins whose time the
// admission rows report, from the server's metrics.
var validatingPlugins = []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook"}

// pluginTime is a plugin's accumulated time and calls on CREATE.
type pluginTime struct {
	seconds float64
	calls   float64
}

// metricsReader is a target whose server's /metrics it can read.
type metricsReader interface {
	metricsText(ctx context.Context) (string, error)
}

func (t *httpTarget) metricsText(ctx context.Context) (string, error) {
	return t.getBody(ctx, "/metrics")
}

func (t *inprocessTarget) metricsText(ctx context.Context) (string, error) {
	if t.served == nil {
		return "", errors.New("no server")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.served.base+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := t.served.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(body), nil
}

// admissionPluginTimes reads, from the target's server, the time and
// calls of each validating plugin on CREATE so far (upstream's
// apiserver_admission_controller_admission_duration_seconds, which wraps
// every plugin of the chain: the time spent in the plugin, matching
// included); nil when the server's metrics cannot be read.
func admissionPluginTimes(ctx context.Context, t Target) map[string]pluginTime {
	m, ok := t.(metricsReader)
	if !ok {
		return nil
	}
	text, err := m.metricsText(ctx)
	if err != nil {
		return nil
	}
	const metric = "apiserver_admission_controller_admission_duration_seconds"
	out := map[string]pluginTime{}
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, metric+"_")
		if !ok || !strings.Contains(rest, `operation="CREATE"`) || !strings.Contains(rest, `type="validate"`) {
			continue
		}
		for _, name := range validatingPlugins {
			if !strings.Contains(rest, `name="`+name+`"`) {
				continue
			}
			f := strings.Fields(rest)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				continue
			}
			pt := out[name]
			switch {
			case strings.HasPrefix(rest, "sum{"):
				pt.seconds += v
			case strings.HasPrefix(rest, "count{"):
				pt.calls += v
			}
			out[name] = pt
		}
	}
	return out
}

// pluginNotes says how long each validating plugin took per create in
// the server between two readings of its metrics ("" without them).
func pluginNotes(before, after map[string]pluginTime) string {
	if before == nil || after == nil {
		return ""
	}
	var parts []string
	for _, name := range validatingPlugins {
		calls := after[name].calls - before[name].calls
		if calls <= 0 {
			continue
		}
		mean := time.Duration((after[name].seconds - before[name].seconds) / calls * float64(time.Second))
		parts = append(parts, fmt.Sprintf("%s %s", name, dur(mean)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; in the server, mean per create: " + strings.Join(parts, ", ")
}

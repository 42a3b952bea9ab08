package controllers

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/customapi/customapi/internal/pki"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
)

// replicasValidator is the validating webhook a kubebuilder project would
// write for customs: more than 5 replicas are denied, more than 3 warned
// about.
type replicasValidator struct{}

func (replicasValidator) validate(c *testv1.Custom) (admission.Warnings, error) {
	switch {
	case c.Spec.Replicas > 5:
		return nil, fmt.Errorf("spec.replicas %d is over 5", c.Spec.Replicas)
	case c.Spec.Replicas > 3:
		return admission.Warnings{"spec.replicas above 3 costs extra"}, nil
	}
	return nil, nil
}

func (v replicasValidator) ValidateCreate(_ context.Context, c *testv1.Custom) (admission.Warnings, error) {
	return v.validate(c)
}

func (v replicasValidator) ValidateUpdate(_ context.Context, _, c *testv1.Custom) (admission.Warnings, error) {
	return v.validate(c)
}

func (replicasValidator) ValidateDelete(context.Context, *testv1.Custom) (admission.Warnings, error) {
	return nil, nil
}

// teamDefaulter is the mutating webhook of the same project: it sets the
// label team=platform when the custom has none.
type teamDefaulter struct{}

func (teamDefaulter) Default(_ context.Context, c *testv1.Custom) error {
	if c.Labels["team"] == "" {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels["team"] = "platform"
	}
	return nil
}

// warningsOf collects the Warning headers of a client's responses.
type warningsOf struct{ msg []string }

func (w *warningsOf) HandleWarningHeader(_ int, _ string, text string) { w.msg = append(w.msg, text) }

// servingCert writes a CA and a serving certificate for 127.0.0.1 signed by
// it into dir as tls.crt and tls.key (the names controller-runtime's
// webhook server reads, as cert-manager mounts them) and returns the CA's
// PEM, for the webhooks' caBundle.
func servingCert(t *testing.T, dir string) []byte {
	t.Helper()
	ca, err := pki.NewCA(pki.Spec{CommonName: "webhook-ca", Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.IssueServing(pki.Spec{CommonName: "webhook", IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteKeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), kp.Cert.Raw, kp.Key); err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// TestWebhookServer: controller-runtime's webhook server, built by a
// manager as a kubebuilder project builds it (WebhookManagedBy with a
// Validator and a Defaulter, certificates in a CertDir), serves webhooks
// that customapi calls, registered by url in a Validating and a Mutating
// WebhookConfiguration matching customs labelled for this test: its denial
// reaches the client with its message, its warnings as Warning headers, its
// default in the stored object.
func TestWebhookServer(t *testing.T) {
	ctx := t.Context()
	test := uniqueName(t, "webhook")
	certDir := t.TempDir()
	caBundle := servingCert(t, certDir)
	_, portText, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	opts := managerOptions()
	opts.WebhookServer = webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir})
	mgr, err := ctrl.NewManager(srv.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &testv1.Custom{}).
		WithValidator(replicasValidator{}).
		WithDefaulter(teamDefaulter{}).
		Complete(); err != nil {
		t.Fatal(err)
	}
	startManager(t, mgr)
	customapitest.Eventually(t, 30*time.Second, "webhook server serving", func(context.Context) (bool, error) {
		return mgr.GetWebhookServer().StartedChecker()(&http.Request{}) == nil, nil
	})

	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"test"}, APIVersions: []string{"v1"}, Resources: []string{"customs"}},
	}}
	objects := &metav1.LabelSelector{MatchLabels: map[string]string{testLabel: test}}
	regs := kube.AdmissionregistrationV1()
	vwc, err := regs.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: test},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "vcustom.kb.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + "/validate-test-v1-custom"), CABundle: caBundle},
			Rules:                   rules,
			ObjectSelector:          objects,
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = regs.ValidatingWebhookConfigurations().Delete(context.Background(), vwc.Name, metav1.DeleteOptions{})
	})
	mwc, err := regs.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: test},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "mcustom.kb.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + "/mutate-test-v1-custom"), CABundle: caBundle},
			Rules:                   rules,
			ObjectSelector:          objects,
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = regs.MutatingWebhookConfigurations().Delete(context.Background(), mwc.Name, metav1.DeleteOptions{})
	})

	warned := &warningsOf{}
	cfg := rest.CopyConfig(srv.Config)
	cfg.WarningHandler = warned
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	custom := func(name string, replicas int32) *testv1.Custom {
		obj := &testv1.Custom{}
		obj.Name, obj.GenerateName, obj.Namespace = name, "", namespace
		if name == "" {
			obj.GenerateName = test + "-probe-"
		}
		obj.Labels = map[string]string{testLabel: test}
		obj.Spec.Replicas = replicas
		return obj
	}
	const denied = `admission webhook "vcustom.kb.io" denied the request: spec.replicas 6 is over 5`
	customapitest.Eventually(t, 30*time.Second, "webhooks in effect", func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, custom("", 6))
		return err != nil && strings.Contains(err.Error(), denied), err
	})

	over := custom(test+"-six", 6)
	err = c.Create(ctx, over)
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusForbidden || se.ErrStatus.Message != denied {
		t.Fatalf("create with 6 replicas: %v, want 403 %q", err, denied)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(over), &testv1.Custom{}); !apierrors.IsNotFound(err) {
		t.Fatalf("denied custom: get %v, want NotFound", err)
	}

	four := custom(test+"-four", 4)
	if err := c.Create(ctx, four); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), four) })
	if !slices.Contains(warned.msg, "spec.replicas above 3 costs extra") {
		t.Errorf("warnings %q, want the validator's", warned.msg)
	}
	var got testv1.Custom
	if err := c.Get(ctx, client.ObjectKeyFromObject(four), &got); err != nil {
		t.Fatal(err)
	}
	if got.Labels["team"] != "platform" {
		t.Errorf("stored labels %v, want the defaulter's team=platform", got.Labels)
	}

	// An update is validated too.
	got.Spec.Replicas = 7
	if err := c.Update(ctx, &got); err == nil || !strings.Contains(err.Error(), "spec.replicas 7 is over 5") {
		t.Errorf("update to 7 replicas: %v, want the webhook's denial", err)
	}
}

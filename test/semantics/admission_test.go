package semantics_test

// Admission through both doors: webhooks, validating
// and mutating admission policies, a webhook's matchPolicy across
// a kind's versions, reinvocation, a policy's audit annotations and its
// authorizer checks, static manifests, and the namespace lifecycle as a
// plugin of the chain. Each test has a server of its own: webhooks and
// policies are server-wide.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1"
	"github.com/customapi/customapi/examples/fleet/fleetapi"
	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/options"
	"github.com/customapi/customapi/pkg/resource"
)

// requireNotStored fails unless name is not found in ns, through c.
func requireNotStored(t *testing.T, c customsClient, name string) {
	t.Helper()
	_, err := c.Get(t.Context(), name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("get %s after a refused or dry-run write: %v, want NotFound", name, err)
	}
}

// probe returns a custom with a generated name, for polls.
func probe(replicas int32, message string) *testv1.Custom {
	return &testv1.Custom{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}, Spec: testv1.CustomSpec{Message: message, Replicas: replicas}}
}

// Webhook names of TestAdmissionWebhooks.
const (
	denyHook   = "deny-forbidden.test.example.com"
	mutateHook = "add-label.test.example.com"
	hangHook   = "hang.test.example.com"
	allowHook  = "dry-run-aware.test.example.com"
	bigHook    = "big.test.example.com"
	allHook    = "all.test.example.com"
)

// TestAdmissionWebhooks runs through both doors: a validating webhook
// denying spec.message containing "forbidden" and a mutating webhook adding
// the label mutated=true, both for customs in namespaces labelled
// policy=on; a webhook that times out; the webhook server stopped with
// failurePolicy Fail, then Ignore; a catch-all webhook that is down cannot
// lock the operator out of the admissionregistration objects.
func TestAdmissionWebhooks(t *testing.T) {
	a := startAdmissionServer(t, nil)
	hook := startWebhookServer(t)
	ctx := t.Context()
	on := map[string]string{"policy": "on"}
	regs := a.kube.AdmissionregistrationV1()
	// A webhook declaring sideEffects NoneOnDryRun: called on dry runs
	// too, with dryRun set (it promises to have no side effects then).
	dryRunAware := validatingWebhook(allowHook, hook, "/allow", on, admissionregistrationv1.Fail, 5)
	dryRunAware.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)
	// A webhook with a match condition: called only for over 100 replicas.
	big := validatingWebhook(bigHook, hook, "/big", on, admissionregistrationv1.Fail, 5)
	big.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "big", Expression: "object.spec.replicas > 100"}}

	vwc, err := regs.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "w1-validate"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			validatingWebhook(denyHook, hook, "/validate", on, admissionregistrationv1.Fail, 5),
			dryRunAware,
			big,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mwc, err := regs.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "w1-mutate"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			mutatingWebhook(mutateHook, hook, "/mutate", on, admissionregistrationv1.Fail),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	probeNS := a.namespace(t, on)
	probes := a.doors[1].customs(probeNS)
	customapitest.Eventually(t, effectTimeout, "both webhooks called", func(ctx context.Context) (bool, error) {
		_, err := probes.Create(ctx, probe(1, "forbidden probe"), metav1.CreateOptions{})
		if err == nil {
			return false, nil
		}
		return strings.Contains(err.Error(), denyHook) && hook.callsTo("/mutate", probeNS) > 0, err
	})

	forDoors(t, a.doors, func(t *testing.T, d door) {
		ns, other := a.namespace(t, on), a.namespace(t, nil)
		c := d.customs(ns)

		bad := custom("bad")
		bad.Spec.Message = "this is forbidden"
		_, err := c.Create(t.Context(), bad, metav1.CreateOptions{})
		customapitest.RequireCode(t, err, http.StatusForbidden, `admission webhook "`+denyHook+`" denied the request: `+denyMessage)
		requireNotStored(t, c, "bad")

		good := create(t, c, custom("good"))
		if good.Labels["mutated"] != "true" {
			t.Errorf("create answered labels %v, want mutated=true", good.Labels)
		}
		got, err := c.Get(t.Context(), "good", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Labels["mutated"] != "true" {
			t.Errorf("get answered labels %v, want mutated=true", got.Labels)
		}
		if l := a.storedLabels(t, ns, "good"); l["mutated"] != "true" {
			t.Errorf("etcd holds labels %v, want mutated=true", l)
		}

		// An update is matched too.
		got.Spec.Message = "now forbidden"
		_, err = c.Update(t.Context(), got, metav1.UpdateOptions{})
		customapitest.RequireCode(t, err, http.StatusForbidden, `admission webhook "`+denyHook+`" denied the request`)

		// matchConditions: the big webhook is called for over 100
		// replicas only.
		if n := hook.callsTo("/big", ns); n != 0 {
			t.Errorf("webhook %s called %d times for 1 replica", bigHook, n)
		}
		huge := custom("huge")
		huge.Spec.Replicas = 101
		create(t, c, huge)
		if n := hook.callsTo("/big", ns); n != 1 {
			t.Errorf("webhook %s called %d times for 101 replicas, want 1", bigHook, n)
		}

		// dry run: every webhook (sideEffects None or NoneOnDryRun) is
		// called with dryRun set; the answer is mutated, nothing is stored.
		v, m, aw := hook.dryRunCalls("/validate"), hook.dryRunCalls("/mutate"), hook.dryRunCalls("/allow")
		dry, err := c.Create(t.Context(), custom("dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		if dry.Labels["mutated"] != "true" {
			t.Errorf("dry-run create answered labels %v, want mutated=true", dry.Labels)
		}
		requireNotStored(t, c, "dry")
		if hook.dryRunCalls("/validate") != v+1 || hook.dryRunCalls("/mutate") != m+1 || hook.dryRunCalls("/allow") != aw+1 {
			t.Errorf("dry-run calls validate %d->%d, mutate %d->%d, allow %d->%d, want one each", v, hook.dryRunCalls("/validate"), m, hook.dryRunCalls("/mutate"), aw, hook.dryRunCalls("/allow"))
		}
		bad.Name = "dry-bad"
		_, err = c.Create(t.Context(), bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		customapitest.RequireCode(t, err, http.StatusForbidden, `admission webhook "`+denyHook+`" denied the request`)

		// Another namespace: neither webhook is called.
		free := custom("free")
		free.Spec.Message = "forbidden is fine here"
		out := create(t, d.customs(other), free)
		if _, ok := out.Labels["mutated"]; ok {
			t.Errorf("unmatched create labelled %v", out.Labels)
		}
		for _, path := range []string{"/validate", "/mutate", "/allow", "/big"} {
			if n := hook.callsTo(path, other); n != 0 {
				t.Errorf("webhook %s called %d times for namespace %s", path, n, other)
			}
		}
	})

	// v1 webhooks must declare no side effects (None or NoneOnDryRun), as
	// kube's validation requires: dry-run requests can then call them all.
	withEffects := validatingWebhook("effects.test.example.com", hook, "/validate", on, admissionregistrationv1.Fail, 5)
	withEffects.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
	_, err = regs.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "w1-effects"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{withEffects},
	}, metav1.CreateOptions{})
	customapitest.RequireReason(t, err, metav1.StatusReasonInvalid)

	t.Run("timeout", func(t *testing.T) {
		slow := map[string]string{"policy": "slow"}
		if _, err := regs.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "w1-hang"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{
				validatingWebhook(hangHook, hook, "/hang", slow, admissionregistrationv1.Fail, 1),
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		slowProbes := a.doors[1].customs(a.namespace(t, slow))
		customapitest.Eventually(t, effectTimeout, "hanging webhook called", func(ctx context.Context) (bool, error) {
			_, err := slowProbes.Create(ctx, probe(1, ""), metav1.CreateOptions{})
			return err != nil && strings.Contains(err.Error(), "failed calling webhook"), err
		})
		forDoors(t, a.doors, func(t *testing.T, d door) {
			c := d.customs(a.namespace(t, slow))
			start := time.Now()
			_, err := c.Create(t.Context(), custom("slow"), metav1.CreateOptions{})
			// A bound on the hang: the webhook's 1 s applies, not the
			// default 10 s.
			if el := time.Since(start); el > 8*time.Second {
				t.Errorf("refused after %s, want about timeoutSeconds (1 s)", el)
			}
			customapitest.RequireCode(t, err, http.StatusInternalServerError, `failed calling webhook "`+hangHook+`"`)
			requireNotStored(t, c, "slow")
		})
	})

	t.Run("stopped", func(t *testing.T) {
		hook.stop()
		t.Run("fail", func(t *testing.T) {
			forDoors(t, a.doors, func(t *testing.T, d door) {
				c := d.customs(a.namespace(t, on))
				// The mutating webhook is called first.
				_, err := c.Create(t.Context(), custom("down"), metav1.CreateOptions{})
				customapitest.RequireCode(t, err, http.StatusInternalServerError, `failed calling webhook "`+mutateHook+`"`)
				requireNotStored(t, c, "down")
				// An unmatched write never calls it.
				create(t, d.customs(a.namespace(t, nil)), custom("elsewhere"))
			})
		})

		// The configurations can still be changed: to failurePolicy Ignore.
		cur, err := regs.MutatingWebhookConfigurations().Get(ctx, mwc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		if _, err := regs.MutatingWebhookConfigurations().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update the mutating webhook configuration of a stopped webhook: %v", err)
		}
		curv, err := regs.ValidatingWebhookConfigurations().Get(ctx, vwc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range curv.Webhooks {
			curv.Webhooks[i].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		}
		if _, err := regs.ValidatingWebhookConfigurations().Update(ctx, curv, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update the validating webhook configuration of a stopped webhook: %v", err)
		}
		customapitest.Eventually(t, effectTimeout, "failurePolicy Ignore in effect", func(ctx context.Context) (bool, error) {
			_, err := probes.Create(ctx, probe(1, "forbidden, but nobody checks"), metav1.CreateOptions{})
			return err == nil, err
		})
		t.Run("ignore", func(t *testing.T) {
			forDoors(t, a.doors, func(t *testing.T, d door) {
				c := d.customs(a.namespace(t, on))
				out := create(t, c, custom("ignored"))
				if _, ok := out.Labels["mutated"]; ok {
					t.Errorf("labels %v from a stopped webhook", out.Labels)
				}
			})
		})
	})

	t.Run("catch-all-down", func(t *testing.T) {
		// A validating webhook of every resource, down, failurePolicy
		// Fail: writes fail, but not those of the admissionregistration
		// objects (exempt, as in kube), so the operator can remove it.
		cm := a.namespace(t, nil)
		all := validatingWebhook(allHook, hook, "/validate", nil, admissionregistrationv1.Fail, 2)
		all.NamespaceSelector = nil
		all.Rules = []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}},
		}}
		if _, err := regs.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "w1-all"},
			Webhooks:   []admissionregistrationv1.ValidatingWebhook{all},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		configMap := func(ctx context.Context) error {
			_, err := a.kube.CoreV1().ConfigMaps(cm).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}}, metav1.CreateOptions{})
			return err
		}
		customapitest.Eventually(t, effectTimeout, "catch-all webhook refusing writes", func(ctx context.Context) (bool, error) {
			err := configMap(ctx)
			return err != nil && strings.Contains(err.Error(), `failed calling webhook "`+allHook+`"`), err
		})
		cur, err := regs.ValidatingWebhookConfigurations().Get(ctx, "w1-all", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Labels = map[string]string{"broken": "true"}
		if _, err := regs.ValidatingWebhookConfigurations().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update the catch-all configuration: %v", err)
		}
		for _, name := range []string{"w1-all", vwc.Name} {
			if err := regs.ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete %s: %v", name, err)
			}
		}
		if err := regs.MutatingWebhookConfigurations().Delete(ctx, mwc.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete %s: %v", mwc.Name, err)
		}
		customapitest.Eventually(t, effectTimeout, "writes after the catch-all webhook's removal", func(ctx context.Context) (bool, error) {
			err := configMap(ctx)
			return err == nil, err
		})
	})
}

// Policy and binding names of TestAdmissionPolicies.
const (
	limitPolicy  = "replicas-limit"
	limitBinding = "replicas-limit-dev"
	typoPolicy   = "typo"
	typoBinding  = "typo-on"
	teamPolicy   = "team-label"
)

// TestAdmissionPolicies runs through both doors: a
// ValidatingAdmissionPolicy with a ConfigMap param (max "3") bound to
// namespaces labelled env=dev denies replicas over the limit with its
// messageExpression, then, bound with validationActions [Warn], warns; a
// binding selecting several params must pass them all; a policy with a
// param of a user's kind (a Custom) read through a variable; a
// policy whose expression does not type-check shows it in its status and,
// with failurePolicy Fail, denies; a MutatingAdmissionPolicy sets the label
// team from the namespace's (ApplyConfiguration) and an annotation
// (JSONPatch).
func TestAdmissionPolicies(t *testing.T) {
	a := startAdmissionServer(t, nil)
	ctx := t.Context()
	regs := a.kube.AdmissionregistrationV1()
	dev := map[string]string{"env": "dev"}
	customsMatch := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: customsRules()[0],
	}}}

	paramsNS := a.namespace(t, nil)
	if _, err := a.kube.CoreV1().ConfigMaps(paramsNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Data: map[string]string{"max": "3"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := regs.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: limitPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			ParamKind:        &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: customsMatch,
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "object.spec.replicas <= int(params.data.max)",
				MessageExpression: "'replicas must be at most ' + params.data.max",
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding, err := regs.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: limitBinding},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: limitPolicy,
			ParamRef: &admissionregistrationv1.ParamRef{
				Name: "limits", Namespace: paramsNS,
				ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction),
			},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: selector(dev)},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const denied = "ValidatingAdmissionPolicy '" + limitPolicy + "' with binding '" + limitBinding + "' denied request: replicas must be at most 3"
	probes := a.doors[1].customs(a.namespace(t, dev))
	customapitest.Eventually(t, effectTimeout, "policy in effect", func(ctx context.Context) (bool, error) {
		_, err := probes.Create(ctx, probe(4, ""), metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), denied), err
	})

	t.Run("deny", func(t *testing.T) {
		forDoors(t, a.doors, func(t *testing.T, d door) {
			c := d.customs(a.namespace(t, dev))
			over := custom("four")
			over.Spec.Replicas = 4
			_, err := c.Create(t.Context(), over, metav1.CreateOptions{})
			customapitest.RequireReason(t, err, metav1.StatusReasonInvalid)
			customapitest.RequireCode(t, err, http.StatusUnprocessableEntity, denied)
			requireNotStored(t, c, "four")

			at := custom("three")
			at.Spec.Replicas = 3
			got := create(t, c, at)
			got.Spec.Replicas = 4
			_, err = c.Update(t.Context(), got, metav1.UpdateOptions{})
			customapitest.RequireCode(t, err, http.StatusUnprocessableEntity, denied)

			elsewhere := custom("ten")
			elsewhere.Spec.Replicas = 10
			create(t, d.customs(a.namespace(t, nil)), elsewhere)
		})
	})

	t.Run("warn", func(t *testing.T) {
		cur, err := regs.ValidatingAdmissionPolicyBindings().Get(ctx, binding.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
		if _, err := regs.ValidatingAdmissionPolicyBindings().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		customapitest.Eventually(t, effectTimeout, "binding in Warn mode", func(ctx context.Context) (bool, error) {
			_, err := probes.Create(ctx, probe(4, ""), metav1.CreateOptions{})
			return err == nil, err
		})
		const warned = "Validation failed for ValidatingAdmissionPolicy '" + limitPolicy + "' with binding '" + limitBinding + "': replicas must be at most 3"
		forDoors(t, a.doors, func(t *testing.T, d door) {
			c, warnCtx, rec := warnedCustoms(t, d, a.namespace(t, dev))
			over := custom("five")
			over.Spec.Replicas = 5
			if _, err := c.Create(warnCtx(t.Context()), over, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if w := rec.since(0); len(w) != 1 || w[0] != warned {
				t.Errorf("warnings %q, want [%q]", w, warned)
			}
		})
	})

	t.Run("param-selector", func(t *testing.T) {
		// A binding whose paramRef selects several config maps: each is
		// a param, the write must pass all of them.
		selNS := a.namespace(t, nil)
		for name, max := range map[string]string{"loose": "5", "strict": "2"} {
			if _, err := a.kube.CoreV1().ConfigMaps(selNS).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"limits": "team"}}, Data: map[string]string{"max": max},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		bySelector := map[string]string{"env": "selector"}
		if _, err := regs.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "replicas-limit-selector"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: limitPolicy,
				ParamRef: &admissionregistrationv1.ParamRef{
					Namespace: selNS, Selector: selector(map[string]string{"limits": "team"}),
					ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction),
				},
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: selector(bySelector)},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		const deniedBySelector = "ValidatingAdmissionPolicy '" + limitPolicy + "' with binding 'replicas-limit-selector' denied request: replicas must be at most 2"
		selProbes := a.doors[1].customs(a.namespace(t, bySelector))
		customapitest.Eventually(t, effectTimeout, "binding with a param selector in effect", func(ctx context.Context) (bool, error) {
			_, err := selProbes.Create(ctx, probe(3, ""), metav1.CreateOptions{})
			return err != nil && strings.Contains(err.Error(), deniedBySelector), err
		})
		forDoors(t, a.doors, func(t *testing.T, d door) {
			c := d.customs(a.namespace(t, bySelector))
			over := custom("three")
			over.Spec.Replicas = 3
			_, err := c.Create(t.Context(), over, metav1.CreateOptions{})
			customapitest.RequireCode(t, err, http.StatusUnprocessableEntity, deniedBySelector)
			at := custom("two")
			at.Spec.Replicas = 2
			create(t, c, at)
		})
	})

	t.Run("user-params", func(t *testing.T) {
		// Params of a user's kind (customs themselves), read through a
		// variable.
		userParams := map[string]string{"env": "user-params"}
		limitsNS := a.namespace(t, nil)
		limits := custom("limits")
		limits.Spec.Replicas = 2
		create(t, a.doors[0].customs(limitsNS), limits)
		if _, err := regs.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "custom-params"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
				ParamKind:        &admissionregistrationv1.ParamKind{APIVersion: "test/v1", Kind: "Custom"},
				MatchConstraints: customsMatch,
				Variables:        []admissionregistrationv1.Variable{{Name: "max", Expression: "params.spec.replicas"}},
				Validations: []admissionregistrationv1.Validation{{
					Expression:        "object.spec.replicas <= variables.max",
					MessageExpression: "'replicas must be at most ' + string(variables.max) + ' (custom ' + params.metadata.name + ')'",
				}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := regs.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "custom-params"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: "custom-params",
				ParamRef: &admissionregistrationv1.ParamRef{
					Name: "limits", Namespace: limitsNS,
					ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction),
				},
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: selector(userParams)},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		const deniedByCustom = "ValidatingAdmissionPolicy 'custom-params' with binding 'custom-params' denied request: replicas must be at most 2 (custom limits)"
		userProbes := a.doors[1].customs(a.namespace(t, userParams))
		customapitest.Eventually(t, effectTimeout, "policy with custom params in effect", func(ctx context.Context) (bool, error) {
			_, err := userProbes.Create(ctx, probe(3, ""), metav1.CreateOptions{})
			return err != nil && strings.Contains(err.Error(), deniedByCustom), err
		})
		forDoors(t, a.doors, func(t *testing.T, d door) {
			c := d.customs(a.namespace(t, userParams))
			over := custom("three")
			over.Spec.Replicas = 3
			_, err := c.Create(t.Context(), over, metav1.CreateOptions{})
			customapitest.RequireCode(t, err, http.StatusUnprocessableEntity, deniedByCustom)
			at := custom("two")
			at.Spec.Replicas = 2
			create(t, c, at)
		})
	})

	t.Run("type-check", func(t *testing.T) {
		// A syntax error is refused at create, as kube refuses it.
		_, err := regs.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "syntax"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: customsMatch,
				Validations:      []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <="}},
			},
		}, metav1.CreateOptions{})
		customapitest.RequireReason(t, err, metav1.StatusReasonInvalid)

		// A field customs do not have compiles, fails the type check
		// (status.typeChecking) and, at run time, denies (Fail).
		const typo = "object.spec.replicaz <= 3"
		if _, err := regs.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: typoPolicy},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: customsMatch,
				Validations:      []admissionregistrationv1.Validation{{Expression: typo}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		customapitest.Eventually(t, effectTimeout, "type check in the policy's status", func(ctx context.Context) (bool, error) {
			p, err := regs.ValidatingAdmissionPolicies().Get(ctx, typoPolicy, metav1.GetOptions{})
			if err != nil || p.Status.TypeChecking == nil {
				return false, err
			}
			for _, w := range p.Status.TypeChecking.ExpressionWarnings {
				if w.FieldRef == "spec.validations[0].expression" && strings.Contains(w.Warning, "replicaz") {
					return true, nil
				}
			}
			return false, errors.New("no warning naming replicaz in " + p.Status.String())
		})
		typoOn := map[string]string{"typo": "on"}
		if _, err := regs.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: typoBinding},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        typoPolicy,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: selector(typoOn)},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		const prefix = "ValidatingAdmissionPolicy '" + typoPolicy + "' with binding '" + typoBinding + "' denied request: "
		typoProbes := a.doors[1].customs(a.namespace(t, typoOn))
		customapitest.Eventually(t, effectTimeout, "policy with a typo in effect", func(ctx context.Context) (bool, error) {
			_, err := typoProbes.Create(ctx, probe(1, ""), metav1.CreateOptions{})
			return err != nil && strings.Contains(err.Error(), prefix), err
		})
		forDoors(t, a.doors, func(t *testing.T, d door) {
			c := d.customs(a.namespace(t, typoOn))
			_, err := c.Create(t.Context(), custom("c"), metav1.CreateOptions{})
			customapitest.RequireCode(t, err, http.StatusUnprocessableEntity, prefix, "replicaz")
			requireNotStored(t, c, "c")
		})
	})

	t.Run("mutating", func(t *testing.T) {
		if _, err := regs.MutatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: teamPolicy},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
				MatchConstraints:   customsMatch,
				ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
				Mutations: []admissionregistrationv1.Mutation{{
					PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
					ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
						Expression: `Object{metadata: Object.metadata{labels: {"team": namespaceObject.metadata.labels["team"]}}}`,
					},
				}, {
					PatchType: admissionregistrationv1.PatchTypeJSONPatch,
					JSONPatch: &admissionregistrationv1.JSONPatch{
						Expression: `[JSONPatch{op: "add", path: "/metadata/annotations", value: {"mutated-by": "` + teamPolicy + `"}}]`,
					},
				}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := regs.MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: teamPolicy},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
				PolicyName: teamPolicy,
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpExists}},
				}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		teamProbes := a.doors[1].customs(a.namespace(t, map[string]string{"team": "probe"}))
		customapitest.Eventually(t, effectTimeout, "mutating policy in effect", func(ctx context.Context) (bool, error) {
			out, err := teamProbes.Create(ctx, probe(1, ""), metav1.CreateOptions{})
			return err == nil && out.Labels["team"] == "probe", err
		})
		forDoors(t, a.doors, func(t *testing.T, d door) {
			c := d.customs(a.namespace(t, map[string]string{"team": "blue"}))
			out := create(t, c, custom("c"))
			if out.Labels["team"] != "blue" {
				t.Errorf("create answered labels %v, want team=blue", out.Labels)
			}
			got, err := c.Get(t.Context(), "c", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Labels["team"] != "blue" {
				t.Errorf("get answered labels %v, want team=blue", got.Labels)
			}
			if out.Annotations["mutated-by"] != teamPolicy || got.Annotations["mutated-by"] != teamPolicy {
				t.Errorf("annotations %v answered by create, %v by get, want the JSONPatch's mutated-by=%s", out.Annotations, got.Annotations, teamPolicy)
			}
			// No team label on the namespace: not matched.
			plain := create(t, d.customs(a.namespace(t, nil)), custom("c"))
			if _, ok := plain.Labels["team"]; ok {
				t.Errorf("unmatched create labelled %v", plain.Labels)
			}
		})
	})
}

// TestAdmissionNamespaceLifecycle: the namespace lifecycle is the
// NamespaceLifecycle plugin of the admission chain, through both doors: a
// server with it disabled lets a create in a missing namespace succeed; by
// default such a create is 404 NotFound.
func TestAdmissionNamespaceLifecycle(t *testing.T) {
	t.Run("disabled", func(t *testing.T) {
		a := startAdmissionServer(t, func(o *options.ServerOptions) { disableAdmissionPlugins(o, "NamespaceLifecycle") })
		forDoors(t, a.doors, func(t *testing.T, d door) {
			c := d.customs(namespace(t)) // never created
			create(t, c, custom("c"))
			if _, err := c.Get(t.Context(), "c", metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("default", func(t *testing.T) {
		a := startAdmissionServer(t, nil)
		forDoors(t, a.doors, func(t *testing.T, d door) {
			_, err := d.customs(namespace(t)).Create(t.Context(), custom("c"), metav1.CreateOptions{})
			customapitest.RequireReason(t, err, metav1.StatusReasonNotFound)
		})
	})
}

// TestAdmissionMatchPolicy: a webhook of fleets in v1alpha1 only is called
// for writes in v1 with matchPolicy Equivalent (kube's default), sent the
// object converted to v1alpha1, through both doors (one equivalent
// resource registry); with matchPolicy Exact it is not called.
func TestAdmissionMatchPolicy(t *testing.T) {
	resources := append(batteries.Resources(batteries.Options{}), fleetapi.Fleets)
	s := customapitest.StartWithOptions(t, nil, resources...)
	kube, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	a := admissionServer{srv: s, kube: kube}
	hook := startWebhookServer(t)
	regs := kube.AdmissionregistrationV1()
	alphaFleets := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"fleet.example.com"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"fleets"}},
	}}
	var hooks []admissionregistrationv1.ValidatingWebhook
	for _, mp := range []admissionregistrationv1.MatchPolicyType{admissionregistrationv1.Equivalent, admissionregistrationv1.Exact} {
		h := validatingWebhook(strings.ToLower(string(mp))+".fleet.example.com", hook, "/fleet", map[string]string{"match": string(mp)}, admissionregistrationv1.Fail, 5)
		h.Rules, h.MatchPolicy = alphaFleets, ptr.To(mp)
		hooks = append(hooks, h)
	}
	if _, err := regs.ValidatingWebhookConfigurations().Create(t.Context(), &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "fleets-v1alpha1"}, Webhooks: hooks,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scheme, err := resource.NewScheme(fleetapi.Fleets)
	if err != nil {
		t.Fatal(err)
	}
	inV1, err := client.For[*fleetv1.Fleet, *fleetv1.FleetList](s.Registry(), fleetapi.Fleets)
	if err != nil {
		t.Fatal(err)
	}
	doors := []struct {
		name  string
		fleet func(ns string) typed[*fleetv1.Fleet, *fleetv1.FleetList]
	}{
		{"inprocess", func(ns string) typed[*fleetv1.Fleet, *fleetv1.FleetList] { return inV1.Namespace(ns) }},
		{"http", func(ns string) typed[*fleetv1.Fleet, *fleetv1.FleetList] {
			return httpTyped[*fleetv1.Fleet, *fleetv1.FleetList](t, s, scheme, fleetapi.Fleets, ns, rest.NoWarnings{})
		}},
	}
	fleet := func(name string, replicas int32) *fleetv1.Fleet {
		return &fleetv1.Fleet{ObjectMeta: metav1.ObjectMeta{Name: name, GenerateName: "probe-"}, Spec: fleetv1.FleetSpec{Replicas: replicas}}
	}
	const denied = `admission webhook "equivalent.fleet.example.com" denied the request: size 6 over 5 (object fleet.example.com/v1alpha1, kind v1alpha1, request kind v1)`
	probes := doors[1].fleet(a.namespace(t, map[string]string{"match": "Equivalent"}))
	customapitest.Eventually(t, effectTimeout, "fleet webhook in effect", func(ctx context.Context) (bool, error) {
		_, err := probes.Create(ctx, fleet("", 6), metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), denied), err
	})
	for _, d := range doors {
		t.Run(d.name, func(t *testing.T) {
			_, err := d.fleet(a.namespace(t, map[string]string{"match": "Equivalent"})).Create(t.Context(), fleet("six", 6), metav1.CreateOptions{})
			customapitest.RequireCode(t, err, http.StatusForbidden, denied)
			exact := a.namespace(t, map[string]string{"match": "Exact"})
			if _, err := d.fleet(exact).Create(t.Context(), fleet("six", 6), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create in v1 with a v1alpha1 webhook of matchPolicy Exact: %v", err)
			}
			if n := hook.callsTo("/fleet", exact); n != 0 {
				t.Errorf("matchPolicy Exact webhook called %d times for a v1 write", n)
			}
		})
	}
}

// TestAdmissionReinvocation: a mutating webhook with reinvocationPolicy
// IfNeeded is called again when a later mutating webhook changed the
// object (kube's reinvocation), once with Never, through both doors; the
// object carries both labels.
func TestAdmissionReinvocation(t *testing.T) {
	a := startAdmissionServer(t, nil)
	hook := startWebhookServer(t)
	regs := a.kube.AdmissionregistrationV1()
	for _, policy := range []admissionregistrationv1.ReinvocationPolicyType{admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy} {
		sel := map[string]string{"reinvoke": string(policy)}
		first := mutatingWebhook("first.test.example.com", hook, "/mutate", sel, admissionregistrationv1.Fail)
		first.ReinvocationPolicy = ptr.To(policy)
		second := mutatingWebhook("second.test.example.com", hook, "/second", sel, admissionregistrationv1.Fail)
		if _, err := regs.MutatingWebhookConfigurations().Create(t.Context(), &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "reinvoke-" + strings.ToLower(string(policy))},
			Webhooks:   []admissionregistrationv1.MutatingWebhook{first, second},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		probes := a.doors[1].customs(a.namespace(t, sel))
		customapitest.Eventually(t, effectTimeout, "webhooks of "+string(policy)+" in effect", func(ctx context.Context) (bool, error) {
			out, err := probes.Create(ctx, probe(1, ""), metav1.CreateOptions{})
			return err == nil && out.Labels["mutated"] == "true" && out.Labels["second"] == "true", err
		})
	}
	forDoors(t, a.doors, func(t *testing.T, d door) {
		for policy, calls := range map[admissionregistrationv1.ReinvocationPolicyType]int{
			admissionregistrationv1.IfNeededReinvocationPolicy: 2,
			admissionregistrationv1.NeverReinvocationPolicy:    1,
		} {
			ns := a.namespace(t, map[string]string{"reinvoke": string(policy)})
			out := create(t, d.customs(ns), custom("c"))
			if out.Labels["mutated"] != "true" || out.Labels["second"] != "true" {
				t.Errorf("%s: labels %v, want mutated and second", policy, out.Labels)
			}
			if n, m := hook.callsTo("/mutate", ns), hook.callsTo("/second", ns); n != calls || m != 1 {
				t.Errorf("%s: first webhook called %d times, second %d, want %d and 1", policy, n, m, calls)
			}
		}
	})
}

// admissionAuditPolicy logs customs at level Metadata, nothing else.
const admissionAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources:
  - group: test
    resources: [customs]
- level: None
`

// TestAdmissionAudit: a ValidatingAdmissionPolicy bound with
// validationActions [Audit] lets a failing write through and records the
// failure (validation.policy.admission.k8s.io/validation_failure) and its
// auditAnnotations (<policy>/<key>) in the write's audit event, through
// both doors.
func TestAdmissionAudit(t *testing.T) {
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(admissionAuditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit.log")
	a := startAdmissionServer(t, func(o *options.ServerOptions) {
		o.Audit.PolicyFile = policyFile
		o.Audit.LogOptions.Path = logPath
	})
	ctx := t.Context()
	regs := a.kube.AdmissionregistrationV1()
	if _, err := regs.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "audit-limit"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: customsRules()[0],
			}}},
			Validations:      []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 3", Message: "too many replicas"}},
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "replicas", ValueExpression: "string(object.spec.replicas)"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	auditOn := map[string]string{"audit": "on"}
	if _, err := regs.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "audit-limit"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "audit-limit",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: selector(auditOn)},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// annotations returns the annotations of the ResponseComplete events of
	// the creates of customs in ns, by name.
	annotations := func(ns string) (map[string]map[string]string, error) {
		data, err := os.ReadFile(logPath)
		if err != nil {
			return nil, err
		}
		out := map[string]map[string]string{}
		for line := range strings.SplitSeq(string(data), "\n") {
			var ev auditv1.Event
			if line == "" || json.Unmarshal([]byte(line), &ev) != nil {
				continue
			}
			if ev.Verb == "create" && ev.Stage == auditv1.StageResponseComplete && ev.ObjectRef != nil && ev.ObjectRef.Namespace == ns {
				out[ev.ObjectRef.Name] = ev.Annotations
			}
		}
		return out, nil
	}
	const failureKey = "validation.policy.admission.k8s.io/validation_failure"
	probeNS := a.namespace(t, auditOn)
	probes := a.doors[1].customs(probeNS)
	customapitest.Eventually(t, effectTimeout, "audit binding in effect", func(ctx context.Context) (bool, error) {
		if _, err := probes.Create(ctx, probe(5, ""), metav1.CreateOptions{}); err != nil {
			return false, err
		}
		events, err := annotations(probeNS)
		for _, an := range events {
			if an[failureKey] != "" {
				return true, nil
			}
		}
		return false, errors.Join(err, fmt.Errorf("annotations %v", events))
	})
	forDoors(t, a.doors, func(t *testing.T, d door) {
		ns := a.namespace(t, auditOn)
		over := custom("five")
		over.Spec.Replicas = 5
		create(t, d.customs(ns), over)
		var got map[string]string
		customapitest.Eventually(t, effectTimeout, "audit event", func(context.Context) (bool, error) {
			events, err := annotations(ns)
			got = events["five"]
			return got != nil, err
		})
		if f := got[failureKey]; !strings.Contains(f, `"audit-limit"`) || !strings.Contains(f, "too many replicas") {
			t.Errorf("%s = %q, want the policy and its message", failureKey, f)
		}
		if v := got["audit-limit/replicas"]; v != "5" {
			t.Errorf("audit-limit/replicas = %q, want 5 (annotations %v)", v, got)
		}
	})
}

// TestAdmissionAuthorizer: a ValidatingAdmissionPolicy using the CEL
// authorizer library asks the server's authorizer (RBAC) about the
// request's user, through both doors: alice, who may create customs but
// not delete them, is denied; the admin, and the in-process door without a
// user (system:apiserver), are allowed.
func TestAdmissionAuthorizer(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,alice-uid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAdmissionServer(t, func(o *options.ServerOptions) {
		o.Authorization.Mode = options.AuthorizationRBAC
		o.Authentication.TokenAuthFile = tokens
	})
	ctx := t.Context()
	authzOn := map[string]string{"authz": "on"}
	ns := a.namespace(t, authzOn)
	if _, err := a.kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "customs-writer"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"test"}, Resources: []string{"customs"}, Verbs: []string{"create", "get", "list"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "customs-writer"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	regs := a.kube.AdmissionregistrationV1()
	if _, err := regs.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deleters-only"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: customsRules()[0],
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "authorizer.group('test').resource('customs').namespace(object.metadata.namespace).check('delete').allowed()",
				MessageExpression: "request.userInfo.username + ' may not delete customs, so may not create them'",
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := regs.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deleters-only"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "deleters-only",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: selector(authzOn)},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const denied = "ValidatingAdmissionPolicy 'deleters-only' with binding 'deleters-only' denied request: alice may not delete customs, so may not create them"
	aliceCfg := rest.CopyConfig(a.srv.Config)
	aliceCfg.BearerToken = "alice-token"
	aliceHTTP, err := dynamic.NewForConfig(aliceCfg)
	if err != nil {
		t.Fatal(err)
	}
	customsGVR := install.Customs.GroupVersionResource()
	obj := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test/v1", "kind": "Custom",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"replicas": int64(1)},
		}}
		if name == "" {
			u.SetGenerateName("probe-")
		}
		return u
	}
	// Until RBAC and the policy take effect.
	customapitest.Eventually(t, effectTimeout, "policy denying alice", func(ctx context.Context) (bool, error) {
		_, err := aliceHTTP.Resource(customsGVR).Namespace(ns).Create(ctx, obj(""), metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), denied), err
	})
	alice := genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "alice", UID: "alice-uid", Groups: []string{user.AllAuthenticated}})
	t.Run("inprocess", func(t *testing.T) {
		c := a.doors[0].customs(ns)
		_, err := c.Create(alice, custom("by-alice-inprocess"), metav1.CreateOptions{})
		customapitest.RequireCode(t, err, http.StatusUnprocessableEntity, denied)
		create(t, c, custom("by-the-apiserver"))
	})
	t.Run("http", func(t *testing.T) {
		_, err := aliceHTTP.Resource(customsGVR).Namespace(ns).Create(ctx, obj("by-alice-http"), metav1.CreateOptions{})
		customapitest.RequireCode(t, err, http.StatusUnprocessableEntity, denied)
		create(t, a.doors[1].customs(ns), custom("by-the-admin"))
	})
}

// staticPolicy is a static manifest (KEP-5793): a policy requiring an
// owner label on customs in namespaces labelled static=on, and its
// binding.
const staticPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: owner-label.static.k8s.io
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["test"]
      apiVersions: ["*"]
      operations: ["CREATE", "UPDATE"]
      resources: ["customs"]
  validations:
  - expression: "has(object.metadata.labels) && 'owner' in object.metadata.labels"
    message: "every custom needs an owner label"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: owner-label.static.k8s.io
spec:
  policyName: owner-label.static.k8s.io
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {static: "on"}
`

// TestAdmissionStaticManifests: a policy loaded from the
// staticManifestsDir of --admission-control-config-file is in effect from
// the start through both doors, and is no API object (not listed, cannot
// be deleted).
func TestAdmissionStaticManifests(t *testing.T) {
	config := customapitest.StaticManifestsConfig(t, "ValidatingAdmissionPolicy", map[string]string{"owner-label.yaml": staticPolicy})
	a := startAdmissionServer(t, func(o *options.ServerOptions) { o.Admission.ConfigFile = config })
	const denied = "ValidatingAdmissionPolicy 'owner-label.static.k8s.io' with binding 'owner-label.static.k8s.io' denied request: every custom needs an owner label"
	probes := a.doors[1].customs(a.namespace(t, map[string]string{"static": "on"}))
	customapitest.Eventually(t, effectTimeout, "static policy in effect", func(ctx context.Context) (bool, error) {
		_, err := probes.Create(ctx, probe(1, ""), metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), denied), err
	})
	forDoors(t, a.doors, func(t *testing.T, d door) {
		c := d.customs(a.namespace(t, map[string]string{"static": "on"}))
		_, err := c.Create(t.Context(), custom("anonymous"), metav1.CreateOptions{})
		customapitest.RequireCode(t, err, http.StatusUnprocessableEntity, denied)
		owned := custom("owned")
		owned.Labels = map[string]string{"owner": "me"}
		create(t, c, owned)
		create(t, d.customs(a.namespace(t, nil)), custom("elsewhere"))
	})
	regs := a.kube.AdmissionregistrationV1()
	list, err := regs.ValidatingAdmissionPolicies().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("listed policies %d, want none (static policies are no API objects)", len(list.Items))
	}
	err = regs.ValidatingAdmissionPolicies().Delete(t.Context(), "owner-label.static.k8s.io", metav1.DeleteOptions{})
	customapitest.RequireReason(t, err, metav1.StatusReasonNotFound)
}

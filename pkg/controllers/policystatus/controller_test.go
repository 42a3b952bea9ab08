package policystatus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/apis/test/install"
	"github.com/customapi/customapi/pkg/batteries"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/controllers/policystatus"
	"github.com/customapi/customapi/pkg/customapitest"
)

func policy(name string, paramKind *admissionregistrationv1.ParamKind, resources []string, expressions ...string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind: paramKind,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"test"}, APIVersions: []string{"v1"}, Resources: resources},
				},
			}}},
		},
	}
	for _, e := range expressions {
		p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{Expression: e})
	}
	return p
}

// TestTypeChecking starts a server with the admission batteries, config
// maps and customs, which runs the controller, creates policies and waits
// for it to write their status: a field customs do not have (replicaz) and a
// config map field that does not exist (params.dta) are warnings naming
// the expression and the kind; correct expressions, and policies whose
// rules match nothing served, get none; an update is checked again at its
// new generation.
func TestTypeChecking(t *testing.T) {
	srv := customapitest.Start(t, append(batteries.Admission(), batteries.ConfigMaps, install.Customs)...)
	ctx := t.Context()
	policies, err := client.For[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyList](srv.Registry(), batteries.ValidatingAdmissionPolicies)
	if err != nil {
		t.Fatal(err)
	}
	configMaps := &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}

	// A warning names the expression, the kind checked and the problem.
	type warning struct{ fieldRef, contains string }
	cases := []struct {
		policy *admissionregistrationv1.ValidatingAdmissionPolicy
		want   []warning
	}{
		{policy("typo", nil, []string{"customs"}, "object.spec.replicas < 5", "object.spec.replicaz < 5"),
			[]warning{{"spec.validations[1].expression", "test/v1, Kind=Custom: ERROR: <input>:1:12: undefined field 'replicaz'"}}},
		{policy("correct", nil, []string{"customs"}, "object.spec.replicas < 5 && object.spec.message != ''", "object.spec.ports.all(p, p.port > 0)"), nil},
		{policy("params", configMaps, []string{"customs"}, "object.spec.message == params.data['m']", "params.dta == null"),
			[]warning{{"spec.validations[1].expression", "test/v1, Kind=Custom: ERROR: <input>:1:7: undefined field 'dta'"}}},
		{policy("unserved", nil, []string{"gadgets"}, "object.spec.anything == 1"), nil},
	}
	for _, tc := range cases {
		if _, err := policies.Create(ctx, tc.policy, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", tc.policy.Name, err)
		}
	}
	for _, tc := range cases {
		got := waitChecked(t, policies, tc.policy.Name, 1)
		checkWarnings(t, got, len(tc.want), func(i int, w admissionregistrationv1.ExpressionWarning) bool {
			return w.FieldRef == tc.want[i].fieldRef && strings.Contains(w.Warning, tc.want[i].contains)
		})
	}

	// The fix is a new generation, checked again: no warnings.
	p, err := policies.Get(ctx, "typo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.TypeChecking == nil || len(p.Status.TypeChecking.ExpressionWarnings) != 1 {
		t.Fatalf("typo status %+v", p.Status)
	}
	if mf := p.ManagedFields; !managedBy(mf, policystatus.ControllerName, "status") {
		t.Errorf("managedFields %v: no status entry of %s", mf, policystatus.ControllerName)
	}
	p.Spec.Validations[1].Expression = "object.spec.replicas > 0"
	if _, err := policies.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitChecked(t, policies, "typo", 2)
	checkWarnings(t, got, 0, nil)
}

func managedBy(entries []metav1.ManagedFieldsEntry, manager, subresource string) bool {
	for _, e := range entries {
		if e.Manager == manager && e.Subresource == subresource {
			return true
		}
	}
	return false
}

// waitChecked polls the policy until its status is of generation gen.
func waitChecked(t *testing.T, policies *client.Client[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyList], name string, gen int64) *admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	var got *admissionregistrationv1.ValidatingAdmissionPolicy
	customapitest.Eventually(t, 30*time.Second, fmt.Sprintf("policy %s: status of generation %d", name, gen), func(ctx context.Context) (bool, error) {
		p, err := policies.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return p.Generation == gen && p.Status.ObservedGeneration == gen, fmt.Errorf("generation %d, status %+v", p.Generation, p.Status)
	})
	return got
}

func checkWarnings(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy, n int, ok func(int, admissionregistrationv1.ExpressionWarning) bool) {
	t.Helper()
	if p.Status.TypeChecking == nil {
		t.Errorf("%s: no status.typeChecking", p.Name)
		return
	}
	ws := p.Status.TypeChecking.ExpressionWarnings
	if len(ws) != n {
		t.Errorf("%s: warnings %+v, want %d", p.Name, ws, n)
		return
	}
	for i, w := range ws {
		if !ok(i, w) {
			t.Errorf("%s: warning %d %+v", p.Name, i, w)
		}
	}
}

package review

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// SubjectAccessReviewREST is the storage of authorization.k8s.io/v1 subjectaccessreviews (cluster-scoped,
// create only): may spec.user (with spec.groups, uid, extra) do what spec.resourceAttributes or
// spec.nonResourceAttributes describe? The answer is the authorizer's: status.allowed, status.denied (an
// explicit Deny), status.reason and status.evaluationError, as kube-apiserver. Invalid specs (neither or both
// attribute kinds, no user and no group, malformed selectors, non-empty metadata) are 422 Invalid.
type SubjectAccessReviewREST struct {
	notStored
	authorizer authorizer.Authorizer
}

// New returns an empty SubjectAccessReview.
func (*SubjectAccessReviewREST) New() runtime.Object { return &authorizationv1.SubjectAccessReview{} }

// NamespaceScoped is false.
func (*SubjectAccessReviewREST) NamespaceScoped() bool { return false }

// GetSingularName returns "subjectaccessreview".
func (*SubjectAccessReviewREST) GetSingularName() string { return "subjectaccessreview" }

// Create answers the review obj (a *SubjectAccessReview).
func (r *SubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	sar, ok := obj.(*authorizationv1.SubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SubjectAccessReview: %T", obj))
	}
	if errs := validateSubjectAccessReview(sar); len(errs) != 0 {
		return nil, invalid("SubjectAccessReview", errs)
	}
	if err := validate(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	s := sar.Spec
	sar.Status = decide(ctx, r.authorizer, specUser(s.User, s.UID, s.Groups, s.Extra), s.ResourceAttributes, s.NonResourceAttributes)
	return sar, nil
}

// SelfSubjectAccessReviewREST is the storage of authorization.k8s.io/v1 selfsubjectaccessreviews (`kubectl auth
// can-i`): SubjectAccessReviewREST for the requesting user.
type SelfSubjectAccessReviewREST struct {
	notStored
	authorizer authorizer.Authorizer
}

// New returns an empty SelfSubjectAccessReview.
func (*SelfSubjectAccessReviewREST) New() runtime.Object {
	return &authorizationv1.SelfSubjectAccessReview{}
}

// NamespaceScoped is false.
func (*SelfSubjectAccessReviewREST) NamespaceScoped() bool { return false }

// GetSingularName returns "selfsubjectaccessreview".
func (*SelfSubjectAccessReviewREST) GetSingularName() string { return "selfsubjectaccessreview" }

// Create answers the review obj (a *SelfSubjectAccessReview) for the request's user; without one it is a 400.
func (r *SelfSubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	ssar, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectAccessReview: %T", obj))
	}
	if errs := validateSelfSubjectAccessReview(ssar); len(errs) != 0 {
		return nil, invalid("SelfSubjectAccessReview", errs)
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if err := validate(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	ssar.Status = decide(ctx, r.authorizer, u, ssar.Spec.ResourceAttributes, ssar.Spec.NonResourceAttributes)
	return ssar, nil
}

// LocalSubjectAccessReviewREST is the storage of authorization.k8s.io/v1 localsubjectaccessreviews (namespaced):
// SubjectAccessReviewREST restricted to the URL's namespace. metadata.namespace must be the URL's namespace
// (400 otherwise) and spec.resourceAttributes.namespace must equal it (422); non-resource attributes are 422.
type LocalSubjectAccessReviewREST struct {
	notStored
	authorizer authorizer.Authorizer
}

// New returns an empty LocalSubjectAccessReview.
func (*LocalSubjectAccessReviewREST) New() runtime.Object {
	return &authorizationv1.LocalSubjectAccessReview{}
}

// NamespaceScoped is true.
func (*LocalSubjectAccessReviewREST) NamespaceScoped() bool { return true }

// GetSingularName returns "localsubjectaccessreview".
func (*LocalSubjectAccessReviewREST) GetSingularName() string { return "localsubjectaccessreview" }

// Create answers the review obj (a *LocalSubjectAccessReview).
func (r *LocalSubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	lsar, ok := obj.(*authorizationv1.LocalSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a LocalSubjectAccessReview: %T", obj))
	}
	if errs := validateLocalSubjectAccessReview(lsar); len(errs) != 0 {
		return nil, invalid("LocalSubjectAccessReview", errs)
	}
	ns := genericapirequest.NamespaceValue(ctx)
	if ns == "" {
		return nil, apierrors.NewBadRequest("namespace is required on this type")
	}
	if ns != lsar.Namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", ns))
	}
	if err := validate(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	s := lsar.Spec
	lsar.Status = decide(ctx, r.authorizer, specUser(s.User, s.UID, s.Groups, s.Extra), s.ResourceAttributes, s.NonResourceAttributes)
	return lsar, nil
}

// SelfSubjectRulesReviewREST is the storage of authorization.k8s.io/v1 selfsubjectrulesreviews (`kubectl auth
// can-i --list`): the rules the requesting user holds in spec.namespace, from the rule resolver, with
// status.incomplete when the resolver cannot list everything (a webhook, for instance) and its error in
// status.evaluationError. An empty spec.namespace is a 400 BadRequest, as upstream.
type SelfSubjectRulesReviewREST struct {
	notStored
	rules authorizer.RuleResolver
}

// New returns an empty SelfSubjectRulesReview.
func (*SelfSubjectRulesReviewREST) New() runtime.Object {
	return &authorizationv1.SelfSubjectRulesReview{}
}

// NamespaceScoped is false.
func (*SelfSubjectRulesReviewREST) NamespaceScoped() bool { return false }

// GetSingularName returns "selfsubjectrulesreview".
func (*SelfSubjectRulesReviewREST) GetSingularName() string { return "selfsubjectrulesreview" }

// Create lists the rules of the request's user in obj's spec.namespace (obj is a *SelfSubjectRulesReview).
func (r *SelfSubjectRulesReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	ssrr, ok := obj.(*authorizationv1.SelfSubjectRulesReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectRulesReview: %T", obj))
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if ssrr.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	if err := validate(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	resRules, nonResRules, incomplete, err := r.rules.RulesFor(ctx, u, ssrr.Spec.Namespace)
	out := &authorizationv1.SelfSubjectRulesReview{
		Spec: ssrr.Spec,
		Status: authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    make([]authorizationv1.ResourceRule, 0, len(resRules)),
			NonResourceRules: make([]authorizationv1.NonResourceRule, 0, len(nonResRules)),
			Incomplete:       incomplete,
		},
	}
	for _, ri := range resRules {
		out.Status.ResourceRules = append(out.Status.ResourceRules, authorizationv1.ResourceRule{
			Verbs: ri.GetVerbs(), APIGroups: ri.GetAPIGroups(), Resources: ri.GetResources(), ResourceNames: ri.GetResourceNames(),
		})
	}
	for _, ri := range nonResRules {
		out.Status.NonResourceRules = append(out.Status.NonResourceRules, authorizationv1.NonResourceRule{
			Verbs: ri.GetVerbs(), NonResourceURLs: ri.GetNonResourceURLs(),
		})
	}
	if err != nil {
		out.Status.EvaluationError = err.Error()
	}
	return out, nil
}

// incompleteRules is the rule resolver of a server that cannot list rules: nothing, incomplete.
type incompleteRules struct{}

func (incompleteRules) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return nil, nil, true, nil
}

// decide asks a about u and turns the decision into a review status.
func decide(ctx context.Context, a authorizer.Authorizer, u user.Info, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	attrs := attributesFor(u, res, nonRes)
	decision, reason, err := a.Authorize(ctx, attrs)
	return authorizationv1.SubjectAccessReviewStatus{
		Allowed:         decision == authorizer.DecisionAllow,
		Denied:          decision == authorizer.DecisionDeny,
		Reason:          reason,
		EvaluationError: evaluationError(err, attrs),
	}
}

func validate(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc) error {
	if createValidation == nil {
		return nil
	}
	return createValidation(ctx, obj.DeepCopyObject())
}

func invalid(kind string, errs field.ErrorList) error {
	return apierrors.NewInvalid(AuthorizationV1.WithKind(kind).GroupKind(), "", errs)
}

var (
	_ rest.Creater              = &SubjectAccessReviewREST{}
	_ rest.Scoper               = &SubjectAccessReviewREST{}
	_ rest.SingularNameProvider = &SubjectAccessReviewREST{}
	_ rest.Creater              = &SelfSubjectAccessReviewREST{}
	_ rest.Creater              = &LocalSubjectAccessReviewREST{}
	_ rest.Creater              = &SelfSubjectRulesReviewREST{}
	_ rest.SingularNameProvider = &SelfSubjectRulesReviewREST{}
)

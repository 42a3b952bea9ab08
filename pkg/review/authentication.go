package review

import (
	"context"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// TokenReviewREST is the storage of authentication.k8s.io/v1 tokenreviews (cluster-scoped, create only): it
// authenticates spec.token as a bearer token with the configured authenticator and answers with
// status.authenticated, status.user (name, uid, groups, extra), status.audiences and status.error, as
// kube-apiserver's tokenreview storage. spec.audiences, or else the API audiences, are put in the request's
// context; a response whose audiences do not intersect them is a 500, as upstream. An empty spec.token is a 400
// BadRequest; a namespace in the URL is a 400.
type TokenReviewREST struct {
	notStored
	tokens       authenticator.Request
	apiAudiences []string
}

// New returns an empty TokenReview.
func (*TokenReviewREST) New() runtime.Object { return &authenticationv1.TokenReview{} }

// NamespaceScoped is false.
func (*TokenReviewREST) NamespaceScoped() bool { return false }

// GetSingularName returns "tokenreview".
func (*TokenReviewREST) GetSingularName() string { return "tokenreview" }

// Create reviews the token of obj (a *TokenReview) and returns it with its status filled in.
func (r *TokenReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authenticationv1.TokenReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenReview: %T", obj))
	}
	if ns := genericapirequest.NamespaceValue(ctx); ns != "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("namespace is not allowed on this type: %v", ns))
	}
	if review.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	if err := validate(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	if r.tokens == nil {
		return review, nil
	}
	req := (&http.Request{Header: http.Header{}}).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+review.Spec.Token)
	auds := review.Spec.Audiences
	if len(auds) == 0 {
		auds = r.apiAudiences
	}
	if len(auds) != 0 {
		req = req.WithContext(authenticator.WithAudiences(req.Context(), auds))
	}
	resp, ok, err := r.tokens.AuthenticateRequest(req)
	review.Status.Authenticated = ok
	if err != nil {
		review.Status.Error = err.Error()
	}
	if len(auds) != 0 && resp != nil && len(authenticator.Audiences(auds).Intersect(resp.Audiences)) == 0 {
		return nil, apierrors.NewInternalError(fmt.Errorf("the token authenticator answered for audiences %q, not the requested %q", resp.Audiences, auds))
	}
	if resp != nil && resp.User != nil {
		review.Status.User = authenticationv1.UserInfo{
			Username: resp.User.GetName(),
			UID:      resp.User.GetUID(),
			Groups:   resp.User.GetGroups(),
			Extra:    map[string]authenticationv1.ExtraValue{},
		}
		for k, v := range resp.User.GetExtra() {
			review.Status.User.Extra[k] = authenticationv1.ExtraValue(v)
		}
		review.Status.Audiences = resp.Audiences
	}
	return review, nil
}

// SelfSubjectReviewREST is the storage of authentication.k8s.io/v1 selfsubjectreviews (`kubectl auth whoami`):
// it answers with the requesting user's name, uid, groups and extra, and a creationTimestamp of now, as
// kube-apiserver. A request without a user is a 400 BadRequest.
type SelfSubjectReviewREST struct{ notStored }

// New returns an empty SelfSubjectReview.
func (*SelfSubjectReviewREST) New() runtime.Object { return &authenticationv1.SelfSubjectReview{} }

// NamespaceScoped is false.
func (*SelfSubjectReviewREST) NamespaceScoped() bool { return false }

// GetSingularName returns "selfsubjectreview".
func (*SelfSubjectReviewREST) GetSingularName() string { return "selfsubjectreview" }

// Create returns the user information of the request's user.
func (*SelfSubjectReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	if _, ok := obj.(*authenticationv1.SelfSubjectReview); !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectReview: %T", obj))
	}
	if err := validate(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	out := &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Now()},
		Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{
			Username: u.GetName(),
			UID:      u.GetUID(),
			Groups:   u.GetGroups(),
			Extra:    map[string]authenticationv1.ExtraValue{},
		}},
	}
	for k, v := range u.GetExtra() {
		out.Status.UserInfo.Extra[k] = authenticationv1.ExtraValue(v)
	}
	return out, nil
}

var (
	_ rest.Creater              = &TokenReviewREST{}
	_ rest.Scoper               = &TokenReviewREST{}
	_ rest.SingularNameProvider = &TokenReviewREST{}
	_ rest.Creater              = &SelfSubjectReviewREST{}
	_ rest.Scoper               = &SelfSubjectReviewREST{}
	_ rest.SingularNameProvider = &SelfSubjectReviewREST{}
)

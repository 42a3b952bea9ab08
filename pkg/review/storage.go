package review

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Config is what the reviews are answered by.
type Config struct {
	// Tokens authenticates TokenReview's spec.token, sent as a bearer token (the server's token authenticators:
	// no client certificates, no anonymous). Nil leaves every TokenReview unauthenticated with no error, as
	// kube-apiserver without a token authenticator does. Wrap
	// audience-unaware authenticators (token files) with
	// authenticator.WrapAudienceAgnosticRequest(APIAudiences, ...), as
	// kube-apiserver does, or a review asking for audiences is a 500.
	Tokens authenticator.Request
	// APIAudiences are the audiences a TokenReview without spec.audiences is checked against (kube-apiserver's
	// --api-audiences). Empty: no audience check.
	APIAudiences []string
	// Authorizer answers SubjectAccessReview, SelfSubjectAccessReview and LocalSubjectAccessReview. Required.
	Authorizer authorizer.Authorizer
	// RuleResolver answers SelfSubjectRulesReview. Nil answers with no rules and incomplete=true.
	RuleResolver authorizer.RuleResolver
}

// Storages returns the review storages by group version and resource name (tokenreviews, selfsubjectreviews,
// subjectaccessreviews, selfsubjectaccessreviews, localsubjectaccessreviews, selfsubjectrulesreviews), each a
// rest.Creater that stores nothing.
func Storages(cfg Config) map[schema.GroupVersion]map[string]rest.Storage {
	rules := cfg.RuleResolver
	if rules == nil {
		rules = incompleteRules{}
	}
	return map[schema.GroupVersion]map[string]rest.Storage{
		AuthenticationV1: {
			"tokenreviews":       &TokenReviewREST{tokens: cfg.Tokens, apiAudiences: cfg.APIAudiences},
			"selfsubjectreviews": &SelfSubjectReviewREST{},
		},
		AuthorizationV1: {
			"subjectaccessreviews":      &SubjectAccessReviewREST{authorizer: cfg.Authorizer},
			"selfsubjectaccessreviews":  &SelfSubjectAccessReviewREST{authorizer: cfg.Authorizer},
			"localsubjectaccessreviews": &LocalSubjectAccessReviewREST{authorizer: cfg.Authorizer},
			"selfsubjectrulesreviews":   &SelfSubjectRulesReviewREST{rules: rules},
		},
	}
}

// notStored is what every review storage shares: nothing to destroy.
type notStored struct{}

// Destroy implements rest.Storage: there is no underlying store.
func (notStored) Destroy() {}

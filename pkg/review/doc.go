// Package review implements the review APIs of Kubernetes for customapi: authentication.k8s.io/v1 TokenReview and
// SelfSubjectReview, authorization.k8s.io/v1 SubjectAccessReview, SelfSubjectAccessReview,
// LocalSubjectAccessReview and SelfSubjectRulesReview. They are REST storages that answer a create and store
// nothing, as kube-apiserver's pkg/registry/authentication and pkg/registry/authorization do, with the same
// validation (422 Invalid with field paths) and the same status fields.
//
// They are answered by what the server is given: a bearer-token authenticator (TokenReview), an authorizer
// (the access reviews) and a rule resolver (SelfSubjectRulesReview). The user of the "self" reviews is the
// request's user (genericapirequest.UserFrom); a request without one is a 400 BadRequest, as upstream.
//
// Objects are the k8s.io/api types; [AddToScheme] registers them under v1 and under their groups' internal
// versions (the same Go types, as customapi registers every served type), and [Storages] gives the storages by
// group version and resource, ready for a GenericAPIServer's APIGroupInfo:
//
//	if err := review.AddToScheme(scheme); err != nil { ... }
//	storages := review.Storages(review.Config{Tokens: tokens, Authorizer: authz, RuleResolver: rules})
package review

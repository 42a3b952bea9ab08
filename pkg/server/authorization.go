package server

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// namedErrors returns a that prefixes its errors with what it is, so that
// a 503 says which authorizer failed.
func namedErrors(a authorizer.Authorizer, what string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
		d, reason, err := a.Authorize(ctx, attrs)
		if err != nil {
			err = fmt.Errorf("%s: %w", what, err)
		}
		return d, reason, err
	})
}

package resource

import (
	"fmt"
	"strings"
)

// PathSegmentName returns why name cannot be one segment of a URL path,
// nothing when it can: it may not be "." or "..", nor contain "/" or "%".
// It is kube's ValidatePathSegmentName (k8s.io/apimachinery's
// api/validation/path, deprecated there in favour of a local copy), the
// rule of names that are not DNS subdomains, such as RBAC's role names
// ("system:basic-user") in a ValidateName hook, or the resource names of
// admission rules.
func PathSegmentName(name string) []string {
	if name == "." || name == ".." {
		return []string{fmt.Sprintf("may not be '%s'", name)}
	}
	var msgs []string
	for _, bad := range []string{"/", "%"} {
		if strings.Contains(name, bad) {
			msgs = append(msgs, fmt.Sprintf("may not contain '%s'", bad))
		}
	}
	return msgs
}

package storage

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// storedVersionsSegment is the first path segment below the global prefix
// of the stored versions records. No resource's keys can start with it:
// they start with a group (a DNS-1123 subdomain) or, in the core group,
// with a plural (a DNS-1035 label), and neither may start with a dot.
const storedVersionsSegment = ".customapi-storedversions"

// StoredVersionsPrefix returns the key prefix of the stored versions
// records under the global prefix ("" means DefaultPrefix):
// <prefix>/.customapi-storedversions/, a path no resource's keys can take
// (no group or plural starts with a dot). One range read of it returns the
// records of every resource.
func StoredVersionsPrefix(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return strings.TrimSuffix(prefix, "/") + "/" + storedVersionsSegment + "/"
}

// StoredVersionsKey returns the key of the stored versions record of gr
// (registry.Open keeps it, as a CustomResourceDefinition's
// status.storedVersions): StoredVersionsPrefix followed by gr's string,
// "fleets.fleet.example.com", or the plural alone in the core group.
func StoredVersionsKey(prefix string, gr schema.GroupResource) string {
	return StoredVersionsPrefix(prefix) + gr.String()
}

package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package.
const GroupName = "test"

// SchemeGroupVersion is the group version of this package: test/v1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

package batteries

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
	"github.com/customapi/customapi/pkg/resource"
)

// Leases declares leases (coordination.k8s.io/v1, kind Lease), the objects
// of client-go's leader election: spec.leaseDurationSeconds, when set, is
// positive, and spec.leaseTransitions is not negative, as kube-apiserver
// requires. Updates need the resourceVersion they were based on, so of two
// candidates only one wins an update (409 Conflict for the other).
// kubectl get shows NAME, HOLDER and AGE.
var Leases = resource.Resource{
	GroupVersionKind: coordinationv1.SchemeGroupVersion.WithKind("Lease"),
	Plural:           "leases",
	New:              func() runtime.Object { return &coordinationv1.Lease{} },
	NewList:          func() runtime.Object { return &coordinationv1.LeaseList{} },
	Validate:         validateLease,
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Holder", Type: "string", JSONPath: ".spec.holderIdentity", Description: "The current holder of the lease."},
	},
	OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
}

func validateLease(_ context.Context, obj runtime.Object) field.ErrorList {
	spec := obj.(*coordinationv1.Lease).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(p.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(p.Child("leaseTransitions"), *t, "must be greater than or equal to 0"))
	}
	return errs
}

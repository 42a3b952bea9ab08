package fleetapi

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1"
	fleetv1alpha1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1alpha1"
	"github.com/customapi/customapi/examples/fleet/generated/openapi"
	"github.com/customapi/customapi/pkg/resource"
)

// Fleets declares fleets.fleet.example.com (kind Fleet, namespaced) in two
// versions: v1, the storage version, and v1alpha1, deprecated, whose
// spec.size is v1's spec.replicas and whose spec.region "<region>/<zone>"
// is v1's spec.placement (v1alpha1's conversion.go). Every hook sees v1
// objects, whatever version a request is in.
var Fleets = resource.Resource{
	//lint:ignore SA1019 register-gen marks SchemeGroupVersion deprecated for metav1.GroupVersion, which has no WithKind
	GroupVersionKind:  fleetv1.SchemeGroupVersion.WithKind("Fleet"),
	Plural:            "fleets",
	StatusSubresource: true,
	New:               func() runtime.Object { return &fleetv1.Fleet{} },
	NewList:           func() runtime.Object { return &fleetv1.FleetList{} },
	// Default is defaulter-gen's (the +default markers of v1's types);
	// v1alpha1 requests are defaulted by v1alpha1's RegisterDefaults as
	// they are decoded.
	Default: func(obj runtime.Object) { fleetv1.SetObjectDefaults_Fleet(obj.(*fleetv1.Fleet)) },
	Validate: func(_ context.Context, obj runtime.Object) field.ErrorList {
		return validateFleet(obj.(*fleetv1.Fleet))
	},
	ValidateUpdate: func(_ context.Context, obj, _ runtime.Object) field.ErrorList {
		return validateFleet(obj.(*fleetv1.Fleet))
	},
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"},
		{Name: "Region", Type: "string", JSONPath: ".spec.placement.region"},
		{Name: "Zone", Type: "string", JSONPath: ".spec.placement.zone"},
		{Name: "Ready", Type: "integer", JSONPath: ".status.readyDevices"},
	},
	SelectableFields: map[string]func(runtime.Object) string{
		"spec.placement.region": func(obj runtime.Object) string { return obj.(*fleetv1.Fleet).Spec.Placement.Region },
	},
	OpenAPIDefinitions: openapi.GetOpenAPIDefinitions,
	Versions: []resource.Version{{
		Name:        "v1alpha1",
		New:         func() runtime.Object { return &fleetv1alpha1.Fleet{} },
		NewList:     func() runtime.Object { return &fleetv1alpha1.FleetList{} },
		AddToScheme: []func(*runtime.Scheme) error{fleetv1alpha1.RegisterConversions, fleetv1alpha1.RegisterDefaults},
		Deprecated:  true,
	}},
}

// validateFleet refuses what v1alpha1 could not represent: a "/" in
// spec.placement.region or spec.placement.zone (v1alpha1 writes them as one
// "<region>/<zone>"), and a negative spec.replicas.
func validateFleet(f *fleetv1.Fleet) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if f.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(spec.Child("replicas"), f.Spec.Replicas, "must not be negative"))
	}
	placement := spec.Child("placement")
	if strings.Contains(f.Spec.Placement.Region, "/") {
		errs = append(errs, field.Invalid(placement.Child("region"), f.Spec.Placement.Region, `must not contain "/"`))
	}
	if strings.Contains(f.Spec.Placement.Zone, "/") {
		errs = append(errs, field.Invalid(placement.Child("zone"), f.Spec.Placement.Zone, `must not contain "/"`))
	}
	return errs
}

package fleetapi

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1alpha1"
	"github.com/customapi/customapi/examples/fleet/generated/openapi"
	"github.com/customapi/customapi/pkg/resource"
)

// Devices declares devices.fleet.example.com/v1alpha1 (kind Device).
var Devices = resource.Resource{
	//lint:ignore SA1019 register-gen marks SchemeGroupVersion deprecated for metav1.GroupVersion, which has no WithKind
	GroupVersionKind:  fleetv1alpha1.SchemeGroupVersion.WithKind("Device"),
	Plural:            "devices",
	ShortNames:        []string{"dev"},
	ClusterScoped:     true,
	StatusSubresource: true,
	New:               func() runtime.Object { return &fleetv1alpha1.Device{} },
	NewList:           func() runtime.Object { return &fleetv1alpha1.DeviceList{} },
	Default: func(obj runtime.Object) {
		d := obj.(*fleetv1alpha1.Device)
		if d.Spec.Site == "" {
			d.Spec.Site = "unassigned"
		}
	},
	Validate: func(_ context.Context, obj runtime.Object) field.ErrorList {
		d := obj.(*fleetv1alpha1.Device)
		if d.Spec.Model == "" {
			return field.ErrorList{field.Required(field.NewPath("spec", "model"), "the hardware model is required")}
		}
		return nil
	},
	ValidateUpdate: func(_ context.Context, obj, old runtime.Object) field.ErrorList {
		d, o := obj.(*fleetv1alpha1.Device), old.(*fleetv1alpha1.Device)
		if d.Spec.Model != o.Spec.Model {
			return field.ErrorList{field.Invalid(field.NewPath("spec", "model"), d.Spec.Model, "is immutable")}
		}
		return nil
	},
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Model", Type: "string", JSONPath: ".spec.model"},
		{Name: "Site", Type: "string", JSONPath: ".spec.site"},
		{Name: "Online", Type: "boolean", JSONPath: ".status.online"},
	},
	SelectableFields: map[string]func(runtime.Object) string{
		"spec.site": func(obj runtime.Object) string { return obj.(*fleetv1alpha1.Device).Spec.Site },
	},
	OpenAPIDefinitions: openapi.GetOpenAPIDefinitions,
}

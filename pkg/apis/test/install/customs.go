package install

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/generated/openapi"
	"github.com/customapi/customapi/pkg/resource"
)

// Customs declares the resource customs.test/v1 (kind Custom): namespaced,
// with a status subresource, spec.replicas >= 0, field selector
// status.phase, printer columns Replicas, Phase and Message, and the
// category all (kubectl get all lists customs).
var Customs = resource.Resource{
	//lint:ignore SA1019 register-gen marks SchemeGroupVersion deprecated for metav1.GroupVersion, which has no WithKind
	GroupVersionKind:  testv1.SchemeGroupVersion.WithKind("Custom"),
	Plural:            "customs",
	ShortNames:        []string{"cu"},
	Categories:        []string{"all"},
	StatusSubresource: true,
	New:               func() runtime.Object { return &testv1.Custom{} },
	NewList:           func() runtime.Object { return &testv1.CustomList{} },
	Validate:          validateCustom,
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas", Description: "Desired replicas."},
		{Name: "Phase", Type: "string", JSONPath: ".status.phase", Description: "Observed phase."},
		{Name: "Message", Type: "string", JSONPath: ".spec.message", Priority: 1, Description: "The message."},
	},
	SelectableFields: map[string]func(runtime.Object) string{
		"status.phase": func(obj runtime.Object) string { return obj.(*testv1.Custom).Status.Phase },
	},
	OpenAPIDefinitions: openapi.GetOpenAPIDefinitions,
}

func validateCustom(_ context.Context, obj runtime.Object) field.ErrorList {
	c := obj.(*testv1.Custom)
	var errs field.ErrorList
	if c.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "replicas"), c.Spec.Replicas, "must be greater than or equal to 0"))
	}
	return errs
}

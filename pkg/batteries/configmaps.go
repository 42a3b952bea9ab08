package batteries

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
	"github.com/customapi/customapi/pkg/resource"
)

// ConfigMaps declares configmaps (core v1, kind ConfigMap, short name cm),
// validated as kube-apiserver validates them: every key of data and
// binaryData is a valid config map key (validation.IsConfigMapKey) and
// appears in only one of them, the total size of the values is at most
// corev1.MaxSecretSize (1 MiB), and once `immutable` is true, data,
// binaryData and immutable itself cannot change (422); an update without
// resourceVersion overwrites the stored object, as kube's does. kubectl get
// shows NAME, DATA (number of keys) and AGE.
var ConfigMaps = resource.Resource{
	GroupVersionKind: corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	Plural:           "configmaps",
	ShortNames:       []string{"cm"},
	// As kube-apiserver: an update without resourceVersion overwrites.
	UnconditionalUpdate: true,
	New:                 func() runtime.Object { return &corev1.ConfigMap{} },
	NewList:             func() runtime.Object { return &corev1.ConfigMapList{} },
	Validate:            validateConfigMap,
	ValidateUpdate:      validateConfigMapUpdate,
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Data", Type: "integer", Description: "Number of keys in data and binaryData.", Value: func(obj runtime.Object) any {
			cm := obj.(*corev1.ConfigMap)
			return int64(len(cm.Data) + len(cm.BinaryData))
		}},
	},
	OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
}

func validateConfigMap(_ context.Context, obj runtime.Object) field.ErrorList {
	cm := obj.(*corev1.ConfigMap)
	dataPath, binaryPath := field.NewPath("data"), field.NewPath("binaryData")
	var errs field.ErrorList
	size := 0
	for k, v := range cm.Data {
		errs = append(errs, checkKey(dataPath, k)...)
		size += len(v)
	}
	for k, v := range cm.BinaryData {
		errs = append(errs, checkKey(binaryPath, k)...)
		if _, ok := cm.Data[k]; ok {
			errs = append(errs, field.Invalid(binaryPath.Key(k), k, "duplicate of key present in data"))
		}
		size += len(v)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", corev1.MaxSecretSize).WithOrigin("maxSize"))
	}
	return errs
}

func validateConfigMapUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	cm, prev := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
	if !isTrue(prev.Immutable) {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, immutableWhenSet(field.NewPath("immutable"), cm.Immutable, prev.Immutable)...)
	errs = append(errs, immutableWhenSet(field.NewPath("data"), cm.Data, prev.Data)...)
	errs = append(errs, immutableWhenSet(field.NewPath("binaryData"), cm.BinaryData, prev.BinaryData)...)
	return errs
}

// checkKey validates one key of a config map's or secret's data.
func checkKey(path *field.Path, key string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(path.Key(key), key, msg))
	}
	return errs
}

// immutableWhenSet refuses a change of a field of an object whose
// `immutable` is true, with kube-apiserver's message.
func immutableWhenSet(path *field.Path, value, old any) field.ErrorList {
	if equality.Semantic.DeepEqual(value, old) {
		return nil
	}
	return field.ErrorList{field.Forbidden(path, "field is immutable when `immutable` is set")}
}

func isTrue(b *bool) bool { return b != nil && *b }

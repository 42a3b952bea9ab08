package batteries

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/customapi/customapi/pkg/generated/openapi/builtin"
	"github.com/customapi/customapi/pkg/resource"
)

// Secrets declares secrets (core v1, kind Secret), with kube-apiserver's
// semantics written here:
//   - defaults: type "" becomes Opaque; stringData (write-only) is merged
//     into data, its values winning, and cleared, as kube's conversion does;
//   - validation: data keys are valid config map keys, the values total at
//     most corev1.MaxSecretSize (1 MiB), and the well-known types carry
//     their required keys (kubernetes.io/tls: tls.crt and tls.key;
//     kubernetes.io/basic-auth: username or password; kubernetes.io/ssh-auth:
//     ssh-privatekey; kubernetes.io/dockercfg and
//     kubernetes.io/dockerconfigjson: a JSON .dockercfg/.dockerconfigjson;
//     kubernetes.io/service-account-token: the
//     kubernetes.io/service-account.name annotation);
//   - updates: type is immutable, and once `immutable` is true data and
//     immutable cannot change (422); an update without resourceVersion
//     overwrites the stored object (Helm's release storage relies on it).
//
// The field selector `type` is supported. kubectl get shows NAME, TYPE,
// DATA and AGE.
var Secrets = resource.Resource{
	GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Secret"),
	Plural:           "secrets",
	// As kube-apiserver: an update without resourceVersion overwrites.
	UnconditionalUpdate: true,
	New:                 func() runtime.Object { return &corev1.Secret{} },
	NewList:             func() runtime.Object { return &corev1.SecretList{} },
	Default:             defaultSecret,
	Validate:            validateSecret,
	ValidateUpdate:      validateSecretUpdate,
	PrinterColumns: []resource.PrinterColumn{
		{Name: "Type", Type: "string", JSONPath: ".type", Description: "The type of the secret."},
		{Name: "Data", Type: "integer", Description: "Number of keys in data.", Value: func(obj runtime.Object) any {
			return int64(len(obj.(*corev1.Secret).Data))
		}},
	},
	SelectableFields: map[string]func(runtime.Object) string{
		"type": func(obj runtime.Object) string { return string(obj.(*corev1.Secret).Type) },
	},
	OpenAPIDefinitions: builtin.GetOpenAPIDefinitions,
}

func defaultSecret(obj runtime.Object) {
	s := obj.(*corev1.Secret)
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}

func validateSecret(_ context.Context, obj runtime.Object) field.ErrorList {
	s := obj.(*corev1.Secret)
	dataPath := field.NewPath("data")
	var errs field.ErrorList
	size := 0
	for k, v := range s.Data {
		errs = append(errs, checkKey(dataPath, k)...)
		size += len(v)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	requireKey := func(key string) {
		if _, ok := s.Data[key]; !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
		}
	}
	requireJSON := func(key string) {
		v, ok := s.Data[key]
		if !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
			return
		}
		var m map[string]any
		if err := json.Unmarshal(v, &m); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeTLS:
		requireKey(corev1.TLSCertKey)
		requireKey(corev1.TLSPrivateKeyKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, pass := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !pass {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		requireKey(corev1.SSHAuthPrivateKey)
	case corev1.SecretTypeDockercfg:
		requireJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	}
	return errs
}

func validateSecretUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	s, prev := obj.(*corev1.Secret), old.(*corev1.Secret)
	var errs field.ErrorList
	if s.Type != prev.Type {
		errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, "field is immutable"))
	}
	if isTrue(prev.Immutable) {
		errs = append(errs, immutableWhenSet(field.NewPath("immutable"), s.Immutable, prev.Immutable)...)
		errs = append(errs, immutableWhenSet(field.NewPath("data"), s.Data, prev.Data)...)
	}
	return errs
}

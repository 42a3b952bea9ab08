package cluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// statusCodecs encode the Status answers of Handler.
var statusCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s)
}()

func schemaGroupVersion() schema.GroupVersion { return schema.GroupVersion{Version: "v1"} }

// schemaGroupResource names the join in Status details.
func schemaGroupResource() schema.GroupResource {
	return schema.GroupResource{Group: "cluster.customapi.io", Resource: "members"}
}

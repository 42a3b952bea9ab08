package server

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/customapi/customapi/pkg/review"
)

// installReviews serves authentication.k8s.io/v1 (tokenreviews,
// selfsubjectreviews) and authorization.k8s.io/v1 (subjectaccessreviews,
// selfsubjectaccessreviews, localsubjectaccessreviews,
// selfsubjectrulesreviews), answered by the server's token authenticators,
// authorizer and rule resolver. Their kinds are in the scheme
// (review.AddToScheme, called by New).
func (s *Server) installReviews(codecs serializer.CodecFactory, cfg review.Config) error {
	for gv, storages := range review.Storages(cfg) {
		info := genericapiserver.NewDefaultAPIGroupInfo(gv.Group, s.registry.Scheme(), metav1.ParameterCodec, codecs)
		info.VersionedResourcesStorageMap[gv.Version] = storages
		if err := s.generic.InstallAPIGroup(&info); err != nil {
			return fmt.Errorf("server: install %s: %w", gv, err)
		}
	}
	return nil
}

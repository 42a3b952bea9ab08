package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	v1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1"
)

// roundTripFuzzerFuncs keeps the fuzzer of the generated
// TestConversionRoundTrip (zz_generated.roundtrip_test.go) to the v1
// values a server accepts: no "/" in spec.placement (fleetapi's validation
// refuses it, as v1alpha1 writes the placement "<region>/<zone>") and a
// spec.replicas that is not 0 (decoding v1alpha1 defaults 0 to 1, as a
// server does).
func roundTripFuzzerFuncs(serializer.CodecFactory) []interface{} {
	return []interface{}{
		func(s *v1.FleetSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Replicas == 0 {
				s.Replicas = 1
			}
			s.Placement.Region = strings.ReplaceAll(s.Placement.Region, "/", "-")
			s.Placement.Zone = strings.ReplaceAll(s.Placement.Zone, "/", "-")
		},
	}
}

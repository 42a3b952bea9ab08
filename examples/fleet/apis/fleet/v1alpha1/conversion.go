package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/conversion"

	v1 "github.com/customapi/customapi/examples/fleet/apis/fleet/v1"
)

// The conversions of the fields v1 renamed or split, which conversion-gen
// cannot write (zz_generated.conversion.go calls these; its autoConvert_*
// functions convert the other fields).

// Convert_v1alpha1_FleetSpec_To_v1_FleetSpec converts spec.size to
// spec.replicas and splits spec.region at its first "/" into
// spec.placement.region and spec.placement.zone: "eu-west/a" is region
// "eu-west", zone "a". A region without "/", or whose "/" is its last
// character, is the placement's region alone, with zone "", so that every
// v1alpha1 value converts back unchanged.
func Convert_v1alpha1_FleetSpec_To_v1_FleetSpec(in *FleetSpec, out *v1.FleetSpec, s conversion.Scope) error {
	if err := autoConvert_v1alpha1_FleetSpec_To_v1_FleetSpec(in, out, s); err != nil {
		return err
	}
	out.Replicas = in.Size
	region, zone, ok := strings.Cut(in.Region, "/")
	if !ok || zone == "" {
		region, zone = in.Region, ""
	}
	out.Placement = v1.Placement{Region: region, Zone: zone}
	return nil
}

// Convert_v1_FleetSpec_To_v1alpha1_FleetSpec converts spec.replicas to
// spec.size and joins spec.placement into spec.region: "<region>/<zone>",
// or the region alone when the zone is "". v1 refuses a "/" in either
// (fleetapi's validation), so that every v1 value converts back unchanged.
func Convert_v1_FleetSpec_To_v1alpha1_FleetSpec(in *v1.FleetSpec, out *FleetSpec, s conversion.Scope) error {
	if err := autoConvert_v1_FleetSpec_To_v1alpha1_FleetSpec(in, out, s); err != nil {
		return err
	}
	out.Size = in.Replicas
	out.Region = in.Placement.Region
	if in.Placement.Zone != "" {
		out.Region += "/" + in.Placement.Zone
	}
	return nil
}

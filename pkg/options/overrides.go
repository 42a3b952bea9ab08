package options

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/klog/v2"

	"github.com/customapi/customapi/pkg/datadir"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// customResourceDefinitions is the resource of CustomResourceDefinitions.
var customResourceDefinitions = apiextensionsv1.Resource("customresourcedefinitions")

// checkOverrides returns the problems of --etcd-servers-overrides for
// the resources served (registry.CheckOverrides), each naming the flag.
// CustomResourceDefinitions are refused: they stay on the main etcd with
// their custom resources.
func (o *StorageOptions) checkOverrides(resources []resource.Resource) error {
	overrides, err := o.Etcd.Overrides()
	if err != nil {
		return err
	}
	var errs []error
	var compiledIn []storage.Override
	for _, ov := range overrides {
		if ov.Resource == customResourceDefinitions {
			errs = append(errs, fmt.Errorf("--etcd-servers-overrides: %q: CustomResourceDefinitions stay on the main etcd with their custom resources; overrides apply only to resources compiled into the server",
				storage.OverrideName(ov.Resource)))
			continue
		}
		compiledIn = append(compiledIn, ov)
	}
	for _, err := range registry.CheckOverrides(compiledIn, resources) {
		errs = append(errs, fmt.Errorf("--etcd-servers-overrides: %w", err))
	}
	return errors.Join(errs...)
}

// RecordOverrides writes the data dir's datadir.EtcdOverridesFile for the
// registry's overrides (or removes it when there are none), and warns when
// the previous record named resources that this start keeps elsewhere:
// their objects on that etcd are not served now.
func (o *StorageOptions) RecordOverrides(dataDir string, reg *registry.Registry) error {
	prev, err := datadir.ReadEtcdOverrides(dataDir)
	if err != nil {
		klog.Warningf("%v; it is replaced", err)
	}
	overrides, _ := o.Etcd.Overrides()
	rec := datadir.EtcdOverridesRecord{}
	for _, ov := range overrides {
		r := datadir.RecordedOverride{Resource: storage.OverrideName(ov.Resource), Servers: ov.Etcd.Endpoints}
		for _, res := range reg.Resources() {
			stored := res.GroupResource()
			if !res.StoredAs.Empty() {
				stored = res.StoredAs.GroupResource()
			}
			if stored == ov.Resource {
				r.Resources = append(r.Resources, res.GroupResource().String())
			}
		}
		rec.Overrides = append(rec.Overrides, r)
	}
	if prev != nil {
		for _, p := range prev.Overrides {
			i := slices.IndexFunc(rec.Overrides, func(r datadir.RecordedOverride) bool { return r.Resource == p.Resource })
			if i < 0 || !slices.Equal(sortedCopy(rec.Overrides[i].Servers), sortedCopy(p.Servers)) {
				klog.Warningf("the previous start on data dir %s stored %s on etcd %s (--etcd-servers-overrides=%s#%s); this start does not: objects stored there are not served unless they were moved",
					dataDir, strings.Join(p.Resources, ", "), strings.Join(p.Servers, ","), p.Resource, strings.Join(p.Servers, ";"))
			}
		}
	}
	if err := datadir.WriteEtcdOverrides(dataDir, rec); err != nil {
		return err
	}
	return nil
}

// sortedCopy returns a sorted copy of s.
func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

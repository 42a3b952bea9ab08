package registry

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/etcd"
	"github.com/customapi/customapi/pkg/resource"
	"github.com/customapi/customapi/pkg/storage"
)

// EtcdOverride is an etcd cluster that holds some resources' objects
// instead of the registry's main etcd (storage.Config.Overrides, the
// flag --etcd-servers-overrides), with its health check.
type EtcdOverride struct {
	// Etcd is the cluster.
	Etcd etcd.ClientConfig
	// Resources are the resources whose objects it holds: those
	// overridden and those stored as them (events.events.k8s.io with
	// events), in the order of the registry's resources.
	Resources []schema.GroupResource
	check     func() error
}

// Check returns nil when the cluster answers kube-apiserver's etcd health
// check (a linearizable read, 2 s timeout), else an error naming its
// endpoints and resources; an error after the registry's Close.
func (o EtcdOverride) Check() error {
	if err := o.check(); err != nil {
		return fmt.Errorf("etcd %s (%s): %w", strings.Join(o.Etcd.Endpoints, ","), grList(o.Resources), err)
	}
	return nil
}

// EtcdOverrides returns the etcd clusters of the registry's overrides
// (storage.Config.OverrideEtcds, in that order: the order kube-apiserver
// numbers its etcd-override-N checks in), each with the resources whose
// objects it holds; none without overrides.
func (r *Registry) EtcdOverrides() []EtcdOverride { return slices.Clone(r.overrides) }

// CheckOverrides returns one error per override that the resources do not
// allow, each naming the override as --etcd-servers-overrides writes it
// ("/events", "coordination.k8s.io/leases") and why: a resource none of
// the resources is, with what the user may have meant (the core group is
// written empty; the group that serves a plural of that name; what the
// group serves), or a resource stored as another (resource.Resource.StoredAs),
// which moves with that other. Custom resources of CustomResourceDefinitions
// are never among the resources: as in kube-apiserver, overrides apply
// only to resources compiled into the server. registry.Open calls it;
// servers call it to name their flag.
func CheckOverrides(overrides []storage.Override, resources []resource.Resource) []error {
	byGR := map[schema.GroupResource]resource.Resource{}
	groups := map[string][]string{} // served plurals by group
	for _, res := range resources {
		gr := res.GroupResource()
		if _, ok := byGR[gr]; !ok {
			byGR[gr] = res
			groups[gr.Group] = append(groups[gr.Group], gr.Resource)
		}
	}
	var errs []error
	for _, o := range overrides {
		name := storage.OverrideName(o.Resource)
		res, ok := byGR[o.Resource]
		switch {
		case ok && !res.StoredAs.Empty():
			stored := res.StoredAs.GroupResource()
			errs = append(errs, fmt.Errorf("%q: %s is stored as %s and moves with it: override %q instead, which moves both",
				name, o.Resource, describeGR(stored), storage.OverrideName(stored)))
		case ok:
		default:
			errs = append(errs, fmt.Errorf("%q: %s", name, notServed(o.Resource, byGR, groups)))
		}
	}
	return errs
}

// notServed says why gr is not a resource the registry serves, with what
// the user may have meant.
func notServed(gr schema.GroupResource, byGR map[schema.GroupResource]resource.Resource, groups map[string][]string) string {
	compiledIn := "overrides apply only to resources compiled into the server (custom resources of CustomResourceDefinitions always stay on the main etcd)"
	core := schema.GroupResource{Resource: gr.Resource}
	if _, ok := byGR[core]; ok && (gr.Group == "core" || gr.Group == "v1" || gr.Group == "api") {
		return fmt.Sprintf("the core group is written empty: %q", storage.OverrideName(core))
	}
	var elsewhere []string
	for other := range byGR {
		if other.Resource == gr.Resource && other.Group != gr.Group {
			elsewhere = append(elsewhere, fmt.Sprintf("%q", storage.OverrideName(other)))
		}
	}
	slices.Sort(elsewhere)
	if len(elsewhere) != 0 {
		return fmt.Sprintf("no resource %s is served in %s; did you mean %s?", gr.Resource, describeGroup(gr.Group), strings.Join(elsewhere, " or "))
	}
	if plurals, ok := groups[gr.Group]; ok {
		plurals = slices.Clone(plurals)
		slices.Sort(plurals)
		return fmt.Sprintf("this server serves no resource %s in %s (it serves %s there); %s", gr.Resource, describeGroup(gr.Group), strings.Join(plurals, ", "), compiledIn)
	}
	return fmt.Sprintf("this server serves no resource of %s; %s", describeGroup(gr.Group), compiledIn)
}

// describeGroup names a group in a message.
func describeGroup(g string) string {
	if g == "" {
		return "the core group"
	}
	return "group " + g
}

// describeGR names a resource in a message: "events (core group)" or
// "leases.coordination.k8s.io".
func describeGR(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource + " (core group)"
	}
	return gr.String()
}

// grList joins resources' names.
func grList(grs []schema.GroupResource) string {
	names := make([]string, len(grs))
	for i, gr := range grs {
		names[i] = gr.String()
	}
	return strings.Join(names, ", ")
}

// storedGroupResource is the resource whose keys hold res's objects: the
// one it is stored as, or itself.
func storedGroupResource(res resource.Resource) schema.GroupResource {
	if !res.StoredAs.Empty() {
		return res.StoredAs.GroupResource()
	}
	return res.GroupResource()
}

// openOverrides builds r.overrides from r.storage (its Etcd filled in):
// one per distinct override cluster, with its resources and health check.
func (r *Registry) openOverrides() error {
	for _, oe := range r.storage.OverrideEtcds() {
		o := EtcdOverride{Etcd: oe.Etcd}
		for _, res := range r.resources {
			if slices.Contains(oe.Resources, storedGroupResource(res)) {
				o.Resources = append(o.Resources, res.GroupResource())
			}
		}
		check, err := storage.NewEtcdCheck(oe.Etcd, r.stop)
		if err != nil {
			return err
		}
		o.check = check
		r.overrides = append(r.overrides, o)
	}
	return nil
}

// etcdGroup is a set of resources on one etcd.
type etcdGroup struct {
	etcd      etcd.ClientConfig
	resources []resource.Resource
}

// byEtcd groups resources by the etcd that holds their keys
// (storage.Config.EtcdFor of the resource they are stored as): the main
// etcd's first, then the overrides' in the order they first appear.
func (r *Registry) byEtcd(resources []resource.Resource) []etcdGroup {
	groups := []etcdGroup{{etcd: r.etcdCfg}}
	index := map[string]int{storage.EtcdKey(r.etcdCfg): 0}
	for _, res := range resources {
		e := r.storage.EtcdFor(storedGroupResource(res))
		k := storage.EtcdKey(e)
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, etcdGroup{etcd: e})
		}
		groups[i].resources = append(groups[i].resources, res)
	}
	if len(groups[0].resources) == 0 {
		groups = groups[1:]
	}
	return groups
}

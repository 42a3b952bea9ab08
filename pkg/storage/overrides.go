package storage

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/etcd"
)

// Override keeps the objects of one resource in an etcd cluster of its own
// (Config.Overrides), as kube-apiserver's --etcd-servers-overrides does:
// its keys, <prefix>/<group>/<resource>/..., are written to and read from
// Etcd instead of Config.Etcd, with the same prefix, encoding, encryption,
// watch cache, deadlines, error mapping, compaction and object counts. The
// classic case is Events (many short-lived writes) or Leases (frequent
// renewals), kept away from the etcd of everything else.
type Override struct {
	// Resource is the resource whose keys move. A resource stored as
	// another (resource.Resource.StoredAs, events.events.k8s.io as core
	// events) moves with that other: name the other. Custom resources of
	// CustomResourceDefinitions are never overridden (they stay on
	// Config.Etcd), as in kube-apiserver, where the flag applies only to
	// resources compiled into the server.
	Resource schema.GroupResource
	// Etcd is the cluster that holds the resource's keys. With the flag,
	// its endpoints are the override's servers and its TLS files those of
	// --etcd-servers (--etcd-cafile, --etcd-certfile, --etcd-keyfile), as
	// kube-apiserver uses them.
	Etcd etcd.ClientConfig
}

// OverrideName returns gr as --etcd-servers-overrides writes it:
// "<group>/<resource>", the core group empty ("/events",
// "coordination.k8s.io/leases").
func OverrideName(gr schema.GroupResource) string { return gr.Group + "/" + gr.Resource }

// overrideSyntax is the syntax of one --etcd-servers-overrides value.
const overrideSyntax = `group/resource#servers, servers separated by ";" and the core group empty, for example "/events#https://10.0.0.5:2379;https://10.0.0.6:2379"`

// ParseEtcdServersOverrides parses the values of kube-apiserver's
// --etcd-servers-overrides (the flag is comma-separated; each value is
// group/resource#servers, the servers separated by ";", the core group
// written as an empty group: "/events#https://10.0.0.5:2379"), giving each
// override tls's TLS files (the flags of --etcd-servers; tls's endpoints
// are ignored). Errors name the flag and the value: a value that is not of
// that form (as kube-apiserver's ParseEtcdServersOverrides refuses), an
// empty resource, a server that is not an http:// or https:// URL, or a
// resource named twice. Whether the server serves the resource is checked
// where the resources are known (registry.CheckOverrides).
func ParseEtcdServersOverrides(values []string, tls etcd.ClientConfig) ([]Override, error) {
	var out []Override
	var errs []error
	seen := map[schema.GroupResource]string{}
	for _, v := range values {
		o, err := parseOverride(v, tls)
		if err != nil {
			errs = append(errs, fmt.Errorf("--etcd-servers-overrides: %q: %w", v, err))
			continue
		}
		if prev, ok := seen[o.Resource]; ok {
			errs = append(errs, fmt.Errorf("--etcd-servers-overrides: %q: %s is overridden twice (also by %q): name each resource once", v, OverrideName(o.Resource), prev))
			continue
		}
		seen[o.Resource] = v
		out = append(out, o)
	}
	if len(errs) != 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// parseOverride parses one value, group/resource#servers.
func parseOverride(v string, tls etcd.ClientConfig) (Override, error) {
	tokens := strings.Split(v, "#")
	if len(tokens) != 2 {
		return Override{}, fmt.Errorf("must be %s", overrideSyntax)
	}
	gr := strings.Split(tokens[0], "/")
	if len(gr) != 2 {
		return Override{}, fmt.Errorf("%q is not group/resource (a version has no place in it); must be %s", tokens[0], overrideSyntax)
	}
	if gr[1] == "" {
		return Override{}, fmt.Errorf("no resource before \"#\"; must be %s", overrideSyntax)
	}
	if strings.TrimSpace(tokens[0]) != tokens[0] || strings.ContainsAny(tokens[0], " \t") {
		return Override{}, fmt.Errorf("%q contains spaces; must be %s", tokens[0], overrideSyntax)
	}
	servers := strings.Split(tokens[1], ";")
	for _, s := range servers {
		if s == "" {
			return Override{}, fmt.Errorf("an empty server; must be %s", overrideSyntax)
		}
	}
	c := etcd.ClientConfig{Endpoints: servers, CAFile: tls.CAFile, CertFile: tls.CertFile, KeyFile: tls.KeyFile}
	if err := c.Validate(); err != nil {
		return Override{}, err
	}
	return Override{Resource: schema.GroupResource{Group: gr[0], Resource: gr[1]}, Etcd: c}, nil
}

// validateOverrides checks Config.Overrides: each has a resource and a
// valid etcd, and no resource is named twice.
func validateOverrides(overrides []Override) error {
	seen := map[schema.GroupResource]bool{}
	for i, o := range overrides {
		if o.Resource.Resource == "" {
			return fmt.Errorf("overrides[%d]: no resource", i)
		}
		if err := o.Etcd.Validate(); err != nil {
			return fmt.Errorf("overrides[%d] (%s): %w", i, OverrideName(o.Resource), err)
		}
		if seen[o.Resource] {
			return fmt.Errorf("overrides[%d]: %s is overridden twice", i, OverrideName(o.Resource))
		}
		seen[o.Resource] = true
	}
	return nil
}

// OverrideEtcd is one etcd cluster of Config.Overrides and the resources
// whose keys it holds.
type OverrideEtcd struct {
	// Etcd is the cluster (the first override's configuration when several
	// name the same one).
	Etcd etcd.ClientConfig
	// Resources are the overridden resources it holds, in the order of
	// Config.Overrides.
	Resources []schema.GroupResource
}

// OverrideEtcds returns the distinct etcd clusters of c.Overrides, in the
// order they first appear, as kube-apiserver numbers its etcd-override-N
// health checks: overrides whose endpoints are the same set (in any order)
// with the same TLS files are one cluster. Overrides that name c.Etcd
// itself are left out: their keys are on the main etcd.
func (c Config) OverrideEtcds() []OverrideEtcd {
	var out []OverrideEtcd
	index := map[string]int{}
	main := EtcdKey(c.Etcd)
	for _, o := range c.Overrides {
		k := EtcdKey(o.Etcd)
		if len(c.Etcd.Endpoints) != 0 && k == main {
			continue
		}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, OverrideEtcd{Etcd: o.Etcd})
		}
		out[i].Resources = append(out[i].Resources, o.Resource)
	}
	return out
}

// EtcdFor returns the etcd that holds the keys of gr: its override's, or
// c.Etcd. For a resource stored as another, pass the other.
func (c Config) EtcdFor(gr schema.GroupResource) etcd.ClientConfig {
	for _, o := range c.Overrides {
		if o.Resource == gr {
			return o.Etcd
		}
	}
	return c.Etcd
}

// EtcdKey identifies an etcd cluster configuration: its endpoints sorted
// (their order does not matter) and its TLS files. Two configurations
// with the same key reach the same cluster the same way.
func EtcdKey(c etcd.ClientConfig) string {
	eps := slices.Clone(c.Endpoints)
	slices.Sort(eps)
	return strings.Join(eps, ";") + "|" + c.CAFile + "|" + c.CertFile + "|" + c.KeyFile
}

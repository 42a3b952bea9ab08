package options

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"

	"github.com/customapi/customapi/pkg/admission"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/resource"
)

// AdmissionOptions are the admission chain's settings: kube-apiserver's
// flags --enable-admission-plugins, --disable-admission-plugins and
// --admission-control-config-file, customapi's
// --webhook-service-resolution, and the users' Go plugins. The chain is,
// in order (see docs/serving.md, "Admission"): NamespaceLifecycle (with
// the namespaces battery), Plugins, ResourceAdmit (the resources' Admit
// hooks; cannot be disabled), MutatingAdmissionPolicy,
// MutatingAdmissionWebhook, ValidatingAdmissionPolicy,
// ValidatingAdmissionWebhook (each of the last four only when the server
// serves namespaces and its admissionregistration.k8s.io/v1 kinds).
// The zero value runs every plugin.
type AdmissionOptions struct {
	// EnablePlugins are plugins to run besides the default ones
	// (--enable-admission-plugins). Every plugin of the chain is on by
	// default, so this only checks names; it exists for kube-apiserver's
	// command lines.
	EnablePlugins []string
	// DisablePlugins are plugins left out of the chain, by name
	// (--disable-admission-plugins): NamespaceLifecycle, the four above
	// and the names of Plugins.
	DisablePlugins []string
	// ConfigFile is the admission configuration file
	// (--admission-control-config-file), an apiserver.config.k8s.io/v1
	// AdmissionConfiguration as kube-apiserver's: per plugin, for the
	// webhooks a WebhookAdmissionConfiguration (kubeConfigFile: the
	// credentials customapi presents to webhooks; staticManifestsDir), for
	// the policies a ValidatingAdmissionPolicyConfiguration or
	// MutatingAdmissionPolicyConfiguration (staticManifestsDir). A
	// staticManifestsDir (absolute) holds webhooks and policies loaded at
	// start and reloaded when the files change, which the API cannot
	// delete (KEP-5793; names end in .static.k8s.io, webhooks by url only,
	// policies without params).
	ConfigFile string
	// ServiceResolution maps webhooks' clientConfig.service references,
	// "namespace/name", to where they are served, "host:port" or "host"
	// (the reference's port), since customapi has no Services
	// (--webhook-service-resolution). A service not mapped is called at
	// https://<name>.<namespace>.svc:<port>, as upstream's default
	// resolver does. Either way TLS verifies the webhook's certificate for
	// <name>.<namespace>.svc against its caBundle, as kube does.
	ServiceResolution map[string]string
	// Plugins are the users' Go admission plugins (registry.Config.
	// AdmissionPlugins), run after NamespaceLifecycle, in their order, by
	// both doors. Not a flag.
	Plugins []resource.AdmissionPlugin
}

// AddFlags binds the options to kube-apiserver's flag names and
// --webhook-service-resolution.
func (o *AdmissionOptions) AddFlags(fs *pflag.FlagSet) {
	names := strings.Join(o.knownPlugins(), ", ")
	fs.StringSliceVar(&o.EnablePlugins, "enable-admission-plugins", o.EnablePlugins, "Admission plugins to enable besides the default ones; every plugin is on by default ("+names+"). The order of the chain is fixed.")
	fs.StringSliceVar(&o.DisablePlugins, "disable-admission-plugins", o.DisablePlugins, "Admission plugins to leave out of the chain: "+names+". ("+registry.ResourceAdmitPlugin+", the resources' own Admit hooks, cannot be disabled.)")
	fs.StringVar(&o.ConfigFile, "admission-control-config-file", o.ConfigFile, "File with admission control configuration (apiserver.config.k8s.io/v1 AdmissionConfiguration): the webhooks' kubeConfigFile, staticManifestsDir of webhooks and policies loaded at start.")
	fs.StringToStringVar(&o.ServiceResolution, "webhook-service-resolution", o.ServiceResolution, "Where admission webhooks named by clientConfig.service are served, as namespace/name=host:port (or =host to keep the service's port), comma-separated. Services not named are called at https://NAME.NAMESPACE.svc:PORT. TLS checks the webhook's certificate for NAME.NAMESPACE.svc.")
}

// knownPlugins are the names DisablePlugins and EnablePlugins take, in
// the chain's order: NamespaceLifecycle, Plugins, the dynamic plugins.
func (o *AdmissionOptions) knownPlugins() []string {
	names := []string{lifecycle.PluginName}
	for _, p := range o.Plugins {
		names = append(names, p.Name)
	}
	names = append(names, admission.OwnerReferencesPermissionEnforcement)
	return append(names, admission.PluginNames()...)
}

// Validate returns every problem, naming the flags: a plugin name that is
// not known (knownPlugins), ResourceAdmit in --disable-admission-plugins,
// a name both enabled and disabled, a config file that cannot be read,
// a bad --webhook-service-resolution entry.
func (o *AdmissionOptions) Validate() []error {
	var errs []error
	known := o.knownPlugins()
	for _, f := range []struct {
		flag  string
		names []string
	}{{"--enable-admission-plugins", o.EnablePlugins}, {"--disable-admission-plugins", o.DisablePlugins}} {
		for _, name := range f.names {
			switch {
			case name == registry.ResourceAdmitPlugin && f.flag == "--disable-admission-plugins":
				errs = append(errs, fmt.Errorf("%s: %s cannot be disabled (it runs the resources' own Admit hooks)", f.flag, name))
			case name == registry.ResourceAdmitPlugin:
			case !slices.Contains(known, name):
				errs = append(errs, fmt.Errorf("%s: unknown admission plugin %q (known: %s)", f.flag, name, strings.Join(known, ", ")))
			}
		}
	}
	var both []string
	for _, name := range o.EnablePlugins {
		if slices.Contains(o.DisablePlugins, name) && !slices.Contains(both, name) {
			both = append(both, name)
		}
	}
	if len(both) != 0 {
		errs = append(errs, fmt.Errorf("--enable-admission-plugins and --disable-admission-plugins both name %s", strings.Join(both, ", ")))
	}
	errs = append(errs, statFlagFile("--admission-control-config-file", o.ConfigFile)...)
	if _, err := admission.NewServiceResolver(o.ServiceResolution); err != nil {
		errs = append(errs, fmt.Errorf("--webhook-service-resolution: %w", err))
	}
	return errs
}

// Disabled says whether name is in DisablePlugins.
func (o *AdmissionOptions) Disabled(name string) bool {
	return slices.Contains(o.DisablePlugins, name)
}

// ApplyTo sets the Go part of the registry's chain (rc.AdmissionPlugins:
// Plugins, then with the garbage collector
// OwnerReferencesPermissionEnforcement, after them as kube-apiserver's
// in-tree plugins; rc.DisableAdmissionPlugins) and returns that plugin,
// for the server to bind (nil when not in the chain).
func (o *AdmissionOptions) ApplyTo(rc *registry.Config, garbageCollector bool) *admission.OwnerReferencesPermission {
	rc.AdmissionPlugins, rc.DisableAdmissionPlugins = slices.Clone(o.Plugins), slices.Clone(o.DisablePlugins)
	if !garbageCollector || o.Disabled(admission.OwnerReferencesPermissionEnforcement) {
		return nil
	}
	p := admission.NewOwnerReferencesPermission()
	rc.AdmissionPlugins = append(rc.AdmissionPlugins, resource.AdmissionPlugin{Name: admission.OwnerReferencesPermissionEnforcement, Plugin: p})
	return p
}

// ServiceResolver returns the resolver of webhooks' service references
// (ServiceResolution), with the service default/kubernetes, kube's name of
// the API server itself, sent to loopbackURL's host unless
// ServiceResolution maps it.
func (o *AdmissionOptions) ServiceResolver(loopbackURL string) (webhookutil.ServiceResolver, error) {
	r, err := admission.NewServiceResolver(withSelf(o.ServiceResolution, loopbackURL))
	if err != nil {
		return nil, fmt.Errorf("--webhook-service-resolution: %w", err)
	}
	return r, nil
}

// withSelf returns mapping with the service default/kubernetes mapped to
// the host of loopbackURL unless mapping names it.
func withSelf(mapping map[string]string, loopbackURL string) map[string]string {
	const self = "default/kubernetes"
	u, err := url.Parse(loopbackURL)
	if _, ok := mapping[self]; ok || err != nil || u.Host == "" {
		return mapping
	}
	m := maps.Clone(mapping)
	if m == nil {
		m = map[string]string{}
	}
	m[self] = u.Host
	return m
}

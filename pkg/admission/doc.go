// Package admission builds the dynamic part of customapi's admission chain
// from k8s.io/apiserver's plugins, as kube-apiserver builds it
// (k8s.io/apiserver/pkg/server/options.AdmissionOptions.ApplyTo): one
// admission.Interface running, in kube's order,
//
//	MutatingAdmissionPolicy    (k8s.io/apiserver/pkg/admission/plugin/policy/mutating)
//	MutatingAdmissionWebhook   (k8s.io/apiserver/pkg/admission/plugin/webhook/mutating)
//	ValidatingAdmissionPolicy  (k8s.io/apiserver/pkg/admission/plugin/policy/validating)
//	ValidatingAdmissionWebhook (k8s.io/apiserver/pkg/admission/plugin/webhook/validating)
//
// minus the plugins Config.Disabled names. The plugins come from upstream's
// admission.Plugins registry (NewFromPlugins), initialized by upstream's
// initializers (the generic one: clients, informers, authorizer, REST
// mapper, feature gates, drained notification; the webhook one: service
// resolver and authentication info resolver wrapper; the API server ID)
// and two of customapi's own, for what kube-apiserver's own initializers
// give: the resources excluded from admission (the review APIs, see
// ExcludedResources) and the loaders of static manifests (see Config.Resources).
// Each plugin is wrapped in upstream's controller metrics
// (apiserver_admission_controller_admission_duration_seconds, ...).
//
// The plugins read their configuration (webhooks, policies, bindings,
// namespaces) through informers of a client-go SharedInformerFactory: the
// caller starts it (a server does so in a post-start hook, after it
// listens) and a request arriving before the informers have synced waits,
// up to 10 s, as upstream's plugins do, then is refused 403 "not yet ready
// to handle request". The informers only sync when the API the clients
// reach serves namespaces and the six admissionregistration.k8s.io/v1 kinds.
//
// Webhooks reached by a service reference go to https://<name>.<namespace>.svc:<port>
// (upstream's default resolver), unless a ServiceResolver maps the service
// elsewhere (NewServiceResolver: a static map, since customapi has no
// Services); the TLS server name stays <name>.<namespace>.svc, as in kube.
//
// The admission configuration file (kube-apiserver's
// --admission-control-config-file, Config.ConfigFile) configures the
// plugins as in kube, including staticManifestsDir (KEP-5793, feature gate
// ManifestBasedAdmissionControlConfig, Beta and on in 1.37): webhooks and
// policies read from a directory at start (and reloaded when the files
// change), which the API cannot delete.
//
// The rest of the chain (NamespaceLifecycle, users' Go plugins, the
// resources' Admit hooks) belongs to the registry (pkg/registry), which
// runs this chain after its own for both doors.
package admission

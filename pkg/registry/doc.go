// Package registry turns a resource.Resource into the k8s.io/apiserver
// generic registry store (genericregistry.Store) that both the in-process
// client and the HTTP server use, with a strategy that gives kube-apiserver's
// semantics for custom types:
//
//   - names are DNS-1123 subdomains and valid path segments ("/", "..", "%"
//     are rejected), generateName is honoured;
//   - uid and creationTimestamp are set by the server, client values are
//     ignored, as are deletionTimestamp and generation on create;
//   - a create with metadata.resourceVersion set is rejected (422 Invalid,
//     where upstream answers 500);
//   - generation is 1 on create and grows by one on each update that changes
//     anything but metadata and status (the rule for custom resources);
//   - with a status subresource, status is ignored on create and update of
//     the main resource, and only status is written through /status;
//   - updates need a resourceVersion (optimistic concurrency) unless the
//     resource declares UnconditionalUpdate, no-op updates write nothing;
//   - finalizers and deletionTimestamp work as in Kubernetes: delete marks an
//     object with finalizers, removing the last finalizer deletes it;
//   - labels, annotations and finalizers are validated as ObjectMeta is in
//     Kubernetes.
//
// What one kind needs beyond these rules is its declaration's hooks, never a
// branch here: PrepareForCreate and PrepareForUpdate (the strategy),
// update-only Subresources, ShouldDeleteDuringUpdate, and OnOpen, whose
// RegistryHooks add admission plugins to the registry's chain and a delete
// of the kind's own. batteries.Namespaces is built that way: namespaced
// objects can then only be created in existing, non-terminating
// namespaces, as kube-apiserver does. A registry runs no controllers: a
// server runs them (pkg/controllers), as clients of its loopback door, the
// namespace controller (pkg/controllers/namespace) among them, which
// deletes the content of deleted namespaces as kube-controller-manager's
// does.
//
// Open builds a Registry: the scheme of the declared resources, one Store per
// resource (the main store and, with a status subresource, the status
// store), readiness and the etcd health check, and optionally an embedded
// etcd; Close releases the etcd connections, watch caches and the embedded
// etcd. Only this package turns a storage.Config (Config.Storage) into
// stores.
//
// Config.Storage.Overrides keeps some resources on etcds of their own
// (kube-apiserver's --etcd-servers-overrides): CheckOverrides refuses what
// cannot be overridden, EtcdOverrides reports each etcd with its resources
// and health check, and the stored versions records and RewriteStorage
// work on each resource's own etcd.
//
// Config.Storage.Transformers encrypts values at rest per resource, from a
// kube-apiserver EncryptionConfiguration (k8s.io/apiserver's
// encryptionconfig); both doors read and write through it.
//
// Registry.RewriteStorage re-encodes the stored objects that are not in the
// registry's storage media type (after a switch of --storage-media-type) or
// not under the primary encryption key (after a key rotation), as
// Kubernetes' storage version migrator does, with package
// pkg/storage/rewrite on the registry's stores; `customapi storage rewrite`
// runs it.
//
// Store's Get, List, Watch, Create, Update, Patch, Apply, Delete and
// DeleteCollection are the in-process request layer (request.go, patch.go,
// update.go): what kube-apiserver's handlers do below HTTP (option
// validation, list options and selectable fields, namespace checks,
// managedFields, the patch mechanisms of package pkg/patch, the answers'
// Status errors), on the same stores the HTTP server installs (APIGroups:
// their REST storage, whose writes k8s.io/apiserver's handlers wrap with
// the same steps). It is the only in-process way to the stores, so no
// write skips managedFields.
//
// Admission: the registry has one admission chain (Registry.Admission,
// admission.go), which both doors run with the same attributes: the HTTP
// server sets it as k8s.io/apiserver's AdmissionControl, and the in-process
// request layer calls it where kube-apiserver's handlers do (mutating
// plugins before the store, validating plugins inside it after the
// strategy). In order: the RegistryHooks' plugins (NamespaceLifecycle of
// the namespaces battery), Config.AdmissionPlugins (users' Go plugins),
// ResourceAdmit (the resources' Admit hooks), and the webhooks and
// policies of admissionregistration.k8s.io, which a server plugs in with
// SetDynamicAdmission because they need client-go clients.
// Config.DisableAdmissionPlugins leaves plugins out by name.
//
// Audit: the request layer audits every call of those Store methods
// (audit.go) with Config.Audit, the policy and sink of in-process
// requests, as k8s.io/apiserver's audit filters and handlers audit the
// same request over HTTP: the policy evaluated for the context's user and
// the request's attributes, the RequestReceived and ResponseComplete
// stages (and ResponseStarted for a watch), the request body and the
// response object as the handlers record them, the HTTP handlers' codes
// (201 for a create and for an update or apply that created its object,
// 202 for a delete with orphanDependents false that only marked it),
// requestURI the path and query the request has over HTTP, userAgent
// InProcessUserAgent and no source IPs. A call whose context already
// carries an audit context (it is made while serving an HTTP request, or
// from inside another in-process call, such as an admission plugin's
// read) is part of that request and makes no event of its own; the audit
// context is set before the policy is evaluated, so this holds when the
// outer request's level is None too. The OnOpen hooks' writes during
// Open (the default namespaces) are not requests and are not audited.
//
// See the Example functions (example_test.go; they run as tests).
package registry

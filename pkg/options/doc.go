// Package options holds the settings of a customapi server, one struct per
// concern as k8s.io/apiserver's options: ServingOptions (with TLSOptions),
// StorageOptions (etcd, watch cache, EncryptionOptions),
// AuthenticationOptions, AuthorizationOptions, AdmissionOptions,
// LimitOptions, DebugOptions and kube's AuditOptions, gathered in
// ServerOptions. Each has AddFlags (kube-apiserver's flag names where the
// meaning is the same), Validate() []error and ApplyTo, which applies it
// to k8s.io/apiserver's configuration or the registry's.
//
// ServerOptions.Config validates them, prepares the data dir (lock,
// certificates, tokens, encryption key, identity) and binds the port,
// then applies every concern, as RecommendedOptions.ApplyTo does, into a
// Config for server.New. ServerOptions.OpenRegistry opens the same storage
// without serving, for commands that work on the stored objects.
package options

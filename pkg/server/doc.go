// Package server assembles customapi's HTTPS API server on
// k8s.io/apiserver's GenericAPIServer: discovery, OpenAPI v2 and v3,
// server-side apply, JSON/merge patch, field validation, dry-run, tables
// for `kubectl get`, watch with bookmarks, paging, /healthz /livez
// /readyz, /metrics and /version, for the declared resources.
//
// The life of a server follows sample-apiserver's shape, its options in
// package options:
//
//	opts := options.NewServerOptions() // defaults; opts.AddFlags(fs) binds flags
//	cfg, err := opts.Config()          // validates, locks the data dir, binds the port, credentials, applies every option
//	srv, err := server.New(ctx, cfg, install.Customs, fleetapi.Devices)
//	err = srv.Run(ctx)                 // writes admin.kubeconfig and super-admin.kubeconfig, serves until ctx ends, then drains and stops
//	// (or srv.Close() to release a server that is not run)
//
// New opens the registry (package registry), completes the generic
// server's configuration with what needs it (authorizer, OpenAPI, the
// handler chain of package chain, health checks), builds the generic
// server (with CustomResourceDefinitions, package customresources'),
// installs the API groups (registry.APIGroups) and the review APIs, starts
// the admission plugins' informers through the in-memory pipe (package
// pipe, PipeConfig) and completes the admission chain, bootstraps RBAC and
// adds the hooks Run starts.
//
// Secure by default: HTTPS only, on 127.0.0.1:6443; a CA, an ECDSA P-256
// serving certificate and two bearer tokens are generated into the data
// directory on first start and reused afterwards (package datadir):
// <data-dir>/admin.kubeconfig (mode 0600) lets kubectl in as
// datadir.AdminUser, an ordinary user in datadir.AdminGroup (bound to
// cluster-admin under RBAC, held to the in-flight limits of
// options.LimitOptions), and super-admin.kubeconfig as
// datadir.SuperAdminUser in system:masters, the break-glass credential.
// Package options describes every flag: TLS, authentication (tokens, OIDC,
// client certificates), authorization modes, admission, storage and
// encryption, limits, audit.
//
// Objects live in an embedded etcd under <data-dir>/etcd unless
// --etcd-servers names an external cluster; --etcd-servers-overrides keeps
// some resources on etcds of their own, each with a /readyz check
// etcd-override-N (EtcdOverrideCheckName).
//
// The server runs its controllers in process, every one the same way
// (pkg/controllers' Runner): the built-in ones (package
// controllers/builtin: the namespace controller when it serves
// namespaces, the ValidatingAdmissionPolicy status controller when it
// serves the policies, the garbage collector with
// options.ServerOptions.GarbageCollector) and the program's own
// (options.ServerOptions.Controllers), each through the pipe and behind a
// Lease of its own, kube-system/customapi-<name>, held as
// options.Config.Identity (the data dir's), from the moment the server is
// ready until it starts to shut down.
package server

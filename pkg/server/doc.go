// Package server serves declared resources over a kubectl-compatible HTTPS
// API built on k8s.io/apiserver's GenericAPIServer: discovery, OpenAPI v2
// and v3, server-side apply, JSON/merge patch, field validation, dry-run,
// tables for `kubectl get`, watch with bookmarks, paging, /healthz /livez
// /readyz, /metrics and /version.
//
// The life of a server follows sample-apiserver's shape:
//
//	opts := server.NewOptions()          // defaults; opts.AddFlags(fs) binds flags
//	cfg, err := opts.Config()            // validates, locks the data dir, binds the port, certificates, credentials
//	srv, err := server.New(ctx, cfg.Complete(), install.Customs, fleetapi.Devices)
//	err = srv.Run(ctx)                   // writes admin.kubeconfig and super-admin.kubeconfig, serves until ctx ends, then drains and stops
//	// (or srv.Close() to release a server that is not run)
//
// Secure by default: HTTPS only, on 127.0.0.1:6443; a CA, an ECDSA P-256
// serving certificate and two bearer tokens are generated into the data
// directory on first start and reused afterwards:
// <data-dir>/admin.kubeconfig (mode 0600) lets kubectl in as
// datadir.AdminUser, an ordinary user in datadir.AdminGroup (bound to
// cluster-admin under RBAC, held to the in-flight limits of LimitOptions),
// and super-admin.kubeconfig as datadir.SuperAdminUser in system:masters,
// the break-glass credential (package datadir holds the data dir's
// layout). TLS 1.2
// with ECDHE AEAD suites or TLS 1.3 only (TLSOptions). Anonymous
// requests get 401. Bearer tokens (--token-auth-file, kube's CSV format),
// JWTs of OIDC issuers (--authentication-config, kube's
// AuthenticationConfiguration, reloaded when it changes) and x509 client
// certificates (--client-ca-file) authenticate;
// authenticated users may do everything unless
// --authorization-mode=Webhook delegates decisions to a SubjectAccessReview
// webhook, as kube-apiserver does.
//
// Objects live in an embedded etcd under <data-dir>/etcd unless
// --etcd-servers names an external cluster; --etcd-servers-overrides keeps
// some resources on etcds of their own, each with a /readyz check
// etcd-override-N (health.go).
//
// The server runs its controllers in process, every one the same way
// (pkg/controllers' Runner, controllers.go): the namespace controller when
// it serves namespaces, the ValidatingAdmissionPolicy status controller
// when it serves the policies, the garbage collector with
// Options.GarbageCollector, and the program's own (Options.Controllers),
// each through the in-process door (InProcessConfig) and behind a Lease
// of its own, kube-system/customapi-<name>, held as Config.Identity (the
// data dir's), from the moment the server is ready until it starts to
// shut down.
package server

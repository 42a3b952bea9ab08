// Package workspace names customapi's workspaces: isolated API spaces
// served by one server from one etcd, each with its own namespaces,
// objects, RBAC and field managers, sharing the server's kinds (Go types,
// batteries and CustomResourceDefinitions).
//
// A request reaches workspace NAME through the path prefix
// /clusters/NAME (PathPrefix), as kcp's logical clusters do, or, in
// process, through a context made by NewContext. Without either it reaches
// the default workspace (Default), which is what a server without
// workspaces serves: its keys in etcd are unchanged.
//
// In etcd, a named workspace's keys carry the segment %NAME after the
// resource's prefix (Key), so one store and one watch cache per resource
// serve every workspace:
//
//	/registry/test/customs/ns1/a            the default workspace
//	/registry/test/customs/%team-a/ns1/a    workspace team-a
//
// An object of a named workspace carries its workspace in the annotation
// customapi.io/workspace (Annotation, set by the server, never by a
// client). The wildcard Wildcard ("*") lists and watches every workspace
// at once, for the server's own controllers; informers of such lists key
// their objects by ObjectKey.
package workspace

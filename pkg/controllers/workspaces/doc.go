// Package workspaces is the workspace controller: it brings up the
// workspaces that tenancy.customapi.io/v1alpha1 Workspace objects declare
// (package workspace) and deletes everything in a deleted one.
//
// For a Workspace without a deletionTimestamp it creates the workspace's
// default namespaces (default, kube-system, kube-public) and sets phase
// Ready with the condition Ready True. For a deleted one it sets phase
// Terminating, deletes every object of the workspace (the namespaces,
// whose content the namespace controller deletes, and the objects of
// every cluster-scoped resource) and records what remains in the condition ContentRemaining
// (objects per resource and the finalizers holding them, as a namespace's
// conditions do). Once nothing remains it removes the Workspace's
// finalizer (batteries.WorkspaceFinalizer), which deletes it.
//
// Like the namespace controller it is a client of the server's loopback
// door, one client for every workspace (workspace.WrapTransport), run by
// a controllers.Runner behind its Lease; a server runs it whenever it
// serves batteries.Workspaces.
package workspaces

// Package cluster lets customapi servers form a highly available cluster
// whose embedded etcds are the members of one etcd cluster (etcd's raft
// does the replication): the first server starts one (--cluster-init), and
// each further server joins it through a running server (--server URL
// --token TOKEN).
//
// A join is one HTTPS request, POST JoinPath, from the joining server to a
// server of the cluster. The joining server first checks that the server
// presents the cluster's CA (the join token pins its SHA-256, see
// datadir.JoinToken), then sends the token's secret as a bearer token with
// its member name and etcd peer URL. The server adds the member as an etcd
// learner (refusing a name already a member: remove that member first) and
// answers with the files every server of the cluster shares (SharedFiles:
// the CA, the admin tokens, the generated encryption key, the join token,
// the etcd peer CA) and the initial cluster the new member starts with.
// The new member catches up as a learner and is promoted by the members
// (etcd.PromoteLearners, which servers run every PromoteInterval); then it
// serves the API on its own member.
//
// Members lists the membership and Remove removes another member (a dead
// server's). Leave removes the member of the server asked, once the others
// are healthy enough to go on without it; etcd then stops that member
// (etcd.ErrMemberRemoved), and its server stops.
package cluster

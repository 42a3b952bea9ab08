package storage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// CompactRevisionKey is the etcd key in which k8s.io/apiserver's compactor
// records the revision it compacted etcd's history at (its value, in
// decimal) and counts its compactions (the key's version, compared and
// set in one transaction, so that of several servers on one etcd one
// compacts per interval). The watch caches follow it to learn of a
// compaction; ReclaimSpace writes it the same way. It is not under the
// key prefix: every server on the etcd shares it.
const CompactRevisionKey = "compact_rev_key"

// compactRevisionAttempts bounds how often recordCompaction reads the key
// again after a server's compactor changed it first.
const compactRevisionAttempts = 10

// DatabaseSize is the size of one etcd member's database file.
type DatabaseSize struct {
	// Size is the file's size in bytes (etcd's dbSize: what the quota is
	// compared with).
	Size int64
	// InUse is the part holding data, in bytes (dbSizeInUse); the rest
	// is free pages, which etcd reuses and a defragmentation returns to
	// the file system.
	InUse int64
}

// MemberSpace is what ReclaimSpace did to one etcd member.
type MemberSpace struct {
	// Name and ID are the member's (as etcdctl member list shows them,
	// the ID in hex).
	Name string
	ID   uint64
	// Endpoint is the client URL the member was defragmented through.
	Endpoint string
	// Before and After are its database before the compaction and after
	// its defragmentation.
	Before, After DatabaseSize
	// Quota is its backend quota (--quota-backend-bytes) in bytes.
	Quota int64
	// Defragmentation is how long the defragmentation took: the member
	// answered no read or write meanwhile.
	Defragmentation time.Duration
}

// String is one line for people: "member customapi (https://127.0.0.1:40123):
// database 64 MiB (61.2 MiB in use) -> 1.2 MiB (1.1 MiB in use), quota 64
// MiB, defragmented in 310ms".
func (m MemberSpace) String() string {
	s := fmt.Sprintf("member %s (%s): database %s (%s in use) -> %s (%s in use)", m.Name, m.Endpoint,
		formatBytes(m.Before.Size), formatBytes(m.Before.InUse), formatBytes(m.After.Size), formatBytes(m.After.InUse))
	if m.Quota > 0 {
		s += ", quota " + formatBytes(m.Quota)
	}
	if m.Defragmentation > 0 {
		s += ", defragmented in " + m.Defragmentation.Round(time.Millisecond).String()
	}
	return s
}

// ReclaimReport is what ReclaimSpace did.
type ReclaimReport struct {
	// Revision is the revision etcd's history was compacted at (the
	// current one): watches from an older resourceVersion get 410 Gone
	// and list again.
	Revision int64
	// Members are the members, in etcd's member list order.
	Members []MemberSpace
	// Disarmed are the NOSPACE alarms disarmed.
	Disarmed []Alarm
	// Alarms are the alarms still raised at the end (a CORRUPT alarm is
	// never disarmed here).
	Alarms []Alarm
}

// ReclaimOptions adjust ReclaimSpace.
type ReclaimOptions struct {
	// Progress, if set, is told each step before it starts (for example
	// "defragmenting member customapi (https://127.0.0.1:40123): 512 MiB"):
	// a defragmentation of a large database takes a while.
	Progress func(step string)
}

// ReclaimSpace returns to the file system the space etcd's history and
// free pages hold, and clears a full quota, through cli (any member of the
// cluster):
//
//  1. it compacts etcd's history at the current revision, and waits for
//     the compaction to be applied (etcd's physical compaction), as
//     `etcdctl compact --physical` does;
//  2. it defragments every member of etcd's member list in turn (etcd's
//     Maintenance.Defragment at the member's first client URL, as
//     `etcdctl defrag --cluster`): each member blocks its reads and writes
//     while it copies its database into a new file;
//  3. when every member's database is now below its quota, it disarms the
//     NOSPACE alarms (AlarmDisarm; other alarms are left alone);
//  4. it records the compaction in CompactRevisionKey as k8s.io/apiserver's
//     compactor does (a transaction that compares the key's version and
//     puts the revision), so that the watch caches of running servers
//     learn of it; this write comes last because etcd refuses it while
//     NOSPACE is raised.
//
// It returns the report with an error when a step fails (what was done is
// in the report), including when a database is still not below its quota
// after its defragmentation: the live data itself fills the quota, and the
// error says to delete objects or raise the quota, then run it again.
func ReclaimSpace(ctx context.Context, cli *clientv3.Client, opts ReclaimOptions) (ReclaimReport, error) {
	var rep ReclaimReport
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	members, err := cli.MemberList(ctx)
	if err != nil {
		return rep, fmt.Errorf("etcd member list: %w", err)
	}
	for _, m := range members.Members {
		if len(m.ClientURLs) == 0 {
			return rep, fmt.Errorf("etcd member %s (%x) has no client URL (not started yet?): cannot defragment it", m.Name, m.ID)
		}
		ms := MemberSpace{Name: m.Name, ID: m.ID, Endpoint: m.ClientURLs[0]}
		st, err := cli.Status(ctx, ms.Endpoint)
		if err != nil {
			return rep, fmt.Errorf("etcd member %s at %s: status: %w", ms.Name, ms.Endpoint, err)
		}
		ms.Before, ms.Quota = DatabaseSize{Size: st.DbSize, InUse: st.DbSizeInUse}, st.DbSizeQuota
		rep.Members = append(rep.Members, ms)
	}

	// 1. Compact at the current revision.
	head, err := cli.Get(ctx, CompactRevisionKey)
	if err != nil {
		return rep, fmt.Errorf("etcd: read %s: %w", CompactRevisionKey, err)
	}
	rep.Revision = head.Header.Revision
	progress(fmt.Sprintf("compacting etcd's history at revision %d", rep.Revision))
	if _, err := cli.Compact(ctx, rep.Revision, clientv3.WithCompactPhysical()); err != nil &&
		!strings.Contains(rpctypes.ErrorDesc(err), rpctypes.ErrCompacted.Error()) {
		return rep, fmt.Errorf("etcd: compact at revision %d: %w", rep.Revision, err)
	}

	// 2. Defragment each member in turn.
	for i := range rep.Members {
		ms := &rep.Members[i]
		progress(fmt.Sprintf("defragmenting member %s (%s): database %s, %s in use before the compaction", ms.Name, ms.Endpoint, formatBytes(ms.Before.Size), formatBytes(ms.Before.InUse)))
		start := time.Now()
		if _, err := cli.Defragment(ctx, ms.Endpoint); err != nil {
			return rep, fmt.Errorf("etcd member %s at %s: defragment: %w", ms.Name, ms.Endpoint, err)
		}
		ms.Defragmentation = time.Since(start)
		st, err := cli.Status(ctx, ms.Endpoint)
		if err != nil {
			return rep, fmt.Errorf("etcd member %s at %s: status: %w", ms.Name, ms.Endpoint, err)
		}
		ms.After = DatabaseSize{Size: st.DbSize, InUse: st.DbSizeInUse}
	}

	// 3. Disarm NOSPACE once there is room below every quota.
	for _, ms := range rep.Members {
		if ms.Quota > 0 && ms.After.Size >= ms.Quota {
			rep.Alarms, _ = listAlarms(ctx, cli)
			return rep, fmt.Errorf("the database of etcd member %s is still %s after defragmentation, not below its quota of %s: the live data itself fills the quota; "+
				"delete objects that are not needed (deletes work while NOSPACE is raised) or raise the quota (--quota-backend-bytes), then run this again",
				ms.Name, formatBytes(ms.After.Size), formatBytes(ms.Quota))
		}
	}
	alarms, err := listAlarms(ctx, cli)
	if err != nil {
		return rep, err
	}
	for _, a := range alarms {
		if a.Type != AlarmNoSpace {
			rep.Alarms = append(rep.Alarms, a)
			continue
		}
		progress("disarming " + a.String())
		if _, err := cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: pb.AlarmType_NOSPACE}); err != nil {
			return rep, fmt.Errorf("etcd: disarm %s: %w", a, err)
		}
		rep.Disarmed = append(rep.Disarmed, a)
	}

	// 4. Tell the watch caches.
	if err := recordCompaction(ctx, cli, rep.Revision); err != nil {
		if IsNoSpace(err) {
			rep.Alarms, _ = listAlarms(ctx, cli)
			return rep, fmt.Errorf("etcd raised NOSPACE again at once (the database is too close to its quota): delete objects that are not needed or raise the quota (--quota-backend-bytes), then run this again: %w", err)
		}
		return rep, err
	}
	return rep, nil
}

// listAlarms returns the alarms etcd has raised.
func listAlarms(ctx context.Context, cli *clientv3.Client) ([]Alarm, error) {
	resp, err := cli.AlarmList(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcd alarm list: %w", err)
	}
	var out []Alarm
	for _, a := range resp.Alarms {
		if a.Alarm != pb.AlarmType_NONE {
			out = append(out, Alarm{Type: a.Alarm.String(), MemberID: a.MemberID})
		}
	}
	return out, nil
}

// recordCompaction sets CompactRevisionKey to rev as k8s.io/apiserver's
// compactor does (storage/etcd3/compact.go: a transaction that puts the
// revision if the key's version is still the one read, incrementing the
// version), unless it already holds rev or a later revision.
func recordCompaction(ctx context.Context, cli *clientv3.Client, rev int64) error {
	for range compactRevisionAttempts {
		resp, err := cli.Get(ctx, CompactRevisionKey)
		if err != nil {
			return fmt.Errorf("etcd: read %s: %w", CompactRevisionKey, err)
		}
		var version int64
		if len(resp.Kvs) != 0 {
			version = resp.Kvs[0].Version
			if recorded, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64); err == nil && recorded >= rev {
				return nil
			}
		}
		txn, err := cli.Txn(ctx).If(
			clientv3.Compare(clientv3.Version(CompactRevisionKey), "=", version),
		).Then(
			clientv3.OpPut(CompactRevisionKey, strconv.FormatInt(rev, 10)),
		).Commit()
		if err != nil {
			return fmt.Errorf("etcd: record the compaction in %s: %w", CompactRevisionKey, err)
		}
		if txn.Succeeded {
			return nil
		}
	}
	return errors.New("etcd: " + CompactRevisionKey + " kept changing while recording the compaction; run this again")
}

package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// DefaultAlarmPollPeriod is how often an AlarmMonitor reads etcd's alarms
// (AlarmMonitorConfig.PollPeriod): ten seconds. A read is one etcd request
// (AlarmList, through etcd's raft log); a write refused for space makes the
// monitor read them at once, so a full quota shows within milliseconds and
// its end within a period.
const DefaultAlarmPollPeriod = 10 * time.Second

// alarmReadTimeout bounds one read of the alarms.
const alarmReadTimeout = 5 * time.Second

// The alarms etcd raises (etcdserverpb.AlarmType), as they are named in
// messages and in the metric's alarm label.
const (
	// AlarmNoSpace is NOSPACE: a member's database reached its quota
	// (--quota-backend-bytes); etcd refuses writes that add data until
	// space is reclaimed and the alarm disarmed.
	AlarmNoSpace = "NOSPACE"
	// AlarmCorrupt is CORRUPT: a member's data differs from the others';
	// etcd refuses requests until an operator repairs the member.
	AlarmCorrupt = "CORRUPT"
)

// Alarm is an alarm raised on one etcd member.
type Alarm struct {
	// Type is AlarmNoSpace or AlarmCorrupt.
	Type string
	// MemberID is the member's ID, as etcdctl prints it in hex.
	MemberID uint64
}

// String is "NOSPACE on member 8e9e05c52164694d".
func (a Alarm) String() string { return fmt.Sprintf("%s on member %x", a.Type, a.MemberID) }

// AlarmMonitorConfig configures NewAlarmMonitor. Every field is optional.
type AlarmMonitorConfig struct {
	// PollPeriod is how often the alarms are read; 0 means
	// DefaultAlarmPollPeriod.
	PollPeriod time.Duration
	// QuotaBackendBytes is etcd's backend quota (--quota-backend-bytes),
	// named in messages; 0: not known here (an external etcd), in which
	// case the monitor asks etcd (its Status) once the alarm is raised.
	QuotaBackendBytes int64
	// Recovery is the command that reclaims etcd's space and disarms the
	// alarm, named in messages, for example "customapi etcd defrag
	// --data-dir /var/lib/customapi"; "" names the steps instead.
	Recovery string
	// Embedded says that the etcd is the program's own embedded one,
	// whose quota a restart with a larger --quota-backend-bytes raises;
	// an external etcd's quota is its own flag.
	Embedded bool
}

// AlarmMonitor follows the alarms of one etcd cluster (etcd's AlarmList),
// so that a server reports a full quota where it is seen: its /readyz
// check (Check), the customapi_etcd_alarm metric, one log line when an
// alarm is first seen and one when it is cleared, and the Status of each
// write etcd refuses for space (Config.Alarms). It reads the alarms every
// PollPeriod and at once after a write was refused for space, never per
// request. Create it with NewAlarmMonitor; registry.Open runs it (Poll
// once, then Run) on the registry's etcd. Safe for concurrent use.
type AlarmMonitor struct {
	cfg  AlarmMonitorConfig
	kick chan struct{}

	mu      sync.Mutex
	polled  bool          // a read succeeded
	raised  []Alarm       // sorted by type, member
	quota   int64         // the quota of messages; 0 unknown
	dbSize  int64         // a member's database size when the alarm was seen
	changed chan struct{} // closed and replaced when raised changes
}

// NewAlarmMonitor returns a monitor that has read nothing yet (Check
// passes, NoSpace is false).
func NewAlarmMonitor(cfg AlarmMonitorConfig) *AlarmMonitor {
	if cfg.PollPeriod <= 0 {
		cfg.PollPeriod = DefaultAlarmPollPeriod
	}
	return &AlarmMonitor{cfg: cfg, kick: make(chan struct{}, 1), quota: cfg.QuotaBackendBytes, changed: make(chan struct{})}
}

// etcdAlarm is the metric customapi_etcd_alarm: 1 while etcd has the
// alarm raised (on any member), 0 otherwise, per alarm type.
var etcdAlarm = metrics.NewGaugeVec(
	&metrics.GaugeOpts{
		Namespace:      "customapi",
		Name:           "etcd_alarm",
		Help:           "1 while etcd has raised the alarm (NOSPACE: its database reached its space quota and it refuses writes; CORRUPT: a member's data is inconsistent), 0 otherwise; read every 10 s by default, and at once when a write is refused for space.",
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"alarm"},
)

var registerAlarmMetric sync.Once

// Run reads the alarms through cli every PollPeriod, and at once after
// NoSpaceSeen, until ctx ends. A read that fails keeps the last alarms
// (the etcd health check reports an etcd that does not answer).
func (m *AlarmMonitor) Run(ctx context.Context, cli *clientv3.Client) {
	t := time.NewTimer(m.cfg.PollPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.kick:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
		if err := m.Poll(ctx, cli); err != nil && ctx.Err() == nil {
			klog.V(2).InfoS("Reading etcd's alarms failed", "err", err)
		}
		t.Reset(m.cfg.PollPeriod)
	}
}

// Poll reads the alarms once through cli (bounded to a few seconds) and
// records them: the metric, Check, NoSpace and, when they changed, a log
// line and Changed. It returns the read's error.
func (m *AlarmMonitor) Poll(ctx context.Context, cli *clientv3.Client) error {
	registerAlarmMetric.Do(func() { legacyregistry.MustRegister(etcdAlarm) })
	ctx, cancel := context.WithTimeout(ctx, alarmReadTimeout)
	defer cancel()
	resp, err := cli.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("etcd alarms: %w", err)
	}
	var raised []Alarm
	for _, a := range resp.Alarms {
		if a.Alarm != pb.AlarmType_NONE {
			raised = append(raised, Alarm{Type: a.Alarm.String(), MemberID: a.MemberID})
		}
	}
	slices.SortFunc(raised, func(a, b Alarm) int {
		if c := strings.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return cmp.Compare(a.MemberID, b.MemberID)
	})
	noSpace := slices.ContainsFunc(raised, func(a Alarm) bool { return a.Type == AlarmNoSpace })
	var dbSize, quota int64
	if noSpace {
		// The sizes of the message, from the member the client reaches
		// (only while the alarm is raised).
		if st, err := cli.Status(ctx, cli.Endpoints()[0]); err == nil {
			dbSize, quota = st.DbSize, st.DbSizeQuota
		}
	}
	for _, t := range []string{AlarmNoSpace, AlarmCorrupt} {
		v := 0.0
		if slices.ContainsFunc(raised, func(a Alarm) bool { return a.Type == t }) {
			v = 1
		}
		etcdAlarm.WithLabelValues(t).Set(v)
	}

	m.mu.Lock()
	before := m.raised
	m.raised, m.polled = raised, true
	if dbSize != 0 {
		m.dbSize = dbSize
	}
	if m.cfg.QuotaBackendBytes == 0 && quota > 0 {
		m.quota = quota
	}
	changed := !slices.Equal(before, raised)
	if changed {
		close(m.changed)
		m.changed = make(chan struct{})
	}
	m.mu.Unlock()
	if changed {
		m.logChange(before, raised)
	}
	return nil
}

// logChange logs the alarms raised since before, and those cleared.
func (m *AlarmMonitor) logChange(before, now []Alarm) {
	for _, a := range now {
		if !slices.Contains(before, a) {
			if a.Type == AlarmNoSpace {
				klog.ErrorS(nil, "etcd raised an alarm: "+m.noSpaceMessage(), "alarm", a.Type, "member", fmt.Sprintf("%x", a.MemberID))
			} else {
				klog.ErrorS(nil, "etcd raised an alarm: it refuses requests until an operator repairs the member (etcd's docs, \"Maintenance\")", "alarm", a.Type, "member", fmt.Sprintf("%x", a.MemberID))
			}
		}
	}
	for _, a := range before {
		if !slices.Contains(now, a) {
			klog.InfoS("etcd's alarm was cleared", "alarm", a.Type, "member", fmt.Sprintf("%x", a.MemberID))
		}
	}
}

// NoSpaceSeen tells the monitor that etcd refused a write for space: it
// reads the alarms at once (without waiting for it).
func (m *AlarmMonitor) NoSpaceSeen() {
	if m == nil {
		return
	}
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Alarms returns the alarms raised at the last read.
func (m *AlarmMonitor) Alarms() []Alarm {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.raised)
}

// NoSpace reports whether etcd had its NOSPACE alarm raised at the last
// read.
func (m *AlarmMonitor) NoSpace() bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.ContainsFunc(m.raised, func(a Alarm) bool { return a.Type == AlarmNoSpace })
}

// Changed returns a channel closed when the raised alarms change (a new
// channel after each change).
func (m *AlarmMonitor) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Check returns nil when no alarm was raised at the last read, and
// otherwise an error naming the alarms and, for NOSPACE, the quota and
// the recovery: a server's /readyz check "etcd-alarms". A read that never
// succeeded passes (the etcd check reports an etcd that does not answer).
func (m *AlarmMonitor) Check() error {
	m.mu.Lock()
	raised := slices.Clone(m.raised)
	m.mu.Unlock()
	if len(raised) == 0 {
		return nil
	}
	names := make([]string, len(raised))
	noSpace := false
	for i, a := range raised {
		names[i] = a.String()
		noSpace = noSpace || a.Type == AlarmNoSpace
	}
	msg := "etcd alarm " + strings.Join(names, ", ")
	if noSpace {
		msg += ": " + m.noSpaceMessage()
	}
	return errors.New(msg)
}

// NoSpaceError returns the Status of a write that etcd refused for space:
// 503 ServiceUnavailable, cause NoSpaceCause, a message naming the quota
// and the way out. A nil monitor words it without them.
//
// The message also says to read before retrying: etcd checks the quota
// before it proposes a write and again when it applies it, and a write
// that passed the first check but finds the quota full when applied is
// applied and then answered NOSPACE (etcd's quotaApplierV3). That can
// happen to the writes in flight when the quota fills; once the alarm is
// raised, etcd refuses writes without applying them.
func (m *AlarmMonitor) NoSpaceError() error {
	return noSpaceStatus("etcd refused the write: " + m.noSpaceMessage() +
		". A write in flight when the quota filled may have been applied all the same (etcd applies it, then answers NOSPACE): read the object before retrying")
}

// noSpaceMessage says what a full quota means and how to get out of it.
func (m *AlarmMonitor) noSpaceMessage() string {
	var cfg AlarmMonitorConfig
	var quota, dbSize int64
	if m != nil {
		m.mu.Lock()
		cfg, quota, dbSize = m.cfg, m.quota, m.dbSize
		m.mu.Unlock()
	}
	var b strings.Builder
	b.WriteString("its database reached its space quota")
	switch {
	case quota > 0 && cfg.Embedded:
		fmt.Fprintf(&b, " of %s (--quota-backend-bytes)", formatBytes(quota))
	case quota > 0:
		fmt.Fprintf(&b, " of %s (etcd's --quota-backend-bytes)", formatBytes(quota))
	default:
		b.WriteString(" (etcd's --quota-backend-bytes)")
	}
	if dbSize > 0 {
		fmt.Fprintf(&b, ", the database is %s,", formatBytes(dbSize))
	}
	b.WriteString(" and etcd raised its NOSPACE alarm (" + etcdNoSpaceMessage + "): it refuses every write until space is reclaimed;" +
		" reads, watches and deletes still work. To recover, delete objects that are not needed")
	if cfg.Embedded {
		b.WriteString(" or restart with a larger --quota-backend-bytes")
	}
	b.WriteString(", then ")
	if cfg.Recovery != "" {
		b.WriteString("run `" + cfg.Recovery + "` (it compacts etcd's history, defragments every member and disarms the alarm)")
	} else {
		b.WriteString("compact etcd's history, defragment every member and disarm the alarm (`customapi etcd defrag`)")
	}
	return b.String()
}

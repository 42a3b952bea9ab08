package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/bench"
)

func newBenchCommand() *cobra.Command {
	cfg := bench.DefaultConfig()
	var output, gvr string
	var quick bool
	scale := bench.DefaultScaleConfig()
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure customapi next to raw etcd and any Kubernetes-style API server, in one run",
		Long: `Measure create, get, update, list, watch and memory on each target, in one run on this
machine, and print a table with ratios against raw etcd.

Targets (--target, repeatable or comma-separated):
  etcd                 raw clientv3 on an embedded etcd started for the run: create-if-absent
                       transactions and puts of the same bytes (the physical limit)
  inprocess            the typed in-process Go client on the same etcd
  self                 a customapi serve started for the run on the same etcd, over HTTPS
  kubeconfig=PATH      any Kubernetes-style server, named by the kubeconfig's current context,
                       for example kube-apiserver with docs/bench/samples-crd.yaml; --resource
                       names the resource (it must accept labels, spec.strings ([]string) and
                       spec.numbers ([]int64));
                       kubeconfig=PATH@pid=N also reports the memory and CPU of process N
                       (the server, on this machine)
  all                  etcd, inprocess and self

The HTTP targets speak --content-type (client-go's RESTClient with that ContentType and
AcceptContentTypes; CBOR switches on client-go's ClientsAllowCBOR gate). Namespaces the workloads
need are created first on servers that have a namespaces API (GET, then POST /api/v1/namespaces).

All targets are opened first. The throughput workloads (create with each --create-workers count,
get, update) then run in --rounds alternating rounds: each round gives every target a short batch
(1/rounds of the workload; object names stay unique across rounds), one target after the other,
the order rotated by one each round, each batch after an untimed garbage collection of this
process, so that disk and CPU noise of a moment lands on every target alike instead of on one side
of a ratio. With --admission naming more than none, the admission create workloads
follow, one per mode ("create admission=MODE", 16 workers): what the mode installs (a
ValidatingWebhookConfiguration served by an HTTPS webhook in this process, or a
ValidatingAdmissionPolicy and its binding) is created on each target, the bench waits until probes
show it in effect, runs the workload in rounds next to raw etcd's creates (the baseline of the
ratio; etcd has no admission), removes it and waits until probes show it gone. The inprocess
target then runs with a server of its own in this process, as admission webhooks and policies
need one. Memory, lists, watch and profiles then run on one target after the other.

The object is ~600 bytes of JSON: 10 labels, 5 strings, 20 integers. Ctrl-C stops the run and
removes its temporary directories. Figures are only comparable within one run.

Columns: OPS/S is throughput; P50/P99 are latencies (watch: from the write's acknowledgement to the event's
receipt; an event that arrives before the writer has its answer counts as 0); VS ETCD is the speed relative to
raw etcd's row for the same workload (creates: etcd's create-if-absent transaction; lists and watches: etcd's p50
over the target's); for the workloads run in rounds it is the median of the per-round ratios (this target's
round k over etcd's round k), followed by their range, min-max, in parentheses, while OPS/S, P50 and P99 cover
all rounds together; -o json adds rounds, roundOpsPerSec, vsEtcdRounds, vsEtcdMin and vsEtcdMax. "-" means
zero or not applicable. With --quick the figures mean nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if gvr != "" {
				parts := strings.Split(gvr, "/")
				if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
					return fmt.Errorf("--resource %q is not GROUP/VERSION/RESOURCE (for example bench.customapi.io/v1/samples)", gvr)
				}
				cfg.Resource = schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}
			}
			if quick {
				cfg.Creates, cfg.Gets, cfg.Updates, cfg.UpdateObjects = 50, 50, 50, 5
				cfg.ListObjects, cfg.ListRuns, cfg.PageSize = 100, 2, 30
				cfg.Watchers, cfg.WatchUpdates, cfg.WatchRate = 3, 10, 100
				cfg.ProfileSeconds = 1
			}
			if len(scale.Objects) != 0 {
				return runScale(cmd, scale, cfg, output)
			}
			cfg.Progress = cmd.ErrOrStderr()
			results, err := bench.Run(cmd.Context(), cfg)
			if len(results) != 0 {
				var werr error
				if output == "json" {
					werr = bench.WriteJSON(cmd.OutOrStdout(), results)
				} else {
					werr = bench.WriteTable(cmd.OutOrStdout(), results)
				}
				if err == nil {
					err = werr
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&cfg.Targets, "target", cfg.Targets, "Targets: etcd, inprocess, self, kubeconfig=PATH, all.")
	f.StringVar(&gvr, "resource", "", "GROUP/VERSION/RESOURCE for kubeconfig targets, for example test/v1/customs (default bench.customapi.io/v1/samples).")
	f.StringVarP(&output, "output", "o", "table", "Output format: table or json.")
	f.IntVar(&cfg.Creates, "creates", cfg.Creates, "Objects created per create workload.")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "Alternating rounds the create, get and update workloads are split into (each round 1/rounds of --creates, --gets, --updates on every target in turn).")
	f.IntSliceVar(&cfg.CreateWorkers, "create-workers", cfg.CreateWorkers, "Worker counts of the create workloads.")
	f.IntVar(&cfg.Concurrency, "workers", cfg.Concurrency, "Workers of the get, update and load workloads.")
	f.IntVar(&cfg.Gets, "gets", cfg.Gets, "Reads of random existing objects.")
	f.IntVar(&cfg.Updates, "updates", cfg.Updates, "Read-modify-write cycles (conflicts retried and counted).")
	f.IntVar(&cfg.ListObjects, "list-objects", cfg.ListObjects, "Objects present for the list workloads.")
	f.IntVar(&cfg.ListRuns, "list-runs", cfg.ListRuns, "Timed full lists per list workload.")
	f.Int64Var(&cfg.PageSize, "page-size", cfg.PageSize, "Limit of the paged list.")
	f.IntVar(&cfg.Watchers, "watchers", cfg.Watchers, "Concurrent watchers.")
	f.IntVar(&cfg.WatchUpdates, "watch-updates", cfg.WatchUpdates, "Updates delivered to the watchers.")
	f.IntVar(&cfg.WatchRate, "watch-rate", cfg.WatchRate, "Updates per second in the watch workload.")
	f.StringVar(&cfg.StorageMediaType, "storage-media-type", "", "Encoding in etcd for the inprocess and self targets: application/json (default), application/yaml, application/cbor or application/vnd.kubernetes.protobuf.")
	f.StringVar(&cfg.ContentType, "content-type", "json", "Wire encoding of the self and kubeconfig targets (bodies and the only accepted answer type, watches included): json, cbor or protobuf. A server that does not serve it fails the run (406/415).")
	f.StringSliceVar(&cfg.Admission, "admission", []string{bench.AdmissionNone}, "Admission modes measured by create workloads of their own (16 workers, --creates objects, next to raw etcd's) on the targets that serve admissionregistration.k8s.io (self, kubeconfig, inprocess with a server of its own): none, webhook (one matched validating webhook, HTTPS to this process), policy (one ValidatingAdmissionPolicy with one CEL expression), webhook-unmatched (a webhook matching configmaps only). Only none (the default): no such workload.")
	f.StringVar(&cfg.CPUProfileDir, "cpuprofile", "", "Directory for CPU profiles of the server under create and list (self and kubeconfig=...: /debug/pprof of the server, which must allow it to the credentials; inprocess: this process), TARGET-WORKLOAD.pprof, each with TARGET-WORKLOAD.pprof.ops: the operations completed while profiled.")
	f.BoolVar(&quick, "quick", false, "Tiny sizes: a smoke test of every workload in seconds (figures meaningless).")
	f.IntSliceVar(&scale.Objects, "scale", nil, "Run the scale benchmark instead, on stores of these sizes (ascending, for example 10000,100000,1000000): samples written straight into etcd, serve restarted and measured (see docs/performance.md). --storage-media-type, --page-size, --gets and --creates apply to it.")
	f.StringVar(&scale.Dir, "scale-dir", "", "Scale benchmark: directory of the data dir, kept and reused by a later run (default: a temporary one, removed).")
	f.BoolVar(&scale.ExternalEtcd, "scale-external-etcd", false, "Scale benchmark: serve on an etcd of the bench process (--etcd-servers) instead of its embedded one.")
	f.IntVar(&scale.Restarts, "scale-restarts", scale.Restarts, "Scale benchmark: starts of serve per size (the median ready time is reported).")
	f.StringArrayVar(&scale.ServeFlags, "serve-flag", nil, "Scale benchmark: one more flag for serve (repeatable), for example --serve-flag=--enable-garbage-collector=false.")
	f.BoolVar(&scale.SkipUnpaged, "scale-skip-unpaged", false, "Scale benchmark: leave out the LIST without a limit.")
	f.Var(newWordsValue(&scale.ServerCommand), "scale-server-command", "Scale benchmark: measure this server instead of customapi serve (its command line, split on spaces; the process must be the server), storing in --scale-etcd-servers and reached with --scale-kubeconfig, the samples resource served (hack/scale-peer.sh runs kube-apiserver this way).")
	f.StringVar(&scale.ServerKubeconfig, "scale-kubeconfig", "", "Scale benchmark: the kubeconfig of --scale-server-command's server (an admin allowed everything).")
	f.StringSliceVar(&scale.EtcdServers, "scale-etcd-servers", nil, "Scale benchmark: the etcd (plain HTTP client URLs) of --scale-server-command's server, written into directly.")
	f.IntVar(&scale.Churn, "scale-churn", 0, "Scale benchmark: after measuring, rewrite every sample this many times straight into etcd while the server runs (its compactor on), recording etcd's database size after each pass, then restart the server and record it again.")
	f.IntVar(&scale.ChurnRate, "scale-churn-rate", 5000, "Scale benchmark: the most writes a second of --scale-churn (0: as fast as etcd takes them).")
	f.StringVar(&scale.CPUProfileDir, "scale-cpuprofile", "", "Scale benchmark: directory for a CPU profile of serve's first start on each size, start to stop (start-N.pprof).")
	return cmd
}

// runScale runs the scale benchmark with the flags it shares with the
// other workloads (--storage-media-type, --page-size, --gets, --creates
// when set).
func runScale(cmd *cobra.Command, scale bench.ScaleConfig, cfg bench.Config, output string) error {
	f := cmd.Flags()
	scale.StorageMediaType = cfg.StorageMediaType
	if f.Changed("page-size") {
		scale.PageSize = cfg.PageSize
	}
	if f.Changed("gets") {
		scale.Gets = cfg.Gets
	}
	if f.Changed("creates") {
		scale.Creates = cfg.Creates
	}
	scale.Progress = cmd.ErrOrStderr()
	results, err := bench.RunScale(cmd.Context(), scale)
	if len(results) != 0 {
		var werr error
		if output == "json" {
			werr = bench.WriteScaleJSON(cmd.OutOrStdout(), results)
		} else {
			werr = bench.WriteScaleTable(cmd.OutOrStdout(), results)
		}
		if err == nil {
			err = werr
		}
	}
	return err
}

// wordsValue is a flag whose value is split on spaces into a slice.
type wordsValue struct{ words *[]string }

func newWordsValue(words *[]string) wordsValue { return wordsValue{words} }

func (v wordsValue) String() string {
	if v.words == nil {
		return ""
	}
	return strings.Join(*v.words, " ")
}

func (v wordsValue) Set(s string) error {
	*v.words = strings.Fields(s)
	return nil
}

func (v wordsValue) Type() string { return "command" }

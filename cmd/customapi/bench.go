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

The object is ~600 bytes of JSON: 10 labels, 5 strings, 20 integers. Ctrl-C stops the run and
removes its temporary directories. Figures are only comparable within one run.

Columns: OPS/S is throughput; P50/P99 are latencies (watch: from the write's acknowledgement to the event's
receipt; an event that arrives before the writer has its answer counts as 0); VS ETCD is the speed relative to
raw etcd's row for the same workload (creates: etcd's create-if-absent transaction; lists and watches: etcd's p50
over the target's); "-" means zero or not applicable. With --quick the figures mean nothing.`,
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
	f.StringVar(&cfg.CPUProfileDir, "cpuprofile", "", "Directory for CPU profiles of the server under create and list (self: /debug/pprof of the server; inprocess: this process).")
	f.BoolVar(&quick, "quick", false, "Tiny sizes: a smoke test of every workload in seconds (figures meaningless).")
	return cmd
}

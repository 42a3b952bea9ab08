// Package bench measures customapi against the physical limit (raw etcd)
// and against any other Kubernetes-style API server, in one run on one
// machine: the engine of `customapi bench`.
//
// A Target is something that stores samples (bench.customapi.io/v1 Sample,
// ~600 bytes of JSON): raw etcd (clientv3 create-if-absent transactions and
// puts of the same bytes), the in-process client, a `customapi serve`
// started for the run, or any server reached through a kubeconfig. Each
// workload (create, get, update, list, watch, memory) runs against each
// target and yields a Result row; WriteTable and WriteJSON print them with
// ratios against raw etcd. Create, get and update alternate the targets in
// rounds (Config.Rounds), and their ratio is the median of the per-round
// ratios, with its range. Config.Admission adds create workloads under
// admission (a matched validating webhook served by the bench process, a
// ValidatingAdmissionPolicy, a webhook matching another resource) on the
// targets that serve admissionregistration.k8s.io (admission.go).
//
// Figures depend on the machine and on what else runs on it: compare rows of
// one run, not runs of different days.
package bench

#!/usr/bin/env bash
# write-fixture.sh BINARY NAME OUT
#
# Writes the upgrade fixture NAME (customapi or fleet) with BINARY, a
# customapi-style server binary of the PREVIOUS release: serves a new data
# dir on 127.0.0.1, writes the objects of the fixture with kubectl, records
# what GET returns for each into OUT/NAME/expected/*.json, takes an online
# backup into OUT/NAME/backup.tar.gz and stops the server. See README.md.
set -euo pipefail

bin=$1 name=$2 out=$3
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

data=$work/data
"$bin" serve --data-dir "$data" --bind-address 127.0.0.1 --secure-port 0 -v=0 >"$work/serve.out" 2>"$work/serve.err" &
pid=$!
for _ in $(seq 1 240); do
	grep -q '^  kubectl --kubeconfig' "$work/serve.out" && break
	kill -0 "$pid" || { cat "$work/serve.err"; exit 1; }
	sleep 0.25
done
grep -q '^  kubectl --kubeconfig' "$work/serve.out" || { echo "no ready line" >&2; exit 1; }

k() { kubectl --kubeconfig "$data/admin.kubeconfig" --cache-dir "$work/kube-cache" "$@"; }

mkdir -p "$out/$name/expected"
rm -f "$out/$name/expected/"*.json
# save RESOURCE NAME [NAMESPACE]: what GET returns, as the fixture's expectation.
save() {
	local file=$1.$2
	if [ -n "${3:-}" ]; then file=$1.$3.$2; fi
	k get "$1" "$2" ${3:+-n "$3"} --show-managed-fields -o json >"$out/$name/expected/$file.json"
}

k apply -f - <<'EOF'
apiVersion: v1
kind: Namespace
metadata:
  name: upgrade
  labels:
    purpose: fixture
EOF

case $name in
customapi)
	kind=customs kindns=upgrade
	k apply -n upgrade -f - <<'EOF'
apiVersion: test/v1
kind: Custom
metadata:
  name: plain
  labels:
    app: demo
    tier: web
  annotations:
    example.com/note: written by the previous release
spec:
  message: hello from the previous release
  replicas: 2
  ports:
  - name: http
    port: 80
  - name: https
    port: 443
---
apiVersion: test/v1
kind: Custom
metadata:
  name: with-status
  labels:
    app: demo
spec:
  message: has a status
  replicas: 1
---
apiVersion: test/v1
kind: Custom
metadata:
  name: kept
  labels:
    app: other
  finalizers:
  - example.com/keep
spec:
  message: deleted, kept by its finalizer
EOF
	k patch -n upgrade customs with-status --subresource=status --type=merge -p '{"status":{"phase":"Running","observedGeneration":1}}'
	# Two managers of server-side apply: managedFields with both.
	k apply -n upgrade --server-side --field-manager=fixture-a -f - <<'EOF'
apiVersion: test/v1
kind: Custom
metadata:
  name: applied
  labels:
    managed: ssa
spec:
  message: applied by fixture-a
  replicas: 3
  ports:
  - name: http
    port: 8080
EOF
	k apply -n upgrade --server-side --field-manager=fixture-b -f - <<'EOF'
apiVersion: test/v1
kind: Custom
metadata:
  name: applied
spec:
  ports:
  - name: metrics
    port: 9090
EOF
	;;
fleet)
	kind=devices kindns= # devices are cluster-scoped
	k apply -f - <<'EOF'
apiVersion: fleet.example.com/v1alpha1
kind: Device
metadata:
  name: plain
  labels:
    site: lab
    model: pi4
  annotations:
    example.com/note: written by the previous release
spec:
  model: pi4
  firmware: "1.2.3"
  site: lab
---
apiVersion: fleet.example.com/v1alpha1
kind: Device
metadata:
  name: with-status
  labels:
    site: lab
spec:
  model: pi5
  firmware: "2.0.0"
---
apiVersion: fleet.example.com/v1alpha1
kind: Device
metadata:
  name: kept
  labels:
    site: attic
  finalizers:
  - example.com/keep
spec:
  model: pi3
EOF
	k patch devices with-status --subresource=status --type=merge -p '{"status":{"online":true,"firmware":"2.0.0","lastSeen":"2026-12-02T12:00:00Z"}}'
	k apply --server-side --field-manager=fixture-a -f - <<'EOF'
apiVersion: fleet.example.com/v1alpha1
kind: Device
metadata:
  name: applied
  labels:
    managed: ssa
spec:
  model: pi4
  firmware: "1.0.0"
EOF
	k apply --server-side --field-manager=fixture-b -f - <<'EOF'
apiVersion: fleet.example.com/v1alpha1
kind: Device
metadata:
  name: applied
spec:
  site: rack-2
EOF
	;;
*)
	echo "unknown fixture $name" >&2
	exit 2
	;;
esac
# Terminating: deletionTimestamp set, kept by the finalizer.
k delete ${kindns:+-n "$kindns"} "$kind" kept --wait=false

# The batteries and RBAC: the same in both fixtures.
k apply -n upgrade -f - <<'EOF'
apiVersion: v1
kind: Secret
metadata:
  name: creds
  labels:
    app: demo
type: Opaque
stringData:
  username: admin
  password: s3cr3t-from-the-previous-release
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
  greeting: hello
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: leader
spec:
  holderIdentity: fixture-0
  leaseDurationSeconds: 15
  acquireTime: "2026-12-02T12:00:00.000000Z"
  renewTime: "2026-12-02T12:00:05.000000Z"
  leaseTransitions: 1
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: reader
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: reader
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: reader
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: alice
---
apiVersion: v1
kind: Event
metadata:
  name: plain.fixture
involvedObject:
  kind: ConfigMap
  namespace: upgrade
  name: settings
  apiVersion: v1
reason: Fixture
message: written by the previous release
type: Normal
source:
  component: fixture
firstTimestamp: "2026-12-02T12:00:00Z"
lastTimestamp: "2026-12-02T12:00:00Z"
count: 1
---
apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: plain.fixture-v1
eventTime: "2026-12-02T12:00:00.000000Z"
reportingController: example.com/fixture
reportingInstance: fixture-0
action: Write
reason: Fixture
note: written by the previous release through events.k8s.io/v1
type: Normal
regarding:
  kind: ConfigMap
  namespace: upgrade
  name: settings
  apiVersion: v1
EOF

save namespaces upgrade
for o in plain with-status kept applied; do save "$kind" "$o" $kindns; done
save secrets creds upgrade
save configmaps settings upgrade
save leases.coordination.k8s.io leader upgrade
save roles.rbac.authorization.k8s.io reader upgrade
save rolebindings.rbac.authorization.k8s.io reader upgrade
save events plain.fixture upgrade
save events.events.k8s.io plain.fixture-v1 upgrade

"$bin" backup --data-dir "$data" -o "$out/$name/backup.tar.gz"
kill -TERM "$pid"
wait "$pid"

# Functions for the hack/ scripts that measure a `customapi serve` they
# start themselves. Source it after setting $customapi (the binary, or ""
# to build one) and the array extra (more serve flags, possibly empty).

# prepare NAME: makes $work, a temporary directory removed at exit (with
# the server, if one is running), builds ./cmd/customapi there as
# $customapi unless it is set, and the load generator ./hack/NAME as
# $loader.
prepare() {
	work="$(mktemp -d)"
	pid=""
	trap 'if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
	if [[ -z "$customapi" ]]; then
		customapi="$work/customapi"
		go build -o "$customapi" ./cmd/customapi
	fi
	loader="$work/$1"
	go build -o "$loader" "./hack/$1"
}

# start DIR [FLAGS...]: starts `$customapi serve` on data dir DIR (a free
# port on 127.0.0.1, FLAGS then "${extra[@]}", its log in DIR.log) and
# waits (at most 120 s) until the admin's /readyz answers 200; leaves the
# pid in $pid. Exits the script if serve dies or is not ready in time.
start() {
	local dir="$1" url token deadline
	shift
	"$customapi" serve --data-dir "$dir" --secure-port 0 --bind-address 127.0.0.1 "$@" "${extra[@]}" >"$dir.log" 2>&1 &
	pid=$!
	deadline=$((SECONDS + 120))
	until [[ -s "$dir/admin.kubeconfig" ]] && url="$(sed -n 's/^ *server: //p' "$dir/admin.kubeconfig" | head -1)" && [[ -n "$url" ]] &&
		token="$(sed -n 's/^\([^,]*\),admin,.*/\1/p' "$dir/tokens.csv" 2>/dev/null)" &&
		[[ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$dir/ca.crt" -H "Authorization: Bearer $token" "$url/readyz")" == 200 ]]; do
		if ! kill -0 "$pid" 2>/dev/null || ((SECONDS > deadline)); then
			echo "serve did not become ready; log:" >&2
			cat "$dir.log" >&2
			exit 1
		fi
		sleep 0.2
	done
}

# stop: stops the server start started and waits for it.
stop() {
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=""
}

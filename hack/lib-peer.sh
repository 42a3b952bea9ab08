# Functions for the hack/ scripts that run customapi next to its peers
# (bench-peer.sh, scale-peer.sh): free ports, etcd processes and
# kube-apiserver's credentials. Source it after setting $script (the
# script's name, for messages), $etcd_bin (an etcd binary) and the array
# pids (the processes the script stops at exit).

used_ports=" "

# free_port: prints a port on 127.0.0.1 that nothing listens on and this
# script has not handed out yet.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 30000))
		[[ "$used_ports" == *" $p "* ]] && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			used_ports+="$p "
			echo "$p"
			return
		fi
	done
}

# start_etcd DIR [ETCD FLAGS...]: starts a one-member etcd with its data in
# DIR/data (kept for a later run; fsync on, etcd's default) and its log in
# DIR/log, and waits (at most 30 s) until it is healthy; sets etcd_pid and
# etcd_url and adds the pid to pids. Exits the script, with the log's tail,
# if etcd dies or is not healthy in time.
start_etcd() {
	local dir="$1" cport pport
	shift
	cport="$(free_port)" pport="$(free_port)"
	mkdir -p "$dir"
	"$etcd_bin" --name default --data-dir "$dir/data" "$@" \
		--listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
		--listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
		--initial-cluster "default=http://127.0.0.1:$pport" --log-level warn >"$dir/log" 2>&1 &
	etcd_pid=$!
	pids+=("$etcd_pid")
	etcd_url="http://127.0.0.1:$cport"
	for _ in $(seq 300); do
		curl -sf "$etcd_url/health" >/dev/null 2>&1 && return 0
		kill -0 "$etcd_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "$script: etcd in $dir did not become healthy; its log:" >&2
	tail -20 "$dir/log" >&2
	exit 1
}

# kube_credentials DIR DAYS: writes kube-apiserver's credentials into DIR:
# tokens.csv (one bearer token of a system:masters user), an ECDSA serving
# certificate for 127.0.0.1 valid DAYS days (serving.crt, serving.key) and
# the service account key pair (sa.key, sa.pub); prints the token.
kube_credentials() {
	local dir="$1" days="$2" token
	mkdir -p "$dir"
	token="$(openssl rand -hex 24)"
	echo "$token,admin,admin,\"system:masters\"" >"$dir/tokens.csv"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$days" \
		-subj /CN=kube-apiserver -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$dir/serving.key" -out "$dir/serving.crt" 2>/dev/null
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/sa.key" 2>/dev/null
	openssl pkey -in "$dir/sa.key" -pubout -out "$dir/sa.pub"
	echo "$token"
}

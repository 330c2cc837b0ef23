#!/usr/bin/env bash
# Runs the services the integration tests need, on loopback only, without Docker:
#   - DynamoDB Local (Amazon's jar, with Streams)       -> KAA_DYNAMODB_ENDPOINT, and
#     AWS_ENDPOINT_URL, AWS_REGION, AWS_DEFAULT_REGION and local credentials (so the AWS SDKs,
#     the library's default chain and the AWS CLI reach it)
#   - etcd + kube-apiserver (no controller-manager)     -> KAA_KUBECONFIG, and KUBECONFIG (so
#     kubectl and desirectl's discovery reach it in a shell that evaluated `env`); the folder of
#     the kube binaries (kube-controller-manager included, for the tests that start their own
#     garbage collector)                                 -> KAA_KUBE_BIN_DIR
#
# Usage: hack/local-stack.sh up|down|env|status|stop C|start C|restart C
#   up      start everything (a no-op when it already runs) and print the env exports
#   down    stop the processes recorded in the state dir, then remove the state
#   env     print the env exports of the running stack (eval "$(hack/local-stack.sh env)"),
#           KUBECONFIG included
#   status  print each component's state; exit 0 only when all of them run
#   stop C / start C / restart C   (C = dynamodb, etcd or kube-apiserver; for chaos tests)
#           stop one component by its recorded PID, or start it again with the same command
#           line and port, waiting until it is ready. An in-memory DynamoDB loses its data
#           on restart: use KAA_DYNAMODB_DBPATH for that.
#
# State (PIDs, ports, logs, keys, kubeconfig) lives in ${KAA_STACK_DIR:-<repo>/.stack}.
# KAA_DYNAMODB_DBPATH=DIR keeps DynamoDB's data in DIR (-dbPath) instead of memory, so a test can
# restart DynamoDB and find its tables again.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${KAA_STACK_DIR:-$REPO/.stack}
COMPONENTS=(dynamodb etcd kube-apiserver)
# What each recorded PID's command line must contain: a PID is only trusted (and only ever
# signalled) when it still runs the program we started, never some process that reused it.
declare -A EXE=([dynamodb]=DynamoDBLocal.jar [etcd]=etcd [kube-apiserver]=kube-apiserver)

log() { echo "local-stack: $*" >&2; }

# print_env: the exports of the running stack, with KUBECONFIG pointing at its kubeconfig. The
# env file itself keeps only the KAA_/AWS_ variables (a stack started by an older version of
# this script has the same file); what follows from them is derived here, so `env` of a stack
# started earlier prints it too:
#   AWS_ENDPOINT_URL     the AWS SDKs' endpoint (Go SDK v2, the AWS CLI >= 1.29 / 2.13): the
#                        library's default chain (Options.AWSConfig unset), examples/embed and
#                        examples/controller-runtime reach DynamoDB Local through it
#   AWS_ENDPOINT_URL_DYNAMODB  the same endpoint, DynamoDB's own variable: boto3 < 1.28
#                        (Debian's python3-boto3) reads no endpoint variable at all, and
#                        examples/backend-python passes this one (else AWS_ENDPOINT_URL) to it;
#                        the newer SDKs read it before AWS_ENDPOINT_URL, so both must agree
#   AWS_DEFAULT_REGION   the region the AWS CLI v1 reads (it ignores AWS_REGION)
#   AWS_PAGER=""         the AWS CLI v2 prints instead of opening a pager
#   AWS_EC2_METADATA_DISABLED=true   no SDK waits for an instance-metadata endpoint for
#                        credentials or a region it never needs here
#   KAA_KUBE_BIN_DIR     the folder the stack's kube-apiserver runs from (hack/build-kube.sh's
#                        cache, which holds kube-controller-manager too): tests that need a
#                        garbage collector start their own from it (testenv.StartControllerManager)
print_env() {
  cat "$STATE/env"
  local endpoint region
  endpoint=$(sed -n 's/^export KAA_DYNAMODB_ENDPOINT=//p' "$STATE/env")
  region=$(sed -n 's/^export AWS_REGION=//p' "$STATE/env")
  echo "export AWS_ENDPOINT_URL=$endpoint"
  echo "export AWS_ENDPOINT_URL_DYNAMODB=$endpoint"
  echo "export AWS_DEFAULT_REGION=${region:-us-east-1}"
  echo "export AWS_PAGER="
  echo "export AWS_EC2_METADATA_DISABLED=true"
  echo "export KUBECONFIG=$(printf %q "$STATE/kubeconfig")"
  if [[ -f $STATE/kube-apiserver.cmd ]]; then
    local -a kas
    eval "kas=($(<"$STATE/kube-apiserver.cmd"))"
    echo "export KAA_KUBE_BIN_DIR=$(printf %q "$(dirname "${kas[1]}")")"
  fi
}

now_ms() { date +%s%3N; }

# alive NAME: the recorded process runs (zombies count as gone: PID 1 in a container may never
# reap the orphans we leave behind, and kill -0 still succeeds on a zombie).
alive() {
  local f="$STATE/$1.pid" pid
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  # The process may vanish between these reads: any failure means "not alive".
  [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) =~ ^[^Z]$ ]] || return 1
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "${EXE[$1]}"
}

# running: `up` completed (env written) and every recorded process is still there.
running() {
  [[ -f $STATE/env ]] || return 1
  local c
  for c in "${COMPONENTS[@]}"; do alive "$c" || return 1; done
}

# pick_port VAR: a free loopback port below Linux's ephemeral range (32768+), so it cannot
# collide with the source port of some outgoing connection the way a kernel-chosen port 0 can.
# "Free" means nothing accepts a connection there; ports already handed out in this run are
# skipped because nothing listens on them yet.
PICKED=" "
pick_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 12000))
    [[ $PICKED == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      PICKED+="$p "
      printf -v "$1" '%s' "$p"
      return 0
    fi
  done
  log "no free port found"
  return 1
}

# start NAME DIR CMD...: run CMD from DIR in its own session (setsid), so it outlives this script
# and a Ctrl-C in the caller's terminal; `down` stops it by its recorded PID.
start() {
  local name=$1 dir=$2
  shift 2
  (cd "$dir" && exec setsid "$@" >>"$STATE/$name.log" 2>&1 </dev/null) &
  echo $! >"$STATE/$name.pid"
  # Remembered so `start NAME` can run it again.
  { printf '%q ' "$dir"; printf '%q ' "$@"; echo; } >"$STATE/$name.cmd"
}

# fail MSG NAME: show why, stop what was started, give up.
fail() {
  log "$1"
  if [[ -f $STATE/$2.log ]]; then
    log "last lines of $STATE/$2.log:"
    tail -n 40 "$STATE/$2.log" >&2
  fi
  stop_all
  exit 1
}

# wait_ready NAME TIMEOUT_S PROBE...: poll PROBE until it succeeds; fail early if NAME died.
wait_ready() {
  local name=$1 timeout=$2 t0
  shift 2
  t0=$(now_ms)
  until "$@"; do
    alive "$name" || fail "$name exited during start-up" "$name"
    (($(now_ms) - t0 < timeout * 1000)) || fail "$name not ready after ${timeout}s" "$name"
    sleep 0.2
  done
  log "$name ready in $(($(now_ms) - T0))ms"
}

# DynamoDB Local answers ListTables for any access key; it checks the Authorization header's
# shape, not the signature.
dynamodb_probe() {
  curl -sf --max-time 2 -o /dev/null -X POST "http://127.0.0.1:$1/" \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=probe/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00' \
    -d '{}'
}

etcd_probe() { curl -sf --max-time 2 "http://127.0.0.1:$1/health" | grep -q '"health":"true"'; }

kube_probe() { # PORT TOKEN
  [[ $(curl -sk --max-time 2 -H "Authorization: Bearer $2" "https://127.0.0.1:$1/readyz") == ok ]]
}

stop() { # NAME: TERM, wait up to 20 s, then KILL.
  local name=$1 pid i
  alive "$name" || return 0
  pid=$(<"$STATE/$name.pid")
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    alive "$name" || return 0
    sleep 0.2
  done
  log "$name (pid $pid) ignored SIGTERM for 20s; killing"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 25; i++)); do
    alive "$name" || return 0
    sleep 0.2
  done
  log "$name (pid $pid) still there"
}

stop_all() {
  local c
  # Reverse start order: the apiserver first, so it does not log etcd errors while shutting down.
  for c in kube-apiserver etcd dynamodb; do stop "$c"; done
}

# Removes only what `up` creates: KAA_STACK_DIR may point at a folder that holds other files.
remove_state() {
  [[ -d $STATE ]] || return 0
  rm -rf "$STATE"/{certs,etcd-data} "$STATE"/{env,kubeconfig,tokens.csv,sa.key,sa.pub}
  rm -f "$STATE"/{dynamodb,etcd,kube-apiserver}.{pid,log,cmd}
  rmdir "$STATE" 2>/dev/null || true
}

cmd_up() {
  if running; then
    log "already running (state in $STATE)"
    print_env
    return 0
  fi
  # Leftovers of a crashed or half-finished run: clear them so ports and PIDs are fresh.
  stop_all
  remove_state

  bash "$REPO/hack/ensure-tools.sh"
  local ddb_dir kube_dir
  ddb_dir=$(bash "$REPO/hack/dynamodb-local.sh")
  # Builds kube-apiserver and etcd on first use (~15 min), then only prints the cached folder.
  kube_dir=$(bash "$REPO/hack/build-kube.sh")

  mkdir -p "$STATE"
  T0=$(now_ms)
  local ddb_port etcd_port etcd_peer_port kube_port
  pick_port ddb_port
  pick_port etcd_port
  pick_port etcd_peer_port
  pick_port kube_port

  # DynamoDB Local: without -sharedDb it keeps one database per access key + region, which lets
  # every test get an isolated, empty database by using a fresh access key.
  local storage=(-inMemory)
  if [[ -n ${KAA_DYNAMODB_DBPATH:-} ]]; then
    mkdir -p "$KAA_DYNAMODB_DBPATH"
    storage=(-dbPath "$(cd "$KAA_DYNAMODB_DBPATH" && pwd)")
  fi
  # It must run from inside its (writable) folder: it loads its native SQLite libraries from
  # ./DynamoDBLocal_lib. The JVM flags trade peak speed for a ~4 s start and a small heap.
  start dynamodb "$ddb_dir" java -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
    "${storage[@]}" -disableTelemetry -port "$ddb_port"

  # etcd: test data only, so skip fsync (much faster; data is lost on a machine crash).
  start etcd "$STATE" "$kube_dir/etcd" --name=kaa --data-dir="$STATE/etcd-data" \
    --listen-client-urls="http://127.0.0.1:$etcd_port" \
    --advertise-client-urls="http://127.0.0.1:$etcd_port" \
    --listen-peer-urls="http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster="kaa=http://127.0.0.1:$etcd_peer_port" \
    --unsafe-no-fsync

  # kube-apiserver credentials: one static admin token (system:masters bypasses RBAC) and an RSA
  # key pair that the apiserver requires for service-account tokens even if nobody uses them.
  local token
  token=$(openssl rand -hex 24)
  echo "$token,kaa-admin,kaa-admin,system:masters" >"$STATE/tokens.csv"
  openssl genrsa -out "$STATE/sa.key" 2048 2>/dev/null
  openssl rsa -in "$STATE/sa.key" -pubout -out "$STATE/sa.pub" 2>/dev/null
  mkdir -p "$STATE/certs"

  wait_ready etcd 30 etcd_probe "$etcd_port"

  # No controller-manager runs: the ServiceAccount admission plugin would reject pods for want of
  # a default ServiceAccount, and the endpoint reconciler has no real endpoints to keep.
  # With no TLS files given, the apiserver writes a self-signed serving cert + CA to --cert-dir.
  start kube-apiserver "$STATE" "$kube_dir/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
    --secure-port="$kube_port" --cert-dir="$STATE/certs" \
    --token-auth-file="$STATE/tokens.csv" --authorization-mode=RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$STATE/sa.pub" \
    --service-account-signing-key-file="$STATE/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --disable-admission-plugins=ServiceAccount \
    --endpoint-reconciler-type=none

  wait_ready dynamodb 30 dynamodb_probe "$ddb_port"
  wait_ready kube-apiserver 90 kube_probe "$kube_port" "$token"

  cat >"$STATE/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kaa-local
  cluster:
    server: https://127.0.0.1:$kube_port
    certificate-authority-data: $(base64 -w0 "$STATE/certs/apiserver.crt")
users:
- name: kaa-admin
  user:
    token: $token
contexts:
- name: kaa-local
  context:
    cluster: kaa-local
    user: kaa-admin
current-context: kaa-local
EOF
  chmod 600 "$STATE/kubeconfig"

  # DynamoDB Local accepts any credentials; these fake ones keep the SDK from looking for real ones.
  {
    echo "export KAA_DYNAMODB_ENDPOINT=http://127.0.0.1:$ddb_port"
    echo "export KAA_KUBECONFIG=$(printf %q "$STATE/kubeconfig")"
    echo "export AWS_REGION=us-east-1"
    echo "export AWS_ACCESS_KEY_ID=local"
    echo "export AWS_SECRET_ACCESS_KEY=local"
  } >"$STATE/env"
  log "up in $(($(now_ms) - T0))ms (state in $STATE)"
  print_env
}

component() { # NAME: validate a component name
  [[ -n ${EXE[${1:-}]:-} ]] || { log "unknown component '${1:-}' (dynamodb, etcd, kube-apiserver)"; exit 2; }
  [[ -f $STATE/env && -f $STATE/$1.cmd ]] || { log "no stack in $STATE: run 'up' first"; exit 1; }
}

# probe NAME: the component answers on its recorded port.
probe() {
  # shellcheck disable=SC1091
  local port
  case $1 in
  dynamodb)
    port=$(sed -n 's|.*KAA_DYNAMODB_ENDPOINT=http://127.0.0.1:||p' "$STATE/env")
    dynamodb_probe "$port"
    ;;
  etcd)
    port=$(sed -n 's|.*--listen-client-urls=http://127.0.0.1:\([0-9]*\).*|\1|p' "$STATE/etcd.cmd")
    etcd_probe "$port"
    ;;
  kube-apiserver)
    port=$(sed -n 's|.*server: https://127.0.0.1:||p' "$STATE/kubeconfig")
    kube_probe "$port" "$(cut -d, -f1 "$STATE/tokens.csv")"
    ;;
  esac
}

cmd_stop_one() {
  component "$1"
  T0=$(now_ms)
  stop "$1"
  log "$1 stopped in $(($(now_ms) - T0))ms"
}

cmd_start_one() {
  component "$1"
  if alive "$1"; then
    log "$1 already running"
    return 0
  fi
  local -a argv
  eval "argv=($(<"$STATE/$1.cmd"))"
  T0=$(now_ms)
  start "$1" "${argv[@]}"
  wait_ready "$1" 90 probe "$1"
}

cmd_down() {
  stop_all
  remove_state
  log "down"
}

cmd_env() {
  running || { log "not running: run 'hack/local-stack.sh up' (or 'make up')"; exit 1; }
  print_env
}

cmd_status() {
  local c ok=0
  for c in "${COMPONENTS[@]}"; do
    if alive "$c"; then
      echo "$c: running (pid $(<"$STATE/$c.pid"))"
    else
      echo "$c: stopped"
      ok=1
    fi
  done
  if ((ok == 0)) && [[ -f $STATE/env ]]; then
    print_env | sed 's/^export /  /'
  else
    ok=1
  fi
  return $ok
}

case ${1:-} in
up) cmd_up ;;
down) cmd_down ;;
env) cmd_env ;;
status) cmd_status ;;
stop) cmd_stop_one "${2:-}" ;;
start) cmd_start_one "${2:-}" ;;
restart)
  cmd_stop_one "${2:-}"
  cmd_start_one "${2:-}"
  ;;
*)
  echo "usage: $0 up|down|env|status|stop C|start C|restart C" >&2
  exit 2
  ;;
esac

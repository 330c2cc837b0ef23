#!/usr/bin/env bash
# The main job end to end on local real components: DynamoDB Local + kube-apiserver, the six
# tables of management cluster mc01, kube-applier-aws (the real binary, leader election on),
# and desirectl applying, reading and deleting the example manifests. Exits non-zero on the
# first failed step; stops whatever it started.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
STATE=${KAA_STACK_DIR:-$REPO/.stack}
MC=mc01
n=0
step() { n=$((n + 1)); printf '\n\033[1m== %d. %s\033[0m\n' "$n" "$*"; }
ok() { printf '   ok: %s\n' "$*"; }

started_stack=
applier_pid=
cleanup() {
  rc=$?
  if [[ -n $applier_pid ]] && kill -0 "$applier_pid" 2>/dev/null; then
    kill -TERM "$applier_pid" 2>/dev/null || true
    wait "$applier_pid" 2>/dev/null || true
  fi
  [[ -n $started_stack ]] && hack/local-stack.sh down >/dev/null 2>&1 || true
  if [[ $rc -ne 0 ]]; then
    echo "demo: FAILED at step $n (exit $rc)" >&2
    [[ -f $STATE/demo-applier.log ]] && { echo "--- last lines of the applier log:" >&2; tail -n 20 "$STATE/demo-applier.log" >&2; }
  fi
  exit $rc
}
trap cleanup EXIT

free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}

step "Start DynamoDB Local and kube-apiserver (the first run builds kube-apiserver: ~15 min)"
if ! hack/local-stack.sh status >/dev/null 2>&1; then
  hack/local-stack.sh up >/dev/null
  started_stack=1
fi
eval "$(hack/local-stack.sh env)"
# DynamoDB Local keeps one database per access key: a fresh one per run, so desires left by an
# earlier run or by the README's walkthrough (other documentIDs for the same objects, which
# the applier would report as TargetConflict) are not in the demo's tables.
export AWS_ACCESS_KEY_ID="demo$(date +%s)"
ok "DynamoDB Local at $KAA_DYNAMODB_ENDPOINT (database $AWS_ACCESS_KEY_ID), kubeconfig $KAA_KUBECONFIG"

step "Build kube-applier-aws and desirectl"
mkdir -p "$STATE/bin"
go build -o "$STATE/bin/kube-applier-aws" ./cmd/kube-applier-aws
go build -o "$STATE/bin/desirectl" ./cmd/desirectl
export PATH="$STATE/bin:$PATH" DESIRECTL_CONFIG="$STATE/demo-desirectl.yaml" KUBECONFIG="$KAA_KUBECONFIG"
ok "binaries in $STATE/bin"

step "Create the six tables of management cluster $MC"
desirectl config set-context demo --aws-region "$AWS_REGION" --endpoint-url "$KAA_DYNAMODB_ENDPOINT" \
  --management-cluster "$MC" --cluster-id demo-hc >/dev/null
desirectl config use-context demo >/dev/null
desirectl tables create

step "Start kube-applier-aws (leader election on)"
health=$(free_port)
metrics=$(free_port)
kube-applier-aws --management-cluster "$MC" --kubeconfig "$KAA_KUBECONFIG" --aws-region "$AWS_REGION" \
  --aws-endpoint-url "$KAA_DYNAMODB_ENDPOINT" --health-probe-bind-address "127.0.0.1:$health" \
  --metrics-bind-address "127.0.0.1:$metrics" >"$STATE/demo-applier.log" 2>&1 &
applier_pid=$!
for _ in $(seq 1 150); do
  curl -fsS "http://127.0.0.1:$health/readyz" >/dev/null 2>&1 && break
  kill -0 "$applier_pid" 2>/dev/null || { echo "kube-applier-aws exited" >&2; exit 1; }
  sleep 0.2
done
curl -fsS "http://127.0.0.1:$health/readyz" >/dev/null
ok "ready (pid $applier_pid, metrics http://127.0.0.1:$metrics/metrics, log $STATE/demo-applier.log)"

step "Apply examples/manifests/ with desirectl and wait for Successful=True"
desirectl apply -f examples/manifests/ --wait --timeout 90s

step "Read the objects back from the cluster through ReadDesires"
desirectl read configmaps demo-settings -n demo
desirectl read deployments.apps web -n demo -o json | head -n 12
echo "   ..."
desirectl read widgets.demo.example.com w1 -n demo

step "Delete the ConfigMap with a DeleteDesire and show it gone"
desirectl delete configmaps demo-settings -n demo --wait --timeout 60s
if desirectl read configmaps demo-settings -n demo --timeout 30s; then
  echo "the ConfigMap is still there" >&2
  exit 1
fi
ok "demo/demo-settings is gone (desirectl read exits 1 for a missing object)"

step "Every desire and its status"
desirectl get configmaps -o wide
desirectl get deployments.apps
desirectl get widgets.demo.example.com
desirectl get customresourcedefinitions.apiextensions.k8s.io
desirectl get namespaces

step "Stop kube-applier-aws (SIGTERM: in-flight writes finish, the lease is released)"
kill -TERM "$applier_pid"
wait "$applier_pid"
applier_pid=
ok "stopped cleanly"
printf '\n\033[1mdemo: all steps passed\033[0m\n'

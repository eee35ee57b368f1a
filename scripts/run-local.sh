#!/usr/bin/env bash
# Runs the stack on this machine: etcd, storage-svc, registry-svc, a controller-manager (the
# garbage collector) and a node agent for node-1
# (a stand-in kubelet), then the demo client against it. The stack keeps running until Ctrl-C
# (or exits after the demo with --demo-only).
#
#   scripts/run-local.sh                      the stack and the demo; runs until Ctrl-C
#   scripts/run-local.sh --demo-only          exits after the demo
#   scripts/run-local.sh --demo-only --then CMD...   runs CMD against the stack after the demo
#                                             and exits with its status (CI: the client examples)
#   scripts/run-local.sh --secure             registry-svc over TLS (REST and gRPC) with
#                                             --authorization-mode RBAC: certificates from
#                                             scripts/make-certs.sh in target/certs, the agent
#                                             and controller-manager as themselves (their
#                                             bootstrap roles only), kubeconfigs
#                                             target/kubeconfig (admin, system:masters) and
#                                             target/kubeconfig-alice (no roles)
#
# Ports: etcd 2379 (peer 2380), storage-svc 50051, registry-svc 50052 (gRPC) and 6443
# (Kubernetes' REST API: kubectl with the kubeconfig written to target/kubeconfig), metrics
# 9091/9092/9093. registry-svc issues ServiceAccount tokens (a key pair made here) and audits
# to target/audit.log (examples/audit-policy.yaml).
# Set OTEL_EXPORTER_OTLP_ENDPOINT to export traces (e.g. to a local Jaeger on :4317).
set -euo pipefail
cd "$(dirname "$0")/.."
demo_only=0
secure=0
then=()
while [ $# -gt 0 ]; do
  case $1 in
  --demo-only) demo_only=1; shift ;;
  --secure) secure=1; shift ;;
  --then) shift; then=("$@"); break ;;
  *) echo "usage: $0 [--demo-only] [--secure] [--then CMD...]" >&2; exit 2 ;;
  esac
done

scripts/deps.sh
if [ ! -x "${CARGO_TARGET_DIR:-target}/debug/registry-svc" ]; then
  echo "run-local: building the binaries (the first build takes about 5 minutes on 2 cores)"
fi
cargo build --quiet --bins
bin="${CARGO_TARGET_DIR:-target}/debug"
data=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT INT TERM

for port in 2379 2380 50051 50052 6443; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "port $port is already in use; stop what uses it first" >&2
    exit 1
  fi
done

etcd --name local --data-dir "$data/etcd" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster local=http://127.0.0.1:2380 --logger zap --log-level warn >"$data/etcd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  etcdctl --endpoints http://127.0.0.1:2379 endpoint health >/dev/null 2>&1 && break
  sleep 0.1
done

OTEL_SERVICE_NAME=${OTEL_SERVICE_NAME_STORAGE:-storage-svc} \
  "$bin/storage-svc" --listen-addr 127.0.0.1:50051 --metrics-addr 127.0.0.1:9091 &
pids+=($!)
# A ServiceAccount key pair (P-256) for the tokens registry-svc issues (`kubectl create token`).
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$data/sa.key" 2>/dev/null
openssl pkey -in "$data/sa.key" -pubout -out "$data/sa.pub" 2>/dev/null
# The audit log: examples/audit-policy.yaml's events, rotated at 10 MB, two kept.
audit_log="${CARGO_TARGET_DIR:-target}/audit.log"
# --secure: TLS for registry-svc's clients, RBAC, and each client as itself.
certs="${CARGO_TARGET_DIR:-target}/certs"
scheme=http
secure_flags=()
if [ "$secure" = 1 ]; then
  scripts/make-certs.sh "$certs" >/dev/null
  scheme=https
  secure_flags=(--tls-cert-file "$certs/registry-svc.crt" --tls-private-key-file "$certs/registry-svc.key"
    --client-ca-file "$certs/ca.crt" --authorization-mode RBAC)
fi
# The TLS flags of the CLI as the user $1 (a certificate of make-certs.sh).
identity() {
  [ "$secure" = 1 ] || return 0
  echo --certificate-authority "$certs/ca.crt" --client-certificate "$certs/$1.crt" --client-key "$certs/$1.key"
}
OTEL_SERVICE_NAME=${OTEL_SERVICE_NAME_REGISTRY:-registry-svc} \
  "$bin/registry-svc" --listen-addr 127.0.0.1:50052 --storage-addr http://127.0.0.1:50051 --metrics-addr 127.0.0.1:9092 \
  "${secure_flags[@]}" \
  --kube-api-addr 127.0.0.1:6443 \
  --service-account-issuer https://kubestore.local --service-account-signing-key-file "$data/sa.key" \
  --service-account-key-file "$data/sa.pub" \
  --audit-policy-file examples/audit-policy.yaml --audit-log-path "$audit_log" \
  --audit-log-maxsize 10 --audit-log-maxbackup 2 &
pids+=($!)
# shellcheck disable=SC2046 # identity's words are flags
for _ in $(seq 100); do
  "$bin/registry-svc" --listen-addr 127.0.0.1:50052 healthcheck $(identity admin) 2>/dev/null && break
  sleep 0.1
done

kubeconfig="${CARGO_TARGET_DIR:-target}/kubeconfig"
if [ "$secure" = 1 ]; then
  # RBAC answers 503 until its roles are loaded: wait until a user with no role may read
  # /version (system:public-info-viewer), so the agent and controller-manager start on a
  # ready gate.
  for _ in $(seq 100); do
    curl -sf --cacert "$certs/ca.crt" --cert "$certs/alice.crt" --key "$certs/alice.key" \
      https://127.0.0.1:6443/version >/dev/null 2>&1 && break
    sleep 0.1
  done
  # Kubeconfigs: the administrator (system:masters) and alice (nothing until a Role says so).
  for user in admin alice; do
    file=$kubeconfig
    [ "$user" = admin ] || file="$kubeconfig-$user"
    cat >"$file" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: kubestore
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: $PWD/$certs/ca.crt
contexts:
- name: kubestore
  context:
    cluster: kubestore
    namespace: default
    user: $user
current-context: kubestore
users:
- name: $user
  user:
    client-certificate: $PWD/$certs/$user.crt
    client-key: $PWD/$certs/$user.key
KUBECONFIG
  done
else
  # A kubeconfig for kubectl and the Kubernetes clients (plain HTTP on loopback).
  cat >"$kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: kubestore
  cluster:
    server: http://127.0.0.1:6443
    # Plain HTTP on loopback: no certificate to verify. @kubernetes/client-node refuses an
    # http:// server unless this is set; kubectl and the other clients ignore it for HTTP.
    insecure-skip-tls-verify: true
contexts:
- name: kubestore
  context:
    cluster: kubestore
    namespace: default
    user: kubestore
current-context: kubestore
users:
- name: kubestore
  user: {}
KUBECONFIG
fi

# The agent and the controller-manager, each as itself under --secure.
# shellcheck disable=SC2046 # identity's words are flags
OTEL_SERVICE_NAME=${OTEL_SERVICE_NAME_AGENT:-kubestore-agent} \
  "$bin/kubestore" --registry $scheme://127.0.0.1:50052 $(identity node-1) agent --node node-1 --stop-delay 2s &
pids+=($!)

# shellcheck disable=SC2046
OTEL_SERVICE_NAME=${OTEL_SERVICE_NAME_CONTROLLERS:-kubestore-controller-manager} \
  "$bin/kubestore" --registry $scheme://127.0.0.1:50052 $(identity controller-manager) controller-manager --metrics-addr 127.0.0.1:9093 &
pids+=($!)

# shellcheck disable=SC2046
"$bin/kubestore" --registry $scheme://127.0.0.1:50052 $(identity admin) demo
if [ "${#then[@]}" -gt 0 ]; then
  "${then[@]}"
fi
if [ "$demo_only" = 1 ]; then
  exit 0
fi
echo
echo "stack running: storage-svc 127.0.0.1:50051, registry-svc 127.0.0.1:50052 (REST: 127.0.0.1:6443),"
echo "metrics :9091 :9092 :9093, a controller-manager, a node agent for node-1 (Ctrl-C stops)."
echo "Try: export KUBECONFIG=$PWD/$kubeconfig; kubectl get pods -A -w   (or: $bin/kubestore get pods -A -w)"
if [ "$secure" = 1 ]; then
  echo "TLS and RBAC: $kubeconfig is the administrator (system:masters), $kubeconfig-alice a user with no role;"
  echo "the CLI: $bin/kubestore --registry https://127.0.0.1:50052 $(identity admin) get pods"
fi
wait

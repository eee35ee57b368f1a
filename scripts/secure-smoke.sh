#!/usr/bin/env bash
# Checks the stack of `scripts/run-local.sh --secure` (TLS, RBAC, each component as itself)
# as its user would, with kubectl and the kubeconfigs it writes; fails at the first surprise.
# CI: scripts/run-local.sh --secure --demo-only --then scripts/secure-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
admin=$PWD/${CARGO_TARGET_DIR:-target}/kubeconfig
alice=$admin-alice
expect() { # expect WHAT GOT WANT
  case $2 in *"$3"*) echo "secure-smoke: $1: ok" ;; *) echo "secure-smoke: $1: got: $2" >&2; exit 1 ;; esac
}
k() { KUBECONFIG=$admin kubectl "$@"; }
expect "whoami over TLS" "$(k auth whoami)" "[system:masters system:authenticated]"
expect "alice sees nothing" "$(KUBECONFIG=$alice kubectl get secrets 2>&1 || true)" \
  'secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "default"'
k create role cm-reader --verb=get,list --resource=configmaps >/dev/null
k create rolebinding alice-reads --role=cm-reader --user=alice >/dev/null
for _ in $(seq 50); do
  [ "$(k auth can-i list configmaps --as alice 2>/dev/null || true)" = yes ] && break
  sleep 0.1
done
expect "a Role grants alice" "$(KUBECONFIG=$alice kubectl get configmaps 2>&1)" "No resources found"
expect "and no more" "$(k auth can-i create configmaps --as alice 2>&1 || true)" "no"
# The controller-manager, as itself, keeps a default account in every namespace.
for _ in $(seq 100); do
  k get serviceaccount default -n kube-system >/dev/null 2>&1 && break
  sleep 0.1
done
expect "a token for the default account" "$(k create token default | cut -c1-3)" "eyJ"
k delete rolebinding alice-reads >/dev/null
k delete role cm-reader >/dev/null
echo "secure-smoke: the --secure stack works"

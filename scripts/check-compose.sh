#!/usr/bin/env bash
# CI's check of docker-compose.yml, which CI cannot run (no Docker engine on its machines):
#   - the file is valid for docker-compose, with and without the "ha" profile;
#   - every /pki/... file a service names is one scripts/compose-pki.sh makes, and every file
#     deploy/kubeconfig and deploy/kubeconfig-alice name (relative to deploy/) too;
#   - every file the image must carry for a service (the audit policy) is in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
docker-compose -f docker-compose.yml config -q
docker-compose -f docker-compose.yml --profile ha config -q
pki=$(mktemp -d)
trap 'rm -rf "$pki"' EXIT
PATH="$PWD/scripts:$PATH" scripts/compose-pki.sh "$pki/pki" >/dev/null
missing=0
for f in $(docker-compose -f docker-compose.yml --profile ha config | grep -o '/pki/[A-Za-z0-9._-]*' | sort -u); do
  [ -f "$pki$f" ] || { echo "check-compose: docker-compose.yml names $f, which compose-pki.sh does not make" >&2; missing=1; }
done
for kc in deploy/kubeconfig deploy/kubeconfig-alice; do
  for f in $(grep -o 'pki/[A-Za-z0-9._-]*' "$kc" | sort -u); do
    [ -f "$pki/$f" ] || { echo "check-compose: $kc names $f, which compose-pki.sh does not make" >&2; missing=1; }
  done
done
grep -q '^COPY examples/audit-policy.yaml /etc/kubestore/audit-policy.yaml$' Dockerfile \
  && grep -q 'AUDIT_POLICY_FILE: /etc/kubestore/audit-policy.yaml' docker-compose.yml \
  || { echo "check-compose: the audit policy the image carries is not the one the stack names" >&2; missing=1; }
exit $missing

#!/usr/bin/env bash
# The docker-compose stack's keys, made once by its one-shot `pki` service (in the image as
# /usr/local/bin/compose-pki.sh) into DIR (./deploy/pki on the host, git-ignored):
#   - the CA and certificates of scripts/make-certs.sh, plus the "ha" profile's servers;
#   - the ServiceAccount key pair registry-svc signs and checks tokens with (sa.key, sa.pub).
# Kept when present, so a restart keeps every issued certificate and token valid; delete
# deploy/pki to start over.
#
# The keys are left readable by all (0644): the services run as uid 10001 and the host's user
# runs kubectl with deploy/kubeconfig, both from this one directory. A local stack only: a
# real deployment gives each process its own key, readable by it alone.
set -euo pipefail
dir=${1:-/pki}
if [ -f "$dir/ca.crt" ] && [ -f "$dir/sa.pub" ]; then
  echo "compose-pki: keys in $dir kept (delete the directory to make new ones)"
  exit 0
fi
make-certs.sh "$dir" etcd-1 etcd-2 etcd-3 storage-svc-ha storage-svc-ha-2
# A P-256 key: registry-svc signs ES256 tokens with it (--service-account-signing-key-file).
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/sa.key" 2>/dev/null
openssl pkey -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
chmod 644 "$dir"/*.key
echo "compose-pki: CA, certificates and the ServiceAccount key pair in $dir"

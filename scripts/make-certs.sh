#!/usr/bin/env bash
# Makes a local CA and certificates for TLS on every hop (docs/tls.md), with openssl:
#   scripts/make-certs.sh DIR [NAME...]   NAMEs: more server certificates (e.g. the etcd
#                                         members of docker-compose's "ha" profile)
#   DIR/ca.crt, DIR/ca.key            the CA
#   DIR/etcd.{crt,key}                etcd's server certificate
#   DIR/storage-svc.{crt,key}         storage-svc: server, and client of etcd
#   DIR/registry-svc.{crt,key}        registry-svc: server, and client of storage-svc
#   DIR/admin.{crt,key}               a user of registry-svc (the CLI, grpcurl), in group
#                                     system:masters (an administrator under RBAC too)
#   DIR/alice.{crt,key}               a user with no group: only what RBAC grants her
#   DIR/node-1.{crt,key}              the node agent: system:node:node-1 in system:nodes
#   DIR/controller-manager.{crt,key}  the controller-manager: system:kube-controller-manager
# A certificate's common name is its file name unless said otherwise (the user it names to
# registry-svc; its O the groups); each is valid for its file name, localhost and 127.0.0.1,
# for server and client use, for 365 days. For local use and tests only: keep a
# real CA's key somewhere safer than next to the certificates.
set -euo pipefail
dir=${1:-certs}
shift $(($# > 0 ? 1 : 0))
mkdir -p "$dir"
cd "$dir"
command -v openssl >/dev/null || { echo "make-certs: openssl is required (apt-get install -y openssl)" >&2; exit 1; }
if [ ! -f ca.key ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=kubestore-local-ca" -keyout ca.key -out ca.crt 2>/dev/null
fi
subject() {
  case $1 in
  admin) echo "/O=system:masters/CN=admin" ;;
  node-1) echo "/O=system:nodes/CN=system:node:node-1" ;;
  controller-manager) echo "/CN=system:kube-controller-manager" ;;
  *) echo "/CN=$1" ;;
  esac
}
for name in etcd storage-svc registry-svc admin alice node-1 controller-manager "$@"; do
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "$(subject "$name")" -keyout "$name.key" -out "$name.csr" 2>/dev/null
  printf '%s\n' \
    "subjectAltName=DNS:$name,DNS:localhost,IP:127.0.0.1" \
    "extendedKeyUsage=serverAuth,clientAuth" \
    "keyUsage=digitalSignature,keyEncipherment" > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
    -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
done
chmod 600 ./*.key
echo "certificates in $(pwd): ca.crt, etcd, storage-svc, registry-svc, admin, alice, node-1, controller-manager${*:+, $*} (.crt/.key)"

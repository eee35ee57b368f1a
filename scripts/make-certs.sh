#!/usr/bin/env bash
# Makes a local CA and certificates for TLS on every hop (docs/tls.md), with openssl:
#   DIR/ca.crt, DIR/ca.key            the CA
#   DIR/etcd.{crt,key}                etcd's server certificate
#   DIR/storage-svc.{crt,key}         storage-svc: server, and client of etcd
#   DIR/registry-svc.{crt,key}        registry-svc: server, and client of storage-svc
#   DIR/admin.{crt,key}               a user of registry-svc (the CLI, grpcurl)
# Each certificate's common name is its file name; each is valid for that name, localhost and
# 127.0.0.1, for server and client use, for 365 days. For local use and tests only: keep a
# real CA's key somewhere safer than next to the certificates.
set -euo pipefail
dir=${1:-certs}
mkdir -p "$dir"
cd "$dir"
command -v openssl >/dev/null || { echo "make-certs: openssl is required (apt-get install -y openssl)" >&2; exit 1; }
if [ ! -f ca.key ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=kubestore-local-ca" -keyout ca.key -out ca.crt 2>/dev/null
fi
for name in etcd storage-svc registry-svc admin; do
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=$name" -keyout "$name.key" -out "$name.csr" 2>/dev/null
  printf '%s\n' \
    "subjectAltName=DNS:$name,DNS:localhost,IP:127.0.0.1" \
    "extendedKeyUsage=serverAuth,clientAuth" \
    "keyUsage=digitalSignature,keyEncipherment" > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
    -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
done
chmod 600 ./*.key
echo "certificates in $(pwd): ca.crt, etcd, storage-svc, registry-svc, admin (.crt/.key)"

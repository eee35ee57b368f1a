#!/usr/bin/env bash
# Installs what building and testing kubestore needs and a fresh Debian machine lacks:
# etcd (the real storage every test runs against), protoc (etcd-client's and our build scripts),
# openssl (scripts/run-local.sh's ServiceAccount key pair, scripts/make-certs.sh), curl (the
# README's token example).
set -euo pipefail
need=()
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || need+=(etcd-client)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v curl >/dev/null 2>&1 || need+=(curl)
if [ "${WITH_COMPOSE:-0}" = 1 ]; then
  command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi

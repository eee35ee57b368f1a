#!/usr/bin/env bash
# Runs the client examples against a running registry-svc (default 127.0.0.1:50052, the local
# stack of scripts/run-local.sh): Python (stubs from grpcio-tools), Node (@grpc/grpc-js with
# @grpc/proto-loader) and Go (protoc-gen-go and protoc-gen-go-grpc, built offline with Debian's
# packaged Go modules in GOPATH mode). Each creates, gets, lists, watches and deletes a
# ConfigMap, then creates, reads back, lists and deletes every published definition of
# tests/fixtures/crds/ (their schemas compared with the manifests'), and exits non-zero on any
# surprise. Tools are installed once under target/tools.
#
#   examples/clients/run.sh [ADDRESS]          all three
#   CLIENTS="python node" examples/clients/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
address=${1:-127.0.0.1:50052}
clients=${CLIENTS:-python node go}
tools=$root/target/tools
gen=$root/target/clients
mkdir -p "$tools" "$gen"

apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

for client in $clients; do
  case $client in
  python)
    if ! [ -x "$tools/py/bin/python" ] || ! "$tools/py/bin/python" -c 'import grpc_tools' 2>/dev/null; then
      apt_install python3-venv
      python3 -m venv "$tools/py"
      "$tools/py/bin/pip" install -q 'grpcio-tools==1.85.1'
    fi
    rm -rf "$gen/python" && mkdir -p "$gen/python"
    "$tools/py/bin/python" -m grpc_tools.protoc -I proto --python_out="$gen/python" \
      --grpc_python_out="$gen/python" proto/meta/v1/meta.proto proto/core/v1/core.proto \
      proto/apiextensions/v1/apiextensions.proto
    echo "== python"
    PYTHONPATH="$gen/python" "$tools/py/bin/python" examples/clients/python/configmaps.py "$address"
    PYTHONPATH="$gen/python" "$tools/py/bin/python" examples/clients/python/definitions.py "$address" tests/fixtures/crds
    ;;
  node)
    if ! [ -d "$tools/node/node_modules/@grpc/proto-loader" ]; then
      command -v npm >/dev/null || apt_install nodejs npm
      mkdir -p "$tools/node"
      npm install --silent --no-audit --no-fund --prefix "$tools/node" \
        @grpc/grpc-js@1.14.7 @grpc/proto-loader@0.8.1 >/dev/null
    fi
    echo "== node"
    NODE_PATH="$tools/node/node_modules" node examples/clients/node/configmaps.js "$address" "$root/proto"
    NODE_PATH="$tools/node/node_modules" node examples/clients/node/definitions.js "$address" "$root/proto" tests/fixtures/crds
    ;;
  go)
    # grpc's codec goes through github.com/golang/protobuf: its 1.5 line (APIv2 underneath)
    # reads the messages protoc-gen-go writes; the 1.3 line Debian may pull in cannot.
    apt_install golang-go protobuf-compiler protoc-gen-go protoc-gen-go-grpc \
      golang-google-grpc-dev golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev
    gopath=$gen/gopath
    rm -rf "$gopath" && mkdir -p "$gopath/src/kubestore.io/examples/configmaps" \
      "$gopath/src/kubestore.io/examples/definitions"
    protoc -I proto --go_out="$gopath/src" --go-grpc_out="$gopath/src" \
      proto/meta/v1/meta.proto proto/core/v1/core.proto proto/apiextensions/v1/apiextensions.proto
    cp examples/clients/go/main.go "$gopath/src/kubestore.io/examples/configmaps/"
    cp examples/clients/go/definitions/main.go "$gopath/src/kubestore.io/examples/definitions/"
    echo "== go"
    # GOPATH mode: the generated packages under their go_package paths, Debian's grpc and
    # protobuf modules from /usr/share/gocode; nothing is downloaded.
    for example in configmaps definitions; do
      (cd "$gopath/src/kubestore.io/examples/$example" &&
        GO111MODULE=off GOPATH="$gopath:/usr/share/gocode" GOFLAGS= GOCACHE="$tools/go-cache" \
          go build -o "$gen/$example-go" .)
    done
    "$gen/configmaps-go" "$address"
    "$gen/definitions-go" "$address" tests/fixtures/crds
    ;;
  *)
    echo "unknown client $client (python, node, go)" >&2
    exit 2
    ;;
  esac
done

#!/usr/bin/env bash
# The test command: installs etcd and protoc when missing, then runs every test of the
# workspace (unit tests, and end-to-end tests that start real etcd, storage-svc and
# registry-svc on free loopback ports).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
exec cargo test --workspace "$@"

#!/usr/bin/env bash
# The test command: installs etcd and protoc when missing, then runs every test of the
# workspace (unit tests, and end-to-end tests that start real etcd, storage-svc and
# registry-svc on free loopback ports). Ends with one line totalling every test binary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
awk '/^test result:/ { for (i = 1; i < NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"

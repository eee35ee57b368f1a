#!/usr/bin/env bash
# The test command: installs etcd and protoc when missing, then runs every test of the
# workspace (unit tests, and end-to-end tests that start real etcd, storage-svc and
# registry-svc on free loopback ports), then the end-to-end tests again with storage-svc's
# watch cache off: both paths must pass the whole suite. Ends with one line totalling every
# test binary of both runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
# The real Kubernetes clients of the REST API's end-to-end tests (kubectl 1.37, the Python and
# JavaScript clients).
scripts/kube-clients.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The binaries some tests run as processes (kubestore controller-manager).
[ -x target/debug/registry-svc ] || echo "test: building (the first build takes about 5 minutes on 2 cores; the tests then about 25)"
cargo build --bins
set +e
echo "== with the watch cache (default)"
cargo test --workspace "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" = 0 ]; then
  echo "== again with the watch cache off (KUBESTORE_TEST_WATCH_CACHE=false)"
  KUBESTORE_TEST_WATCH_CACHE=false cargo test -p kubestore-tests "$@" 2>&1 | tee -a "$log"
  status=${PIPESTATUS[0]}
fi
set -e
awk '/^test result:/ { for (i = 1; i < NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"

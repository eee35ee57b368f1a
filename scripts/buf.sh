#!/usr/bin/env bash
# `buf lint` (proto/buf.yaml: STANDARD, with each exception explained) and `buf breaking`
# against proto/released.binpb, the image of the last released contract. buf comes from npm
# (@bufbuild/buf), installed once under target/tools.
#
#   scripts/buf.sh            lint, and check for breaking changes
#   scripts/buf.sh --release  after a release: record the current protos as the baseline
set -euo pipefail
cd "$(dirname "$0")/.."
BUF_VERSION=1.75.0
tools="$PWD/target/tools/buf"
buf="$tools/node_modules/.bin/buf"
# The version is captured, not piped into `grep -q` (under pipefail a writer can die of
# SIGPIPE when grep exits at its match).
if ! [ -x "$buf" ] || [ "$("$buf" --version 2>/dev/null || true)" != "$BUF_VERSION" ]; then
  command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq npm >/dev/null; }
  mkdir -p "$tools"
  npm install --silent --no-audit --no-fund --prefix "$tools" "@bufbuild/buf@$BUF_VERSION" >/dev/null
fi
cd proto
if [ "${1:-}" = "--release" ]; then
  "$buf" build --exclude-source-info -o released.binpb
  echo "buf: proto/released.binpb now holds the current contract"
  exit 0
fi
"$buf" lint
"$buf" breaking --against released.binpb
echo "buf: lint clean, no breaking change against proto/released.binpb"

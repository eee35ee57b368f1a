#!/usr/bin/env bash
# Release over release: builds storage-svc and registry-svc of each given commit side by side
# with this tree (release profile), then runs `kubestore-bench --releases` on them, interleaved,
# and writes its section of BENCHMARKS.md.
#
#   scripts/bench-releases.sh a582744                 # this tree against a582744, 4 runs
#   scripts/bench-releases.sh a582744 af24d40 -- --runs 2 --perf-dir target/perf
#
# Each commit is checked out in a git worktree under target/releases/ and built with this tree's
# target directory, so the dependencies they share are compiled once; its binaries are copied to
# target/releases/<commit>/ before the next build replaces them. Arguments after `--` go to the
# benchmark.
#
# Cargo names a workspace crate's artefacts by its path relative to the workspace root, and
# judges them fresh by the mtimes of the files its last build read: a worktree's crates would
# reuse another tree's artefacts (and a build fail, or worse, link the wrong code). So the
# workspace crates' fingerprints are removed before each build, and only they are rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
commits=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  commits+=("$1")
  shift
done
[ "${1:-}" = "--" ] && shift
if [ ${#commits[@]} -eq 0 ]; then
  echo "usage: $0 COMMIT... [-- BENCH-ARGS...]" >&2
  exit 2
fi
out="$root/target/releases"
mkdir -p "$out"
# The workspace's own crates, as named in any of the trees built here.
own="kubestore-proto kubestore-apimachinery kubestore-telemetry storage-svc registry-svc
  kubestore-controllers kubestore-cli kubestore-tests kubestore-bench"
forget() {
  for p in $own; do rm -rf target/release/.fingerprint/"$p"-*; done
}
builds=()
for c in "${commits[@]}"; do
  sha=$(git rev-parse --short "$c^{commit}")
  if [ ! -x "$out/$sha/registry-svc" ]; then
    wt="$out/wt-$sha"
    [ -d "$wt" ] || git worktree add --detach "$wt" "$sha" >/dev/null
    forget
    (cd "$wt" && CARGO_TARGET_DIR="$root/target" cargo build --release -p storage-svc -p registry-svc)
    mkdir -p "$out/$sha"
    cp target/release/storage-svc target/release/registry-svc "$out/$sha/"
    git worktree remove --force "$wt"
  fi
  builds+=("$sha=$out/$sha")
done
forget
cargo build --release -p storage-svc -p registry-svc -p kubestore-bench
this="this ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo '+changes'))"
builds+=("$this=$root/target/release")
list=$(IFS=,; echo "${builds[*]}")
exec target/release/kubestore-bench --releases "$list" "$@"

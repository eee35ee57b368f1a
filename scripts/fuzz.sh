#!/usr/bin/env bash
# The long fuzz run (outside CI): every cargo-fuzz target in fuzz/ for SECS seconds each
# (default 300), starting from the seed corpus in fuzz/corpus/<target>/. New inputs go to
# fuzz/target/corpus/<target>/ (not into the repo); a crash stops the run, leaves its input in
# fuzz/artifacts/<target>/ and exits non-zero. Prints each target's executions.
# Needs a nightly toolchain and cargo-fuzz; installs both when missing.
# CI runs the same entry points on stable instead: tests/tests/fuzz_smoke.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-300}
# Captured, not piped into `grep -q` (SIGPIPE under pipefail).
toolchains=$(rustup toolchain list)
[[ $'\n'"$toolchains" == *$'\n'nightly* ]] || rustup toolchain install nightly --profile minimal
cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked
cd fuzz
for t in $(cargo +nightly fuzz list); do
  mkdir -p "target/corpus/$t"
  log="target/corpus/$t.log"
  if ! cargo +nightly fuzz run -O "$t" "target/corpus/$t" "corpus/$t" -- \
      -max_total_time="$secs" -print_final_stats=1 >"$log" 2>&1; then
    tail -40 "$log"
    echo "fuzz: $t FAILED (input in fuzz/artifacts/$t/)"
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  echo "fuzz: $t: $runs executions in ${secs}s, no crash"
done

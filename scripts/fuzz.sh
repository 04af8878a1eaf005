#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS (default 60) each from its seed corpus (fuzz/corpus/<target name
# without _fuzz>), FUZZ_JOBS targets at a time (default: the number of cores; each target is one process). A
# crash, a leak, an input slower than 10 s (timeout-*) or one using over 2 GB (oom-*) leaves the input in the
# current folder and fails the script. The targets are built by the `fuzz` preset (build/asan, shared with the
# ASan + UBSan test run: the same clang objects serve both).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
jobs=${FUZZ_JOBS:-$(nproc)}
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# fuzz_one BIN: one target's run; its log in $logs/<name>.log, its exit status in $logs/<name>.rc.
fuzz_one() {
  local bin=$1 name work rc=0
  name=$(basename "$bin" _fuzz)
  work=$(mktemp -d)  # new inputs found this run stay out of the committed corpus
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$work" \
    "fuzz/corpus/$name" >"$logs/$name.log" 2>&1 || rc=$?
  echo "$rc" >"$logs/$name.rc"
  rm -rf "$work"
}

bins=(build/asan/fuzz/*_fuzz)
echo "fuzz: ${#bins[@]} targets, $seconds s each, $jobs at a time"
running=0
for bin in "${bins[@]}"; do
  fuzz_one "$bin" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

status=0
for bin in "${bins[@]}"; do
  name=$(basename "$bin" _fuzz)
  rc=$(cat "$logs/$name.rc" 2>/dev/null || echo 1)
  echo "== $name ($seconds s): exit $rc"
  if [ "$rc" -eq 0 ]; then
    grep -E "stat::number_of_executed_units|Done" "$logs/$name.log" || true
  else
    tail -n 60 "$logs/$name.log"  # the sanitizer's report and the input it left
    status=1
  fi
done
exit $status

#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS (default 60) each from its seed corpus (fuzz/corpus/<target name
# without _fuzz>). A crash, a leak, an input slower than 10 s (timeout-*) or one using over 2 GB (oom-*)
# leaves the input in the current folder and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
status=0
for bin in build/fuzz/fuzz/*_fuzz; do
  name=$(basename "$bin" _fuzz)
  work=$(mktemp -d)  # new inputs found this run stay out of the committed corpus
  echo "== $name ($seconds s)"
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$work" "fuzz/corpus/$name" 2>&1 |
    grep -E "stat::number_of_executed_units|ERROR|SUMMARY|Done" || true
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  rm -rf "$work"
done
exit $status

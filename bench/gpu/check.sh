#!/usr/bin/env bash
# On the GPU machine: every CUDA kernel version on the smoke suite (committed) and the default suite (generated
# there by the carried flashsim), verified in process; then compute-sanitizer memcheck and racecheck on smoke.
# Tables go to OUT (default $OUT):
#   bash bench/gpu/check.sh [BUNDLE] [OUT]      (BUNDLE: bench/gpu/bundle.sh's folder, default .gpu-bundle)
set -u
source "$(dirname "$0")/bundle_env.sh" "$@"
fg="$bundle/flashsim-gpu"
nvidia-smi -L | tee "$out/gpu.txt"
"$bundle/flashsim" golden generate --suite default --out /tmp/golden-default --force > /dev/null
for suite in golden/data/smoke /tmp/golden-default; do
  name=$(basename "$suite")
  "$fg" check --golden "$suite" ${KERNELS:+--kernel $KERNELS} > "$out/check_$name.txt" 2>&1
  echo "check $name: exit $? ($(grep -c '^== ' "$out/check_$name.txt") versions)"
  grep -E "^== |cases passed|ALL PASS|SOME OUTPUTS FAILED|^skipped" "$out/check_$name.txt" | sort | uniq -c | sort -rn | head -20
done
# DQ=partials: also the deterministic backward on default.
if [ -n "${DQ:-}" ]; then
  "$fg" check --golden /tmp/golden-default ${KERNELS:+--kernel $KERNELS} --dq-strategy "$DQ" \
    > "$out/check_default_dq_$DQ.txt" 2>&1
  echo "check default --dq-strategy $DQ: exit $?"
  grep -E "^== |cases passed|ALL PASS|SOME OUTPUTS FAILED" "$out/check_default_dq_$DQ.txt"
fi
# The sanitizers on smoke and on the default suite's small cases (files under 1 MB: every feature, few seconds
# each under memcheck), which cover the head dims smoke lacks.
small=$(python3 -c '
import json, os, sys
m = json.load(open("/tmp/golden-default/manifest.json"))
print(" ".join("--case " + c["name"] for c in m["cases"]
               if os.path.getsize(os.path.join("/tmp/golden-default", c["file"])) < 1 << 20))')
if [ "${SANITIZE:-1}" = 1 ]; then
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 3 "$fg" check --golden golden/data/smoke \
      ${KERNELS:+--kernel $KERNELS} --quiet > "$out/sanitizer_$tool.txt" 2>&1
    echo "compute-sanitizer $tool smoke: exit $?"
    tail -2 "$out/sanitizer_$tool.txt"
    compute-sanitizer --tool $tool --error-exitcode 3 "$fg" check --golden /tmp/golden-default $small \
      ${KERNELS:+--kernel $KERNELS} --quiet > "$out/sanitizer_${tool}_default_small.txt" 2>&1
    echo "compute-sanitizer $tool default (small cases): exit $?"
    grep -E "^== |cases passed|ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer_${tool}_default_small.txt"
  done
fi

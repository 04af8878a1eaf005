#!/usr/bin/env bash
# On the GPU machine: every CUDA kernel version on the smoke suite (committed), the default suite and the
# fa2-tiles suite (bench/gpu/suites/fa2_tiles.json: the default's features at d96, d128, d256), both generated
# there by the carried flashsim, each version at its launch tiles, verified in process; then compute-sanitizer
# memcheck and racecheck on smoke and on the default suite's small cases.
# Tables go to OUT (default $OUT):
#   bash bench/gpu/check.sh [BUNDLE] [OUT]      (BUNDLE: bench/gpu/bundle.sh's folder, default .gpu-bundle)
set -u
source "$(dirname "$0")/bundle_env.sh" "$@"
fg="$bundle/flashsim-gpu"
nvidia-smi -L | tee "$out/gpu.txt"
"$bundle/flashsim" golden generate --suite default --out /tmp/golden-default --force > /dev/null
"$bundle/flashsim" golden generate --suite bench/gpu/suites/fa2_tiles.json --out /tmp/golden-fa2-tiles --force \
  > /dev/null
for suite in golden/data/smoke /tmp/golden-default /tmp/golden-fa2-tiles; do
  name=$(basename "$suite")
  "$fg" check --golden "$suite" ${KERNELS:+--kernel $KERNELS} > "$out/check_$name.txt" 2>&1
  echo "check $name: exit $? ($(grep -c '^== ' "$out/check_$name.txt") versions)"
  grep -E "^== |cases passed|ALL PASS|SOME OUTPUTS FAILED|^skipped" "$out/check_$name.txt" | sort | uniq -c | sort -rn | head -20
done
# DQ=partials: also the deterministic backward on default and fa2-tiles.
if [ -n "${DQ:-}" ]; then
  for suite in /tmp/golden-default /tmp/golden-fa2-tiles; do
    name=$(basename "$suite")
    "$fg" check --golden "$suite" ${KERNELS:+--kernel $KERNELS} --dq-strategy "$DQ" \
      > "$out/check_${name}_dq_$DQ.txt" 2>&1
    echo "check $name --dq-strategy $DQ: exit $?"
    grep -E "^== |cases passed|ALL PASS|SOME OUTPUTS FAILED" "$out/check_${name}_dq_$DQ.txt"
  done
fi
# TILES="--block-k 64 --stages 1 ...": also a run over fa2-tiles at those tiles (the ones off the launch table).
if [ -n "${TILES:-}" ]; then
  "$fg" check --golden /tmp/golden-fa2-tiles ${KERNELS:+--kernel $KERNELS} $TILES > "$out/check_tiles_override.txt" 2>&1
  echo "check fa2-tiles $TILES: exit $?"
  grep -E "^== |cases passed|ALL PASS|SOME OUTPUTS FAILED" "$out/check_tiles_override.txt"
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

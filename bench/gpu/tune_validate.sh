#!/usr/bin/env bash
# On the GPU machine: the timings `flashsim sim tune --check` compares its ranking with, and the goldens of the
# launch table it generated, in one run (issue 15):
#   bash bench/gpu/tune_validate.sh [BUNDLE] [OUT]      (BUNDLE: bench/gpu/bundle.sh's folder)
# OUT/grid/:    autotune.sh's default grid (4 head dims x bf16, fp16 x seqlen 1K, 4K, 16K x plain, causal, bias,
#               causal+bias; 16K tokens, heads 2048 / d): every instance timed, `hand` and `table` marked;
# OUT/heldout/: a grid the model's constants were never looked at against (bf16, seqlen 512, 2K, 8K, 16 heads at
#               every head dim, so widths 1024 .. 4096);
# OUT/check_default.txt: flashsim-gpu check --kernel fa2-v1 on the default suite at the launch table's tiles.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/bundle_env.sh" "$@"
t0=$SECONDS
CHECK=0 BUDGET_S=${GRID_BUDGET_S:-300} bash "$here/autotune.sh" "$bundle" "$out/grid"
CHECK=0 BUDGET_S=${HELDOUT_BUDGET_S:-150} GRID="--dtypes bf16 --seqlens 512,2048,8192 --heads 16" \
  bash "$here/autotune.sh" "$bundle" "$out/heldout"
"$bundle/flashsim" golden generate --suite default --out /tmp/golden-default --force > /dev/null
"$bundle/flashsim-gpu" check --golden /tmp/golden-default --kernel fa2-v1 > "$out/check_default.txt" 2>&1
echo "check default: exit $?"
grep -E "^== |cases passed|ALL PASS|SOME OUTPUTS FAILED" "$out/check_default.txt"
echo "total: $((SECONDS - t0)) s"

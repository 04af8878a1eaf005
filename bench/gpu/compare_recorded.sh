#!/usr/bin/env bash
# Compares every recorded H100 ncu CSV with flashsim's prediction:
#   bash bench/gpu/compare_recorded.sh [FLASHSIM] [SET]
# SET: "" (the first run of the 7 shapes, the default), repeat (the same 7 shapes measured again), validation
# (5 shapes measured later) or validation2 (4 more, measured on 2026-11-23); prints one block per shape. DRAM counters come from the one-pass reports in
# single_pass/ (--ncu-dram), except for the repeat set and with DRAM=replayed, which compare each report's own
# replayed counters (the profile's replay term applies).
set -u
cd "$(dirname "$0")/../.."
F=${1:-build/default/flashsim}
set_name=${2:-}
R=bench/results/ncu_h100_2026-11-22${set_name:+/$set_name}
if [ "$set_name" = validation2 ]; then
  shapes=(
    "causal_d64_n8192:--batch 1 --heads 16 --seqlen 8192 --head-dim 64 --causal"
    "d128_n2048:--batch 4 --heads 16 --seqlen 2048 --head-dim 128"
    "gqa_d64_n2048:--batch 4 --heads 32 --heads-kv 8 --seqlen 2048 --head-dim 64"
    "causal_d96_n4096:--batch 2 --heads 8 --seqlen 4096 --head-dim 96 --causal"
  )
elif [ "$set_name" = validation ]; then
  shapes=(
    "causal_d128_n8192:--batch 1 --heads 16 --seqlen 8192 --head-dim 128 --causal"
    "gqa_causal_d64_n4096:--batch 2 --heads 16 --heads-kv 4 --seqlen 4096 --head-dim 64 --causal"
    "d96_n2048:--batch 2 --heads 16 --seqlen 2048 --head-dim 96"
    "d128_n512:--batch 16 --heads 16 --seqlen 512 --head-dim 128"
    "causal_d256_n2000:--batch 2 --heads 8 --seqlen 2000 --head-dim 256 --causal"
  )
else
  shapes=(
    "causal_d128_n4096:--batch 2 --heads 16 --seqlen 4096 --head-dim 128 --causal"
    "d64_n1024:--batch 8 --heads 16 --seqlen 1024 --head-dim 64"
    "d256_n1024:--batch 4 --heads 8 --seqlen 1024 --head-dim 256"
    "d128_n16384_causal:--batch 1 --heads 8 --seqlen 16384 --head-dim 128 --causal"
    "gqa_d128_n2048:--batch 2 --heads 32 --heads-kv 8 --seqlen 2048 --head-dim 128"
    "d128_n1000:--batch 4 --heads 16 --seqlen 1000 --head-dim 128"
    "d64_n3000_causal:--batch 2 --heads 16 --seqlen 3000 --head-dim 64 --causal"
  )
fi
for spec in "${shapes[@]}"; do
  name=${spec%%:*}
  args=${spec#*:}
  dram=()
  [ "$set_name" != repeat ] && [ "${DRAM:-}" != replayed ] && dram=(--ncu-dram "bench/results/ncu_h100_2026-11-22/single_pass/ncu_dram_$name.csv")
  echo "== $name: flashsim traffic compare --ncu $R/ncu_$name.csv ${dram[*]} $args --dtype bf16"
  $F traffic compare --ncu "$R/ncu_$name.csv" "${dram[@]}" $args --dtype bf16
  echo "exit code $?"
  echo
done

#!/usr/bin/env bash
# Compares every recorded H100 ncu CSV with flashsim's prediction: bash bench/gpu/compare_recorded.sh [FLASHSIM]
set -u
cd "$(dirname "$0")/../.."
F=${1:-build/default/flashsim}
R=bench/results/ncu_h100_2026-11-22
shapes=(
  "causal_d128_n4096:--batch 2 --heads 16 --seqlen 4096 --head-dim 128 --causal"
  "d64_n1024:--batch 8 --heads 16 --seqlen 1024 --head-dim 64"
  "d256_n1024:--batch 4 --heads 8 --seqlen 1024 --head-dim 256"
  "d128_n16384_causal:--batch 1 --heads 8 --seqlen 16384 --head-dim 128 --causal"
  "gqa_d128_n2048:--batch 2 --heads 32 --heads-kv 8 --seqlen 2048 --head-dim 128"
  "d128_n1000:--batch 4 --heads 16 --seqlen 1000 --head-dim 128"
  "d64_n3000_causal:--batch 2 --heads 16 --seqlen 3000 --head-dim 64 --causal"
)
for spec in "${shapes[@]}"; do
  name=${spec%%:*}
  args=${spec#*:}
  echo "== $name: flashsim traffic compare --ncu $R/ncu_$name.csv $args --dtype bf16"
  $F traffic compare --ncu "$R/ncu_$name.csv" $args --dtype bf16
  echo "exit code $?"
  echo
done

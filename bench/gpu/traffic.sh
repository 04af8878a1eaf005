#!/usr/bin/env bash
# On the GPU machine: our FA2 (fa2-v1) under Nsight Compute on 4 shapes: the forward kernel (one launch) and the
# backward's three kernels (dot_do_o, main, convert_dq: one backward call), with the metrics `flashsim traffic
# compare` reads (ncu_metrics.sh), then the comparison with the prediction for the same tile config (the
# kernels' template arguments). Into OUT:
#   bash bench/gpu/traffic.sh [BUNDLE] [OUT]
set -u
source "$(dirname "$0")/bundle_env.sh" "$@"
source bench/gpu/ncu_metrics.sh
metrics=$ncu_metrics
# name batch heads heads_kv seqlen head_dim causal (the GQA shape checks the backward's per-kv-head model)
shapes=(
  "d128_n4096 2 16 16 4096 128 no"
  "d128_n4096_causal 2 16 16 4096 128 yes"
  "d64_n2048 4 16 16 2048 64 no"
  "d96_n3000_causal 2 8 8 3000 96 yes"
  "gqa_d128_n2048 2 32 8 2048 128 no"
)
for s in "${shapes[@]}"; do
  set -- $s
  name=$1 b=$2 h=$3 hkv=$4 n=$5 d=$6 causal=$7
  flags=(--batch "$b" --heads "$h" --heads-kv "$hkv" --seqlen "$n" --head-dim "$d")
  [ "$causal" = yes ] && flags+=(--causal)
  for pass in fwd bwd; do
    count=1
    [ $pass = bwd ] && count=3
    ncu --clock-control none -k "regex:flashsim_fa2_${pass}_" --launch-count $count --csv --metrics "$metrics" \
      "$bundle/flashsim-gpu" bench --kernel fa2-v1 --batch "$b" --heads "$h" --heads-kv "$hkv" --seqlens "$n" \
      --head-dims "$d" \
      --causal "$causal" --repeats 3 \
      > "$out/ncu_fa2_v1_${pass}_$name.csv" 2> "$out/ncu_fa2_v1_${pass}_$name.err"
    echo "== $name $pass: flashsim traffic compare ${flags[*]}" | tee -a "$out/traffic_compare.txt"
    "$bundle/flashsim" traffic compare --ncu "$out/ncu_fa2_v1_${pass}_$name.csv" "${flags[@]}" 2>&1 \
      | tee -a "$out/traffic_compare.txt"
  done
done
tar -C "$out" -czf "$out/ncu_fa2_v1_csvs.tar.gz" $(cd "$out" && ls ncu_fa2_v1_*.csv) && rm -f "$out"/ncu_fa2_v1_*.csv

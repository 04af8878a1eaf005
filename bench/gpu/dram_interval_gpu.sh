#!/usr/bin/env bash
# On the GPU machine, issue 17's measured part: DRAM figures that `flashsim traffic compare`'s interval never saw.
#   PART=own  bash bench/gpu/dram_interval_gpu.sh [BUNDLE] [OUT]
#     fa2-v1-heads-first (a planted traffic bug) checked against the goldens (smoke, default), then under Nsight
#     Compute next to fa2-v1 on the same problems; fa2-v1's forward and backward on new shapes. Each kernel twice:
#     the full metric set (ncu_fa2_*.csv) and DRAM counters alone, which ncu collects in one pass
#     (ncu_dram_fa2_*.csv); all CSVs in one archive, ncu_fa2_gpu_csvs.tar.gz.
#   PART=sdpa bash bench/gpu/dram_interval_gpu.sh [BUNDLE] [OUT]
#     SDPA's FA2 on ncu_shapes.sh's validation3 shapes, both metric sets (ncu_csvs.tar.gz, ncu_dram_csvs.tar.gz).
# The comparisons run on this machine afterwards (bench/gpu/dram_interval_coverage.py), with the same flashsim.
set -u
source "$(dirname "$0")/bundle_env.sh" "$@"
fg="$bundle/flashsim-gpu"
nvidia-smi -L | tee "$out/gpu_${PART:-own}.txt"
if [ "${PART:-own}" = sdpa ]; then
  SHAPES=validation3 bash bench/gpu/ncu_shapes.sh "$out"
  SHAPES=validation3 METRICS=dram bash bench/gpu/ncu_shapes.sh "$out"
  exit 0
fi
"$bundle/flashsim" golden generate --suite default --out /tmp/golden-default --force > /dev/null
for suite in golden/data/smoke /tmp/golden-default; do
  "$fg" check --golden "$suite" --kernel fa2-v1-heads-first > "$out/check_heads_first_$(basename "$suite").txt" 2>&1
  echo "check fa2-v1-heads-first on $(basename "$suite"): exit $?"
  grep -E "cases passed|ALL PASS|SOME OUTPUTS FAILED" "$out/check_heads_first_$(basename "$suite").txt"
done
source bench/gpu/ncu_metrics.sh
# name kernel passes batch heads heads_kv seqlen head_dim causal
runs=(
  "heads_first_d128_n4096 fa2-v1-heads-first fwd 4 32 32 4096 128 no"
  "heads_first_d128_n4096_causal fa2-v1-heads-first fwd 4 32 32 4096 128 yes"
  "d128_n4096_b4h32 fa2-v1 fwd 4 32 32 4096 128 no"
  "d128_n4096_b4h32_causal fa2-v1 fwd 4 32 32 4096 128 yes"
  "d64_n8192 fa2-v1 fwd,bwd 1 16 16 8192 64 no"
  "d128_n2048_causal fa2-v1 fwd,bwd 4 16 16 2048 128 yes"
  "gqa_d96_n4096 fa2-v1 fwd,bwd 2 16 4 4096 96 no"
  "d256_n2048 fa2-v1 fwd,bwd 2 8 8 2048 256 no"
)
for r in "${runs[@]}"; do
  set -- $r
  name=$1 kernel=$2 passes=$3 b=$4 h=$5 hkv=$6 n=$7 d=$8 causal=$9
  for pass in ${passes//,/ }; do
    count=1
    [ "$pass" = bwd ] && count=3  # dot_do_o, main, convert_dq: one backward call
    for set in full dram; do
      metrics=$ncu_metrics prefix=ncu_fa2
      [ $set = dram ] && metrics=$ncu_dram_metrics prefix=ncu_dram_fa2
      csv="$out/${prefix}_${pass}_$name.csv"
      ncu --clock-control none -k "regex:flashsim_fa2_${pass}_" --launch-count $count --csv --metrics "$metrics" \
        "$fg" bench --kernel "$kernel" --batch "$b" --heads "$h" --heads-kv "$hkv" --seqlens "$n" --head-dims "$d" \
        --causal "$causal" --repeats 3 > "$csv" 2> "$csv.err"
      echo "$name $pass $set: rc=$? $(grep -c flashsim_fa2 "$csv") kernel rows"
    done
  done
done
tar -C "$out" -czf "$out/ncu_fa2_gpu_csvs.tar.gz" $(cd "$out" && ls ncu_*fa2_*.csv ncu_*fa2_*.err) \
  && rm -f "$out"/ncu_*fa2_*.csv "$out"/ncu_*fa2_*.err

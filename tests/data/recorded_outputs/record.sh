#!/usr/bin/env bash
# Runs a fixed list of flashsim commands (sim predict --json, sim sweep --csv, traffic compare --json on every
# recorded ncu report) and writes each one's stdout and exit code to OUTDIR/<name>.txt:
#   bash tests/data/recorded_outputs/record.sh FLASHSIM OUTDIR
# The files beside this script were written by the flashsim of commit 3b84c8d, before the kernel-model
# registry; the test recorded_outputs runs the same list with today's binary and requires every file equal.
# Flags the list gives explicitly (--dtype, --pass) keep it independent of the CLI's defaults.
set -u
# OpenBLAS picks its GEMM kernels by CPU at run time (Haswell, SkylakeX, Zen ...), and the emulated pipeline's
# fp32 GEMMs round differently with each, which moves the goldens' tolerance metadata in its last digits:
# one kernel family for every machine with AVX2.
export OPENBLAS_CORETYPE=Haswell
F=$1
OUT=$2
cd "$(dirname "$0")/../../.."
rm -rf "$OUT"
mkdir -p "$OUT"
run() {  # run NAME ARGS...
  local name=$1
  shift
  "$F" "$@" > "$OUT/$name.txt" 2> /dev/null
  echo "exit $?" >> "$OUT/$name.txt"
}
R=tests/data/ncu
SP=$R/single_pass

# sim predict --json: every forward algorithm, both passes, features that change the schedules.
P1="--batch 2 --heads 16 --seqlen 4096 --head-dim 128 --causal --dtype bf16"
P2="--batch 3 --heads 8 --heads-kv 2 --seqlen-q 1000 --seqlen-k 1500 --head-dim 96 --dtype fp16"
P3="--varlen 100:300,513,7:1000 --heads 4 --head-dim 64 --window 64,32 --dtype bf16"
P4="--batch 1 --heads 4 --seqlen 300 --head-dim 64 --causal --dtype fp32"
for alg in fa2 fa1 three-pass two-pass naive; do
  run "predict_p1_$alg" sim predict $P1 --pass both --algorithm $alg --json
  run "predict_p2_$alg" sim predict $P2 --pass both --algorithm $alg --json
  run "predict_p3_$alg" sim predict $P3 --pass both --algorithm $alg --json
done
run predict_p1_partials sim predict $P1 --pass both --dq-strategy partials --json
run predict_p2_tiles sim predict $P2 --pass both --block-q 64 --block-k 128 --warps 4 --stages 2 --q-in-registers --kv-shared --bwd-block-q 128 --bwd-block-k 64 --json
run predict_p3_partials sim predict $P3 --pass both --dq-strategy partials --bwd-block-q 32 --json
run predict_p4_executed sim predict $P4 --pass both --executed --json
run predict_p4_executed_naive sim predict $P4 --pass both --executed --algorithm naive --json
run predict_p3_executed sim predict $P3 --pass both --executed --json
run predict_misfit sim predict $P1 --pass fwd --block-q 256 --block-k 256 --json
run predict_p1_a100 sim predict $P1 --pass both --hw A100-SXM4-80GB --json
run predict_p2_l4 sim predict $P2 --pass both --hw L4 --json

# sim sweep --csv, forward and backward.
run sweep_p1_fwd sim sweep $P1 --pass fwd --csv --top 0
run sweep_p1_bwd sim sweep $P1 --pass bwd --csv --top 0
run sweep_p2_fwd sim sweep $P2 --pass fwd --csv --top 0
run sweep_p3_bwd sim sweep $P3 --pass bwd --csv --top 50

# traffic compare --json: every recorded full report, alone (replayed counters) and with its one-pass DRAM
# report, and each one-pass DRAM report against the first full report of its shape.
shape_args() {
  case $1 in
    causal_d128_n4096) echo "--batch 2 --heads 16 --seqlen 4096 --head-dim 128 --causal" ;;
    d64_n1024) echo "--batch 8 --heads 16 --seqlen 1024 --head-dim 64" ;;
    d256_n1024) echo "--batch 4 --heads 8 --seqlen 1024 --head-dim 256" ;;
    d128_n16384_causal) echo "--batch 1 --heads 8 --seqlen 16384 --head-dim 128 --causal" ;;
    gqa_d128_n2048) echo "--batch 2 --heads 32 --heads-kv 8 --seqlen 2048 --head-dim 128" ;;
    d128_n1000) echo "--batch 4 --heads 16 --seqlen 1000 --head-dim 128" ;;
    d64_n3000_causal) echo "--batch 2 --heads 16 --seqlen 3000 --head-dim 64 --causal" ;;
    causal_d128_n8192) echo "--batch 1 --heads 16 --seqlen 8192 --head-dim 128 --causal" ;;
    gqa_causal_d64_n4096) echo "--batch 2 --heads 16 --heads-kv 4 --seqlen 4096 --head-dim 64 --causal" ;;
    d96_n2048) echo "--batch 2 --heads 16 --seqlen 2048 --head-dim 96" ;;
    d128_n512) echo "--batch 16 --heads 16 --seqlen 512 --head-dim 128" ;;
    causal_d256_n2000) echo "--batch 2 --heads 8 --seqlen 2000 --head-dim 256 --causal" ;;
    causal_d64_n8192) echo "--batch 1 --heads 16 --seqlen 8192 --head-dim 64 --causal" ;;
    d128_n2048) echo "--batch 4 --heads 16 --seqlen 2048 --head-dim 128" ;;
    gqa_d64_n2048) echo "--batch 4 --heads 32 --heads-kv 8 --seqlen 2048 --head-dim 64" ;;
    causal_d96_n4096) echo "--batch 2 --heads 8 --seqlen 4096 --head-dim 96 --causal" ;;
    calibration_d128_n4096) echo "--batch 2 --heads 16 --seqlen 4096 --head-dim 128" ;;
    d64_n1000_causal) echo "--batch 2 --heads 8 --seqlen 1000 --head-dim 64 --causal" ;;
  esac
}
for set in "" repeat validation validation2; do
  for f in $R/${set:+$set/}ncu_*.csv; do
    shape=$(basename "$f" .csv)
    shape=${shape#ncu_}
    tag=compare_${set:-first}_$shape
    run "$tag" traffic compare --ncu "$f" $(shape_args "$shape") --dtype bf16 --json
    if [ "$set" != repeat ] && [ -f "$SP/ncu_dram_$shape.csv" ]; then
      run "${tag}_one_pass" traffic compare --ncu "$f" --ncu-dram "$SP/ncu_dram_$shape.csv" \
        $(shape_args "$shape") --dtype bf16 --json
    fi
  done
done
CAL=tests/data/ncu_fa2_h100_calibration.csv
run compare_calibration traffic compare --ncu $CAL $(shape_args calibration_d128_n4096) --dtype bf16 --json
run compare_calibration_no_replay traffic compare --ncu $CAL --replayed no $(shape_args calibration_d128_n4096) --dtype bf16 --json
run compare_calibration_one_pass traffic compare --ncu $CAL --ncu-dram $SP/ncu_dram_calibration_d128_n4096.csv $(shape_args calibration_d128_n4096) --dtype bf16 --json
run compare_calibration_rerun traffic compare --ncu $R/calibration_rerun/ncu_calibration_d128_n4096.csv $(shape_args calibration_d128_n4096) --dtype bf16 --json
for f in $R/csv_layouts/ncu_*d64_n1000_causal.csv; do
  run "compare_layouts_$(basename "$f" .csv)" traffic compare --ncu "$f" $(shape_args d64_n1000_causal) --dtype bf16 --json
done
for f in $SP/ncu_dram_*.csv $R/single_pass_repeat/*/ncu_dram_*.csv $R/dram_repeats/*/*/ncu_dram_*.csv; do
  shape=$(basename "$f" .csv)
  shape=${shape#ncu_dram_}
  tag=$(echo "${f#$R/}" | tr '/' '_')
  run "compare_dram_${tag%.csv}" traffic compare --ncu "$f" $(shape_args "$shape") --dtype bf16 --json
done
run compare_sdpa_d96_metric_set traffic compare --ncu $R/metric_sets/run1_sdpa_d96_big.csv --batch 2 --heads 16 --seqlen 2048 --head-dim 96 --dtype bf16 --json

# Goldens: the manifests (every file's sha256) of the smoke, default and norm suites.
for suite in smoke default norm; do
  rm -rf "$OUT/.golden-$suite"
  "$F" golden generate --suite $suite --out "$OUT/.golden-$suite" > /dev/null 2>&1
  cp "$OUT/.golden-$suite/manifest.json" "$OUT/golden_${suite}_manifest.json"
  rm -rf "$OUT/.golden-$suite"
done

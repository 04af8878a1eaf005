#!/usr/bin/env bash
# Profiles SDPA's flash backend with Nsight Compute for each shape below, one CSV per shape into $1 (default
# $OUT), with the metrics `flashsim traffic compare` reads. ncu's default cache control flushes caches before
# each kernel. Run on the GPU machine from the repository root: bash bench/gpu/ncu_shapes.sh OUTDIR
set -u
out=${1:-${OUT:-.}}
source "$(dirname "$0")/ncu_metrics.sh"
metrics=$ncu_metrics
# METRICS=dram: only dram__bytes_read/write, which ncu then collects in one pass (ncu_dram_<shape>.csv). With the
# full set ncu replays each kernel, and every kernel after the first one profiled writes about 2.4 MB more than
# in one pass (bench/results/ncu_h100_2026-11-22/README.md): take the DRAM figures from this run.
prefix=ncu
if [ "${METRICS:-}" = dram ]; then
  metrics=$ncu_dram_metrics
  prefix=ncu_dram
fi
only=${2:-}  # optional: a regex of shape names to run
# name batch heads heads_kv seqlen head_dim causal
# SHAPES=validation: 5 shapes measured after the model of the first 7 was written; SHAPES=validation2: 4 more,
# measured later; SHAPES=validation3: 6 more, measured after traffic compare's DRAM interval was written;
# SHAPES=validation4: 8 more, measured after its adverse capacity (l2_adverse_reuse_bytes) was fixed;
# SHAPES=calibration: the problem of tests/data/ncu_fa2_h100_calibration.csv.
if [ "${SHAPES:-}" = calibration ]; then
shapes=("calibration_d128_n4096 2 16 16 4096 128 0")
elif [ "${SHAPES:-}" = validation4 ]; then
# 8 shapes measured on 2026-11-26 after commit 6174f80 fixed l2_adverse_reuse_bytes (bench/results/
# l2_adverse_h100_2026-11-26): causal forwards at every head dim, GQA, lengths off the tile
shapes=(
  "causal_d128_n2048_b8 8 16 16 2048 128 1"
  "causal_d256_n4096 1 16 16 4096 256 1"
  "causal_d64_n16384 1 8 8 16384 64 1"
  "gqa_causal_d96_n8192 1 32 8 8192 96 1"
  "d128_n3000 2 16 16 3000 128 0"
  "causal_d128_n6000 1 16 16 6000 128 1"
  "gqa_d256_n2048 2 16 4 2048 256 0"
  "d64_n4096_b8 8 16 16 4096 64 0"
)
elif [ "${SHAPES:-}" = validation3 ]; then
# 6 shapes measured on 2026-11-26, never seen by the DRAM interval's derivation (bench/gpu/dram_interval_gpu.sh)
shapes=(
  "d128_n8192 1 16 16 8192 128 0"
  "causal_d64_n2048 4 16 16 2048 64 1"
  "gqa_causal_d128_n4096 2 32 8 4096 128 1"
  "d256_n4096 1 16 16 4096 256 0"
  "d64_n16384 1 8 8 16384 64 0"
  "causal_d96_n2048 4 16 16 2048 96 1"
)
elif [ "${SHAPES:-}" = validation2 ]; then
# 4 shapes measured on 2026-11-23, after the DRAM floor and the launch latency were added to the model
shapes=(
  "causal_d64_n8192 1 16 16 8192 64 1"
  "d128_n2048 4 16 16 2048 128 0"
  "gqa_d64_n2048 4 32 8 2048 64 0"
  "causal_d96_n4096 2 8 8 4096 96 1"
)
elif [ "${SHAPES:-}" = validation ]; then
shapes=(
  "causal_d128_n8192 1 16 16 8192 128 1"
  "gqa_causal_d64_n4096 2 16 4 4096 64 1"
  "d96_n2048 2 16 16 2048 96 0"
  "d128_n512 16 16 16 512 128 0"
  "causal_d256_n2000 2 8 8 2000 256 1"
)
else
shapes=(
  "causal_d128_n4096 2 16 16 4096 128 1"
  "d64_n1024 8 16 16 1024 64 0"
  "d256_n1024 4 8 8 1024 256 0"
  "d128_n16384_causal 1 8 8 16384 128 1"
  "gqa_d128_n2048 2 32 8 2048 128 0"
  "d128_n1000 4 16 16 1000 128 0"
  "d64_n3000_causal 2 16 16 3000 64 1"
)
fi
for s in "${shapes[@]}"; do
  set -- $s
  name=$1; shift
  [ -n "$only" ] && ! [[ $name =~ $only ]] && continue
  echo "== $name: $*"
  ncu --clock-control none -k regex:flash --csv --metrics "$metrics" \
      python3 bench/gpu/one_sdpa.py "$@" > "$out/${prefix}_$name.csv" 2> "$out/${prefix}_$name.err"
  echo "rc=$? $(grep -c 'void flash' "$out/${prefix}_$name.csv") rows"; tail -2 "$out/${prefix}_$name.err"
done
# One archive, so that every CSV comes back from the GPU machine.
tar -C "$out" -czf "$out/${prefix}_csvs.tar.gz" $(cd "$out" && ls ${prefix}_*.csv) && rm -f "$out"/${prefix}_*.csv "$out"/${prefix}_*.err

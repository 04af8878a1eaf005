#!/usr/bin/env bash
# On the GPU machine: our CUDA kernel versions (flashsim-gpu bench) and PyTorch's SDPA backends (sdpa_bench.py)
# on the same grid in the same run, then one table with each of ours beside the SDPA flash backend and the ratio:
#   bash bench/gpu/bench.sh [BUNDLE] [OUT]     (BUNDLE: bench/gpu/bundle.sh's folder, default .gpu-bundle)
# GRID: extra flags for both (e.g. "--seqlens 4096 --head-dims 128 --batch 2 --heads 16"); TAG: a suffix of the
# output files.
set -u
source "$(dirname "$0")/bundle_env.sh" "$@"
nvidia-smi -L > "$out/gpu.txt"
"$bundle/flashsim-gpu" bench --csv ${KERNELS:+--kernel $KERNELS} ${GRID:-} > "$out/bench_ours${TAG:-}.csv"
echo "flashsim-gpu bench: exit $?"
PYTHONUNBUFFERED=1 python3 bench/gpu/sdpa_bench.py ${GRID:-} > "$out/bench_sdpa${TAG:-}.csv"
echo "sdpa_bench.py: exit $?"
python3 bench/gpu/bench_table.py "$out/bench_ours${TAG:-}.csv" "$out/bench_sdpa${TAG:-}.csv" | tee "$out/bench_table${TAG:-}.txt"

#!/usr/bin/env bash
# The Hopper rates of the per-CTA model of warp-specialized kernels (wgmma_probe.cu says which; calibration ids
# h100.wgmma_rates, h100.tma_rates and h100.barrier_cycles). On the GPU machine, from the repository root:
#   bash bench/gpu/probes/wgmma_probe.sh OUT [CUTLASS_INCLUDE_TARBALL | INCLUDE_DIR]
# The CUTLASS/CuTe headers: a tarball holding include/ (default .fa3-carry/cutlass_include.tar.xz) or the include
# directory itself. COMPILE_ONLY=1 compiles without running (no GPU needed).
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=$1
src=${2:-.fa3-carry/cutlass_include.tar.xz}
mkdir -p "$out"
if [ -d "$src" ]; then
  inc=$src
else
  tmp=$(mktemp -d)
  tar -C "$tmp" -xJf "$src"
  inc=$tmp/include
fi
nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -DNDEBUG -I "$inc" \
  bench/gpu/probes/wgmma_probe.cu -o "$out/wgmma_probe"
[ "${COMPILE_ONLY:-0}" = 1 ] && exit 0
nvidia-smi -L | tee "$out/gpu.txt"
"$out/wgmma_probe" | tee "$out/wgmma_probe.txt"

#!/usr/bin/env bash
# Packs what the GPU machine needs to run flashsim and flashsim-gpu as built here: the two binaries and the
# shared libraries of this machine's Debian packages they load (OpenBLAS, OpenMP, fmt, hwloc, OpenSSL...),
# not the C library and not CUDA's (the GPU machine has its own toolkit and driver):
#   bash bench/gpu/bundle.sh [BUILD] [OUT]      (defaults: build/default, .gpu-bundle)
# Then carry OUT with the device tool and run there with LD_LIBRARY_PATH=OUT/lib (bench/gpu/check.sh does).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/default}
out=${2:-.gpu-bundle}
rm -rf "$out"
mkdir -p "$out/lib"
cp "$build/flashsim" "$build/flashsim-gpu" "$out/"
for bin in "$out/flashsim" "$out/flashsim-gpu"; do
  ldd "$bin" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
    case "$name" in
      libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux* | libcu* | libnv*) ;;
      *) cp -Lu "$path" "$out/lib/" ;;
    esac
  done
done
strip "$out/flashsim" "$out/flashsim-gpu"
# The device tool carries at most 64 MiB with the working tree: the libraries travel compressed (OpenBLAS alone
# is 36 MB), and so does flashsim-gpu (44 MB of kernels for sm_80 and sm_90 with fa2-v1's autotune instances,
# 12 MB compressed), unpacked on the GPU machine by bundle_env.sh, which check.sh, bench.sh and traffic.sh source.
tar -C "$out" -cJf "$out/lib.tar.xz" lib && rm -rf "$out/lib"
xz -T0 "$out/flashsim-gpu"
du -sh "$out"

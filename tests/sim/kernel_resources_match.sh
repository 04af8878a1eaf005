#!/usr/bin/env bash
# The built-in tables of fa2-v1's compiled resources (families/fa2/resources/fa2_v1_<arch>.csv) must be what this
# build's flashsim-gpu holds, so that sim tune ranks the kernels gpu/ launches:
#   kernel_resources_match.sh FLASHSIM_GPU RESOURCES_DIR SASS_PY   (gpu/tools/sass.py)
# Skipped (exit 77) without cuobjdump or where nvcc is not the version the tables were made with (another ptxas
# allocates other registers: regenerate the tables there, see families/fa2/resources/README.md).
set -u
bin=$1 dir=$2 script=$3
command -v cuobjdump > /dev/null || { echo "skipped: no cuobjdump"; exit 77; }
want=$(cat "$dir/NVCC_VERSION")
have=$(nvcc --version 2> /dev/null | sed -n 's/.*release [0-9.]*, V\([0-9.]*\).*/\1/p')
[ "$have" = "$want" ] || { echo "skipped: nvcc $have, the tables were made by $want"; exit 77; }
status=0
for arch in sm_80 sm_90; do
  if ! python3 "$script" resources "$bin" --arch $arch | diff -q - "$dir/fa2_v1_$arch.csv" > /dev/null; then
    echo "fa2_v1_$arch.csv differs from $bin's kernels: regenerate it (tiling_sim/resources/README.md)"
    status=1
  fi
done
[ $status = 0 ] && echo "fa2_v1_sm_80.csv and fa2_v1_sm_90.csv match the build"
exit $status

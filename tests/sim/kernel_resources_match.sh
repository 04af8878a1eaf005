#!/usr/bin/env bash
# The built-in tables of fa2-v1's compiled resources (families/fa2/resources/fa2_v1_<arch>.csv) must be what this
# build's flashsim-gpu holds, so that sim tune ranks the kernels gpu/ launches:
#   kernel_resources_match.sh FLASHSIM_GPU RESOURCES_DIR SASS_PY [CUDA_ARCHITECTURES [INSTANCES]]
# (SASS_PY: gpu/tools/sass.py; CUDA_ARCHITECTURES: the build's CMAKE_CUDA_ARCHITECTURES, default "80;90": the
# tables of the architectures it compiled are compared; INSTANCES: its FLASHSIM_GPU_INSTANCES, default all: with
# ci, each row the build has must be its table's, the build having only the CI subset of the rows).
# Skipped (exit 77) without cuobjdump or where nvcc is not the version the tables were made with (another ptxas
# allocates other registers: regenerate the tables there, see families/fa2/resources/README.md).
set -u
bin=$1 dir=$2 script=$3 cuda_archs=${4:-80;90} instances=${5:-all}
command -v cuobjdump > /dev/null || { echo "skipped: no cuobjdump"; exit 77; }
want=$(cat "$dir/NVCC_VERSION")
have=$(nvcc --version 2> /dev/null | sed -n 's/.*release [0-9.]*, V\([0-9.]*\).*/\1/p')
[ "$have" = "$want" ] || { echo "skipped: nvcc $have, the tables were made by $want"; exit 77; }
archs=()
for a in ${cuda_archs//;/ }; do
  a=sm_${a%%-*}
  [ -f "$dir/fa2_v1_$a.csv" ] && archs+=("$a")
done
[ ${#archs[@]} -gt 0 ] || { echo "skipped: no table for the build's architectures ($cuda_archs)"; exit 77; }
status=0
for arch in "${archs[@]}"; do
  table=$dir/fa2_v1_$arch.csv
  if [ "$instances" = ci ]; then
    # Every row of the build's (the header included) is a row of the table.
    rows=$(python3 "$script" resources "$bin" --arch "$arch")
    n=$(($(grep -c . <<< "$rows") - 1))
    missing=$(grep -vxF -f "$table" <<< "$rows")
    if [ "$n" -lt 1 ]; then
      echo "no fa2-v1 kernel for $arch in $bin"
      status=1
    elif [ -n "$missing" ]; then
      echo "fa2_v1_$arch.csv lacks these rows of $bin's kernels: regenerate it (families/fa2/resources/README.md)"
      echo "$missing"
      status=1
    else
      echo "fa2_v1_$arch.csv holds the $n rows of this build's kernels (FLASHSIM_GPU_INSTANCES=ci)"
    fi
  elif ! python3 "$script" resources "$bin" --arch "$arch" | diff -q - "$table" > /dev/null; then
    echo "fa2_v1_$arch.csv differs from $bin's kernels: regenerate it (families/fa2/resources/README.md)"
    status=1
  fi
done
[ $status = 0 ] && echo "${archs[*]}: the tables match the build"
exit $status

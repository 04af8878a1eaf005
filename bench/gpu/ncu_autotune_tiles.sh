#!/usr/bin/env bash
# On the GPU machine: Nsight Compute's pipe and stall counters of every fa2-v1 forward instance on one problem
# per head dim and feature set, through `flashsim-gpu autotune` (which, unlike bench, runs bias problems):
#   bash bench/gpu/ncu_autotune_tiles.sh [BUNDLE] [OUT]     HEAD_DIMS="128" FEATURES="bias plain" SEQLEN=4096
# One CSV per (head dim, features), OUT/ncu_autotune_d<D>_<features>.csv: a row per kernel launch and metric,
# the launch's template arguments in its name (autotune with no warm-up and one timed launch: one launch a
# config). The metric list is ncu_tiles.sh's (bench/gpu/ncu_metrics.sh) plus global-load counters.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/bundle_env.sh" "$@"
source "$here/ncu_metrics.sh"
fg="$bundle/flashsim-gpu"
metrics="$ncu_tile_metrics,smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_ldgsts.sum,\
l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
for d in ${HEAD_DIMS:-128}; do
  for f in ${FEATURES:-bias plain}; do
    csv="$out/ncu_autotune_d${d}_${f}.csv"
    ncu --csv --metrics "$metrics" --kernel-name regex:flashsim_fa2_fwd_kernel \
      "$fg" autotune --pass fwd --head-dims "$d" --dtypes "${DTYPE:-bf16}" --seqlens "${SEQLEN:-4096}" \
      --features "$f" --warmup 0 --repeats 1 > "$csv" 2> "$out/ncu_autotune_d${d}_${f}.log"
    echo "d$d $f: exit $?, $(grep -c '"gpu__time_duration.sum"' "$csv") launches"
  done
done

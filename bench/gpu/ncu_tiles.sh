#!/usr/bin/env bash
# On the GPU machine: Nsight Compute's pipe and stall counters of fa2-v1's forward at every instantiated tile of
# a head dim (stages 1), one problem, to see what the per-CTA model (tiling_sim's cta_model.h) must explain:
#   bash bench/gpu/ncu_tiles.sh [BUNDLE] [OUT]     HEAD_DIMS="64 128" SEQLEN=4096 DTYPE=bf16
# One CSV a tile, OUT/ncu_tiles_d<D>_Br<>_Bc<>_w<>.csv, from the first forward launch of `flashsim-gpu bench`
# (the first of its 3 + 3 launches: warm-up, then timed; a cold L2 as ncu flushes it).
set -u
source "$(dirname "$0")/bundle_env.sh" "$@"
fg="$bundle/flashsim-gpu"
metrics=gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum,\
smsp__inst_executed_pipe_tensor_op_hmma.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,\
l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,\
smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,\
smsp__warps_active.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active
for d in ${HEAD_DIMS:-64 128}; do
  "$fg" autotune --dry-run --head-dims "$d" --seqlens 128 --features plain --dtypes bf16 2> /dev/null |
    grep -E "fwd .* st1( |$)" | sed -E 's/.* Br([0-9]+) Bc([0-9]+) w([0-9]+) st1.*/\1 \2 \3/' |
    while read -r br bc w; do
      f="$out/ncu_tiles_d${d}_Br${br}_Bc${bc}_w${w}.csv"
      ncu --csv --metrics "$metrics" --kernel-name regex:flashsim_fa2_fwd --launch-count 1 \
        "$fg" bench --kernel fa2-v1 --head-dims "$d" --seqlens "${SEQLEN:-4096}" --causal no \
        --dtype "${DTYPE:-bf16}" --repeats 3 --block-q "$br" --block-k "$bc" --warps "$w" --stages 1 \
        > "$f" 2> /dev/null
      echo "d$d Br$br Bc$bc w$w: $(grep -c flashsim_fa2_fwd "$f") rows"
    done
done

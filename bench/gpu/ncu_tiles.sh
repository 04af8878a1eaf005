#!/usr/bin/env bash
# On the GPU machine: Nsight Compute's pipe and stall counters of fa2-v1's forward at every instantiated tile of
# a head dim (stages 1), one problem, to see what the per-CTA model (tiling_sim's cta_model.h) must explain:
#   bash bench/gpu/ncu_tiles.sh [BUNDLE] [OUT]     HEAD_DIMS="64 128" SEQLEN=4096 DTYPE=bf16
# One CSV a tile, OUT/ncu_tiles_d<D>_Br<>_Bc<>_w<>.csv, from the first forward launch of `flashsim-gpu bench`
# (the first of its 3 + 3 launches: warm-up, then timed; a cold L2 as ncu flushes it).
set -u
source "$(dirname "$0")/bundle_env.sh" "$@"
fg="$bundle/flashsim-gpu"
source "$(dirname "$0")/ncu_metrics.sh"
for d in ${HEAD_DIMS:-64 128}; do
  "$fg" autotune --dry-run --head-dims "$d" --seqlens 128 --features plain --dtypes bf16 2> /dev/null |
    grep -E "fwd .* st1( |$)" | sed -E 's/.* Br([0-9]+) Bc([0-9]+) w([0-9]+) st1.*/\1 \2 \3/' |
    while read -r br bc w; do
      f="$out/ncu_tiles_d${d}_Br${br}_Bc${bc}_w${w}.csv"
      ncu --csv --metrics "$ncu_tile_metrics" --kernel-name regex:flashsim_fa2_fwd --launch-count 1 \
        "$fg" bench --kernel fa2-v1 --head-dims "$d" --seqlens "${SEQLEN:-4096}" --causal no \
        --dtype "${DTYPE:-bf16}" --repeats 3 --block-q "$br" --block-k "$bc" --warps "$w" --stages 1 \
        > "$f" 2> /dev/null
      echo "d$d Br$br Bc$bc w$w: $(grep -c flashsim_fa2_fwd "$f") rows"
    done
done

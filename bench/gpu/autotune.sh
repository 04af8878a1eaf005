#!/usr/bin/env bash
# On the GPU machine: every tile config of fa2-v1 (core/include/flashsim/fa2_instances.h) checked against goldens,
# then all of them timed on a grid of problems by `flashsim-gpu autotune` (forward and backward configs apart):
#   bash bench/gpu/autotune.sh [BUNDLE] [OUT]      (BUNDLE: bench/gpu/bundle.sh's folder, default .gpu-bundle)
# Written to OUT (default $OUT): instances.txt, check_instances.txt (a line an instance) and
# check_instances_full.txt, autotune.csv and autotune_progress.txt (the estimate, then a line a config).
# CHECK=0: no correctness pass. AUTOTUNE=0: no timing. GRID=small: d64 and d128, bf16, seqlen 4096, plain and
# causal+bias; GRID="...": those autotune flags instead of the default grid (4 head dims x bf16, fp16 x seqlen
# 1K, 4K, 16K x plain, causal, bias, causal+bias). ARGS: more autotune flags ("--repeats 20"). BUDGET_S: seconds
# the whole script may take (default 530, under the device tool's 10 minutes a command): autotune is stopped
# there, its CSV keeping the rows done.
# The correctness pass: suite fa2-instances (bench/gpu/suites/fa2_instances.json, generated here: every feature at
# d64..d256, small) at every instance: the forward at each stages value with the tile flags on the forward only
# (--tiles-for fwd), the backward with them on the backward only (--tiles-for bwd: the forward's o and lse from
# the launch tile), each on the cases of its head dim. The instance list is the binary's own (autotune --dry-run).
set -u
source "$(dirname "$0")/bundle_env.sh" "$@"
fg="$bundle/flashsim-gpu"
t0=$SECONDS
nvidia-smi -L | tee "$out/gpu.txt"
if [ "${CHECK:-1}" = 1 ]; then
  golden=/tmp/golden-fa2-instances
  "$bundle/flashsim" golden generate --suite bench/gpu/suites/fa2_instances.json --out $golden --force > /dev/null
  "$fg" autotune --dry-run --seqlens 128 --features plain --dtypes bf16 2> /dev/null > "$out/instances.txt"
  : > "$out/check_instances.txt"
  : > "$out/check_instances_full.txt"
  runs=0
  bad=0
  re='(fwd|bwd) d([0-9]+) .* Br([0-9]+) Bc([0-9]+) w([0-9]+)( st([0-9]+))?'
  while read -r line; do
    [[ $line =~ $re ]] || continue
    pass=${BASH_REMATCH[1]} d=${BASH_REMATCH[2]} br=${BASH_REMATCH[3]} bc=${BASH_REMATCH[4]} w=${BASH_REMATCH[5]}
    st=${BASH_REMATCH[7]}
    if [ "$pass" = fwd ]; then
      tiles=(--tiles-for fwd --block-q "$br" --block-k "$bc" --warps "$w" --stages "$st")
    else
      tiles=(--tiles-for bwd --bwd-block-q "$br" --bwd-block-k "$bc" --warps "$w")
    fi
    "$fg" check --golden $golden --kernel fa2-v1 --case "*-d$d-*" --case "*-d$d" "${tiles[@]}" --quiet \
      > /tmp/check_one.txt 2>&1
    rc=$?
    runs=$((runs + 1))
    # exit 0 with every case run (none skipped; the backward's none forward only) is a pass
    grep -q "cases run (0 forward only), 0 skipped" /tmp/check_one.txt && [ $rc = 0 ] || bad=$((bad + 1))
    runs_line=$(grep -E '^== ' /tmp/check_one.txt | sed 's/^== //')
    verdict=$(grep -E 'cases passed' /tmp/check_one.txt)
    echo "$pass d$d Br$br Bc$bc w$w${st:+ st$st}: exit $rc; $runs_line; $verdict" | tee -a "$out/check_instances.txt"
    { echo "==== $pass d$d ${tiles[*]}"; cat /tmp/check_one.txt; } >> "$out/check_instances_full.txt"
  done < "$out/instances.txt"
  echo "instances checked: $runs, not clean: $bad ($((SECONDS - t0)) s so far)"
fi
if [ "${AUTOTUNE:-1}" = 1 ]; then
  case "${GRID:-}" in
    "") grid="" ;;
    small) grid="--head-dims 64,128 --dtypes bf16 --seqlens 4096 --features plain,causal+bias" ;;
    *) grid="$GRID" ;;
  esac
  left=$((${BUDGET_S:-530} - (SECONDS - t0)))
  # shellcheck disable=SC2086  # grid and ARGS are lists of flags
  timeout "$left" "$fg" autotune $grid ${ARGS:-} --out "$out/autotune.csv" 2> "$out/autotune_progress.txt"
  echo "autotune: exit $? ($(($(wc -l < "$out/autotune.csv") - 1)) rows, limit ${left} s)"
  head -1 "$out/autotune_progress.txt"
  tail -2 "$out/autotune_progress.txt"
fi
echo "total: $((SECONDS - t0)) s"

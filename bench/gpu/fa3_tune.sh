#!/usr/bin/env bash
# On the GPU machine: what `flashsim sim tune --kernel fa3-fwd` is calibrated and checked against, in one run:
#   bash bench/gpu/fa3_tune.sh CUTLASS_INCLUDE_TARBALL OUT [AUTOTUNE_GRID]
# - run.py autotune --kernel fa3-v1 (the bundle's flashsim-gpu): every fa3-v1 instance through the goldens
#   (suites/fa2_instances.json, each tile with --tiles-for), then every instance timed by `flashsim-gpu autotune`
#   on the grid (default: bf16; d64, 96, 128, 256; 1K, 4K, 16K; plain and causal) -> OUT/autotune/;
#   each problem's instances timed in turn ROUNDS times (default 7; the median round: a card under its power cap
#   moves the clock by up to 7% between rounds, calibration fa3.tune_rounds_h200; ROUNDS=1: one after the other);
#   REPEAT=1 times the grid a second time (OUT/autotune_repeat/); SANITIZE=1 runs compute-sanitizer (memcheck,
#   racecheck, synccheck) over the instances' checks;
# - meanwhile bench/gpu/fa3_dev.cu is compiled (every instance), then run: `instances` (each forward instance
#   against an fp32 reference: causal with odd lengths, a window, a softcap, GQA, persistent) and `calib` (each
#   instance's tile costs, calibration fa3.step_costs_h100: `run.py derive fa3-steps OUT/dev`) -> OUT/dev/.
set -uo pipefail
cd "$(dirname "$0")/../.."
tarball=$1
out=$2
grid=${3:---dtypes bf16}
mkdir -p "$out/dev"
bin=$(mktemp -d)
start=$(date +%s)
(KEEP_BIN=$bin SDPA=0 MODE=build bash bench/gpu/fa3_dev.sh "$tarball" "$out/dev" > "$out/dev/build.txt" 2>&1) &
build=$!
python3 bench/gpu/run.py autotune --kernel fa3-v1 --grid "$grid" --rounds "${ROUNDS:-7}" --budget-s "${BUDGET_S:-330}" \
  --out "$out/autotune"
# REPEAT=1: the timings again, same card, same binary (how far two runs agree: the ceiling of any model's ranking)
[ "${REPEAT:-0}" = 1 ] &&
  python3 bench/gpu/run.py autotune --kernel fa3-v1 --no-check --grid "$grid" --rounds "${ROUNDS:-7}" \
    --out "$out/autotune_repeat"
wait $build
echo "fa3_dev built after $(($(date +%s) - start)) s"
if [ ! -x "$bin/fa3_dev" ]; then tail -20 "$out/dev/build.txt"; exit 1; fi
grep -h "spill" "$out"/dev/ptxas_*.txt | grep -v " 0 bytes spill stores, 0 bytes spill loads" | sort | uniq -c
timeout 120 "$bin/fa3_dev" instances > "$out/dev/instances.txt"
rc=$?
echo "fa3_dev instances: exit $rc, $(grep -c ' ok$' "$out/dev/instances.txt") ok," \
  "$(grep -c 'FAIL' "$out/dev/instances.txt") failed"
timeout 180 "$bin/fa3_dev" calib > "$out/dev/calib_events.txt"
echo "fa3_dev calib: exit $?, $(grep -c '^time' "$out/dev/calib_events.txt") timings; total $(($(date +%s) - start)) s"
# SANITIZE=1: compute-sanitizer's memcheck, racecheck and synccheck over the instances' checks.
if [ "${SANITIZE:-0}" = 1 ]; then
  for tool in memcheck racecheck synccheck; do
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 "$bin/fa3_dev" instances \
      > "$out/dev/sanitizer_$tool.txt" 2>&1
    rc=$?
    echo "compute-sanitizer $tool: exit $rc ($(grep -c ' ok$' "$out/dev/sanitizer_$tool.txt") checks ok;" \
      "$(tail -1 "$out/dev/sanitizer_$tool.txt"))"
  done
fi

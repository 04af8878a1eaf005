#!/usr/bin/env bash
# On the GPU machine: fa3-v1's dQ convert kernel after it stores through shared memory, 16 bytes a thread (before:
# 4-byte stores of register pairs, half a sector a quad; on an H200 its DRAM reads ran 1.7 .. 2% over `traffic
# compare`'s range at b1 h264 n512, the L2 reading half-written sectors back: calibration h200.l2's results).
#   bash bench/gpu/fa3_convert_ncu.sh OUT [BUNDLE]
# - flashsim-gpu check of fa3-v1 on the smoke and default suites (every backward case it runs) -> OUT/check_*.txt;
#   compute-sanitizer memcheck, racecheck, synccheck on the default suite's small cases -> OUT/sanitizer_*.txt;
# - ncu (the traffic set) of one backward call's three kernels after bench's warm-up -> OUT/ncu_bwd_NAME.csv, on
#   b1 h264 n512 at d64, d96, d128 (the flagged problems) and b2 h16/4 n3001 d128 causal (a partial query block).
# Then here: flashsim traffic compare --hw H200 --ncu OUT/ncu_bwd_NAME.csv (the problem comes from the report).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: fa3_convert_ncu.sh OUT [BUNDLE]}
bundle=${2:-.gpu-bundle}
mkdir -p "$out"
eval "$(python3 bench/gpu/bundle.py env "$bundle")"
fg=$bundle/flashsim-gpu
nvidia-smi -L | tee "$out/gpu.txt"
for suite in smoke default; do
  if [ "$suite" = smoke ]; then golden=golden/data/smoke; else
    golden=/tmp/golden-default
    "$bundle/flashsim" golden generate --suite default --out "$golden" --force > /dev/null 2>&1
  fi
  timeout 300 "$fg" check --golden "$golden" --kernel fa3-v1 > "$out/check_$suite.txt" 2>&1
  echo "check $suite: exit $?: $(grep -m1 'cases,' "$out/check_$suite.txt")"
done
# compute-sanitizer's memcheck, racecheck and synccheck on the default suite's cases under 4 MiB
small=$(python3 -c "import json, os; g = '/tmp/golden-default'; m = json.load(open(g + '/manifest.json'))
print(' '.join('--case ' + c['name'] for c in m['cases'] if os.path.getsize(os.path.join(g, c['file'])) < 4 << 20))")
for tool in memcheck racecheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 "$fg" check --golden /tmp/golden-default --quiet \
    --kernel fa3-v1 $small > "$out/sanitizer_$tool.txt" 2>&1
  echo "compute-sanitizer $tool: exit $?: $(grep -m1 'cases,' "$out/sanitizer_$tool.txt")"
done
metrics=$(python3 bench/gpu/ncu.py metrics traffic)
for shape in 1:264:264:512:64:no 1:264:264:512:96:no 1:264:264:512:128:no 2:16:4:3001:128:yes; do
  IFS=: read -r b h hkv n d causal <<< "$shape"
  name=b${b}_h${h}_${hkv}_n${n}_d${d}_causal_${causal}
  # bench runs the forward and the backward each launch; the backward's three kernels of the last call
  timeout 120 ncu --clock-control none --csv --metrics "$metrics" --kernel-name regex:flashsim_fa3_bwd \
    --launch-skip 6 --launch-count 3 "$fg" bench --kernel fa3-v1 --batch "$b" --heads "$h" --heads-kv "$hkv" \
    --seqlens "$n" --head-dims "$d" --causal "$causal" --repeats 3 > "$out/ncu_bwd_$name.csv" \
    2> "$out/ncu_bwd_$name.err"
  echo "ncu $name: rc $?, $(grep -c flashsim_fa3_bwd "$out/ncu_bwd_$name.csv") rows"
done

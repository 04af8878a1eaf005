#!/usr/bin/env bash
# Profiles one SDPA problem (batch 2, 8 heads, seqlen 1000, head dim 64, causal) in each CSV layout ncu writes,
# for the parser's tests: the details page (the default), the details page with --print-units base, the raw page
# (--page raw: one row per kernel, a row of units under the header), and the DRAM counters alone (one pass).
# Run on the GPU machine from the repository root: bash bench/gpu/ncu_csv_layouts.sh OUTDIR
set -u
out=${1:-${OUT:-.}}
source "$(dirname "$0")/ncu_metrics.sh"
metrics=$ncu_metrics
args=(2 8 8 1000 64 1)
ncu --version | tail -1
run() {  # NAME NCU-FLAGS...
  local name=$1
  shift
  ncu --clock-control none -k regex:flash --csv "$@" python3 bench/gpu/one_sdpa.py "${args[@]}" \
    > "$out/$name.csv" 2> "$out/$name.err"
  echo "$name: rc=$? $(grep -c 'flash' "$out/$name.csv") lines naming flash kernels"
  tail -1 "$out/$name.err"
}
run ncu_d64_n1000_causal --metrics "$metrics"
run ncu_base_units_d64_n1000_causal --print-units base --metrics "$metrics"
run ncu_raw_d64_n1000_causal --page raw --metrics "$metrics"
run ncu_dram_d64_n1000_causal --metrics dram__bytes_read.sum,dram__bytes_write.sum
rm -f "$out"/*.err

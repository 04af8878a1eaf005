#!/usr/bin/env bash
# How reproducible are ncu's DRAM byte counts of SDPA's FA2 kernels? Profiles each shape below REPEATS times with
# only dram__bytes_read/write collected (one replay pass), into $1/dram_<shape>_<i>.csv, then archives them.
set -u
out=${1:-${OUT:-.}}
repeats=${2:-2}
shapes=(
  "d64_n1024 8 16 16 1024 64 0"
  "d256_n1024 4 8 8 1024 256 0"
  "d96_n2048 2 16 16 2048 96 0"
  "d64_n3000_causal 2 16 16 3000 64 1"
  "gqa_d128_n2048 2 32 8 2048 128 0"
  "causal_d128_n4096 2 16 16 4096 128 1"
)
for s in "${shapes[@]}"; do
  set -- $s
  name=$1; shift
  for i in $(seq 1 "$repeats"); do
    ncu --clock-control none -k regex:flash --csv --metrics dram__bytes_read.sum,dram__bytes_write.sum \
      python3 bench/gpu/one_sdpa.py "$@" > "$out/dram_${name}_$i.csv" 2> "$out/dram_${name}_$i.err"
    echo "$name $i rc=$?"
  done
done
tar -C "$out" -czf "$out/dram_repeat.tar.gz" $(cd "$out" && ls dram_*.csv) && rm -f "$out"/dram_*.csv "$out"/dram_*.err

#!/usr/bin/env bash
# On the GPU machine: installs the bundle of python_bundle.sh beside the machine's PyTorch, runs python/tests (the torch tests that CI skips included), then the SDPA example with the plugin over
# the given suites (default: smoke). Logs and JUnit XML go to $OUT.
#   bash bench/gpu/python_check.sh [BUNDLE] [SUITE...]
set -euo pipefail
cd "$(dirname "$0")/../.."
bundle=${1:-.gpu-bundle-py}
shift || true
suites=("${@:-smoke}")
out=${OUT:-/tmp/flashsim-py}
mkdir -p "$out"
[ -d "$bundle/lib" ] || tar -C "$bundle" -xJf "$bundle/lib.tar.xz"
export LD_LIBRARY_PATH="$PWD/$bundle/lib:${LD_LIBRARY_PATH:-}"
# python3 there is itself a virtual environment (PyTorch's): the packages go to a folder on PYTHONPATH (a venv
# made from it would not see PyTorch); the plugin's entry point is found there too.
py=python3
site=/tmp/fs-site
$py -m pip install -q --no-index --no-deps --target "$site" --find-links "$bundle/wheels" flashsim ml_dtypes
$py -c "import pytest" 2>/dev/null || $py -m pip install -q --no-index --target "$site" --find-links "$bundle/wheels" pytest
export PYTHONPATH="$site:${PYTHONPATH:-}"
{
  echo "python: $($py --version 2>&1); torch: $($py -c 'import torch; print(torch.__version__, torch.version.cuda)')"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
} | tee "$out/environment.txt"
export FLASHSIM_CACHE=/tmp/fs-cache
$py -m pytest python/tests -q -rs -p no:cacheprovider --junitxml="$out/python_tests.xml" 2>&1 |
  tee "$out/python_tests.log" | tail -15 || true
for s in "${suites[@]}"; do
  start=$(date +%s)
  $py -m pytest python/examples/test_sdpa.py --flashsim-suite "$s" -q -rs -p no:cacheprovider \
    --junitxml="$out/sdpa_$s.xml" 2>&1 | tee "$out/sdpa_$s.log" | tail -25 || true
  echo "sdpa over $s: $(($(date +%s) - start)) s (generating the suite included)" | tee -a "$out/environment.txt"
done

#!/usr/bin/env bash
# On the GPU machine: installs the bundle of python_bundle.sh into a virtual environment that sees the machine's
# PyTorch, runs python/tests (the torch tests that CI skips included), then the SDPA example with the plugin over
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
python3 -m venv --system-site-packages /tmp/fs-venv
/tmp/fs-venv/bin/pip install -q --no-index --find-links "$bundle/wheels" flashsim ml_dtypes pytest
py=/tmp/fs-venv/bin/python
{
  echo "python: $($py --version 2>&1); torch: $($py -c 'import torch; print(torch.__version__, torch.version.cuda)')"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
} | tee "$out/environment.txt"
export FLASHSIM_CACHE=/tmp/fs-cache
$py -m pytest python/tests -q -rs --junitxml="$out/python_tests.xml" 2>&1 | tee "$out/python_tests.log" | tail -15
for s in "${suites[@]}"; do
  $py -m pytest python/examples/test_sdpa.py --flashsim-suite "$s" -q -rs -p no:cacheprovider \
    --junitxml="$out/sdpa_$s.xml" 2>&1 | tee "$out/sdpa_$s.log" | tail -25 || true
done

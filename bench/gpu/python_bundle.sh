#!/usr/bin/env bash
# Packs the Python package for the GPU machine, whose python3 (3.12, with PyTorch) has none of our Debian
# libraries: a cp312 wheel built here, the wheels it and the tests need (ml_dtypes, pytest), and the shared
# libraries the native module and the bundled command line load (as bundle.sh packs them):
#   bash bench/gpu/python_bundle.sh [OUT]        (default .gpu-bundle-py; needs python3.12 here)
# Then carry OUT and run bench/gpu/python_check.sh there.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.gpu-bundle-py}
py=${PYTHON312:-python3.12}
rm -rf "$out"
mkdir -p "$out/wheels" "$out/lib"
"$py" -m pip wheel -q --no-deps -w "$out/wheels" .
# ml_dtypes without NumPy: the GPU machine's own NumPy (PyTorch's) stays the one imported.
"$py" -m pip download -q --only-binary=:all: --no-deps -d "$out/wheels" ml_dtypes
"$py" -m pip download -q --only-binary=:all: -d "$out/wheels" pytest
whl=$(ls "$out"/wheels/flashsim-*.whl)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && python3 -m zipfile -e "$OLDPWD/$whl" .)
for bin in "$tmp"/flashsim/_native*.so "$tmp"/flashsim/bin/flashsim; do
  ldd "$bin" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
    case "$name" in
      libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux* | libcu* | libnv* | libpython*) ;;
      *) cp -Lu "$path" "$out/lib/" ;;
    esac
  done
done
tar -C "$out" -cJf "$out/lib.tar.xz" lib && rm -rf "$out/lib"
du -sh "$out"

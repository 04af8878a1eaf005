#!/usr/bin/env bash
# Installs every system package flashsim's build, tests and benchmarks need. Idempotent; quiet when all is there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache clang clang-format libclang-rt-14-dev lld
  libopenblas-openmp-dev libomp-dev libeigen3-dev libhwloc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libssl-dev python3 python3-pip python3-venv python3-dev python3-numpy python3-matplotlib
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python packages for the golden-file round-trip test, charts and the documentation test (markdown-it-py renders
# the Markdown: tests/repo/docs_test.py): numpy, safetensors, matplotlib and markdown-it-py for whichever python3
# is first on PATH (it may be a pyenv interpreter that does not see Debian's dist-packages).
if ! python3 -c "import numpy, safetensors, matplotlib, markdown_it" >/dev/null 2>&1; then
  echo "install-deps: installing numpy safetensors matplotlib markdown-it-py for $(command -v python3)"
  python3 -m pip install -q --disable-pip-version-check numpy safetensors matplotlib markdown-it-py 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --break-system-packages numpy safetensors matplotlib \
      markdown-it-py
fi

# The CUTLASS / CuTe headers gpu/fa3 compiles against (gpu/fa3/CMakeLists.txt finds them through
# cutlass_library), from the nvidia-cutlass wheel for the same python3: only its headers are used, so without
# the wheel's Python dependencies (cuda-python, scipy, ...).
if ! python3 -c "import cutlass_library" >/dev/null 2>&1; then
  echo "install-deps: installing nvidia-cutlass (CUTLASS / CuTe headers) for $(command -v python3)"
  python3 -m pip install -q --disable-pip-version-check --no-deps nvidia-cutlass==4.2.0.0 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --break-system-packages --no-deps nvidia-cutlass==4.2.0.0
fi

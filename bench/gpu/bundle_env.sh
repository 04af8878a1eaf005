# Sourced by check.sh, bench.sh and traffic.sh on the GPU machine with their arguments [BUNDLE] [OUT]: moves to
# the repository root, sets bundle (bundle.sh's folder, default .gpu-bundle) and out (default $OUT), unpacks
# the bundle's libraries and flashsim-gpu once and puts the libraries (and CUDA's) on the loader's path.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bundle=${1:-.gpu-bundle}
out=${2:-${OUT:-.}}
mkdir -p "$out"
[ -d "$bundle/lib" ] || tar -C "$bundle" -xJf "$bundle/lib.tar.xz"  # bundle.sh packs the libraries
[ -x "$bundle/flashsim-gpu" ] || { xz -dk "$bundle/flashsim-gpu.xz" && chmod +x "$bundle/flashsim-gpu"; }
export LD_LIBRARY_PATH="$PWD/$bundle/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"

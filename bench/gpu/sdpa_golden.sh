#!/usr/bin/env bash
# On the GPU machine: PyTorch SDPA (CUDA) as a candidate on the committed smoke suite and on a subset of the
# default suite copied to gpu_golden/default (the cases under 500 KB; the full suite is 360 MB). Writes the
# candidate folders as a tarball into $1; verify them here with `flashsim golden verify` (see
# bench/results/sdpa_golden_h100_*/README.md).
set -euo pipefail
out=${1:?usage: sdpa_golden.sh OUTDIR}
python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
python3 -c "import safetensors" 2>/dev/null || python3 -m pip install -q --no-index --find-links gpu_golden/wheels safetensors
python3 -c "import safetensors; print('safetensors', safetensors.__version__)"
work=$(mktemp -d)
for suite in smoke default; do
  golden=golden/data/smoke
  [ "$suite" = default ] && golden=gpu_golden/default
  python3 golden/examples/run_candidate.py --golden "$golden" --out "$work/sdpa-$suite" --kernel sdpa --no-verify
done
tar -C "$work" -czf "$out/sdpa_candidates.tar.gz" sdpa-smoke sdpa-default
ls -la "$out"

"""The stack frame (bytes a thread) of the SDPA FlashAttention-2 forward kernel an ncu report profiled, from
data/sdpa_flash_fwd_stack_sm90.txt (PyTorch 2.11.0+cu130's sm_90 build, cuobjdump -res-usage): what `flashsim
traffic compare --stack-bytes` takes. Only for reports of that build (the H200 runs of 2026-11-29).
    python3 bench/gpu/sdpa_stack.py REPORT...                   # each report's kernel and its stack frame
    python3 bench/gpu/sdpa_stack.py --from-cuobjdump RES_USAGE   # the table's rows from `cuobjdump -res-usage
                                                                # -arch sm_90 libtorch_cuda.so` (c++filt demangles)"""
import functools
import os
import re
import subprocess
import sys

import ncu

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sdpa_flash_fwd_stack_sm90.txt")
# ncu's name of an instantiation: flash_fwd_kernel<Flash_fwd_kernel_traits<D, BR, BC, WARPS, QREG, SHARE, DTYPE,
# Flash_kernel_traits<...>>, then the kernel's eight flags (dropout, causal, local, alibi, even_mn, even_k, softcap,
# return_softmax) as 0 / 1 (or true / false)
NAME = re.compile(r"flash_fwd_kernel<Flash_fwd_kernel_traits<(\d+), (\d+), (\d+), (\d+), (\w+), (\w+), "
                  r"(?:cutlass::)?(bfloat16_t|half_t), Flash_kernel_traits<[^>]*>\s*>, ((?:\w+, ){7}\w+)>")
DTYPES = {"bfloat16_t": "bf16", "half_t": "fp16"}


@functools.lru_cache(maxsize=None)
def table():
    """{(head_dim, block_q, block_k, warps, q_in_regs, share_q_k, dtype, the eight flags): stack bytes} (read
    once: callers do not change it)"""
    frames = {}
    with open(TABLE) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            w = line.split()
            frames[tuple(w[:15])] = int(w[15])
    return frames


def key(kernel_name):
    """The table's key of an ncu kernel name; None when it is not a flash_fwd_kernel instantiation."""
    m = NAME.search(kernel_name)
    if not m:
        return None
    bit = lambda x: "1" if x in ("1", "true") else "0"  # noqa: E731
    g = m.groups()
    return tuple(list(g[:4]) + [bit(g[4]), bit(g[5]), DTYPES[g[6]]] + [bit(x.strip()) for x in g[7].split(",")])


def stack_bytes(report, frames=None):
    """The largest stack frame of the report's flash forward kernels (its other kernels, SDPA's backward, are
    not in the table: given the forward's frame, traffic compare only widens their ranges); None when the report
    has no flash forward, one of them is not in the table (another build) or the report is unreadable (traffic
    compare then says why)."""
    frames = table() if frames is None else frames
    try:
        _, names = ncu.read_metrics(report)
    except (OSError, IndexError, ValueError):
        return None
    found = [frames.get(key(name)) for name in names.values() if "flash_fwd_kernel<" in name]
    return None if not found or None in found else max(found)


def from_cuobjdump(text):
    """The table's rows (key words, stack bytes, registers), sorted, of each flash_fwd_kernel instantiation (not
    split-KV) in cuobjdump -res-usage's output: a `Function NAME:` line, then its `REG:.. STACK:..` line."""
    lines = text.splitlines()
    found = [(lines[i].strip()[len("Function "):].rstrip(":"), lines[i + 1]) for i in range(len(lines) - 1)
             if lines[i].strip().startswith("Function ") and "flash_fwd_kernel" in lines[i]]
    names = subprocess.run(["c++filt"], input="\n".join(n for n, _ in found), capture_output=True, text=True,
                           check=True).stdout.splitlines()
    rows = set()
    for name, (_, usage) in zip(names, found):
        k = key(name)
        stack, regs = re.search(r"STACK:(\d+)", usage), re.search(r"REG:(\d+)", usage)
        if k is not None and not (stack and regs):
            raise ValueError(f"no REG:/STACK: line after {name[:80]} (not cuobjdump -res-usage output?)")
        if k is not None:
            rows.add(k + (int(stack.group(1)), int(regs.group(1))))
    return sorted(rows, key=lambda r: tuple(int(w) if isinstance(w, int) or w.isdigit() else w for w in r))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--from-cuobjdump":
        try:
            with open(argv[1]) as f:
                rows = from_cuobjdump(f.read())
        except (OSError, ValueError, subprocess.CalledProcessError) as e:
            print(f"sdpa_stack.py: {e}", file=sys.stderr)
            return 2
        for r in rows:
            print(" ".join(map(str, r)))
        return 0
    if not argv:
        print("usage: sdpa_stack.py REPORT... | --from-cuobjdump RES_USAGE", file=sys.stderr)
        return 2
    frames = table()
    for report in argv:
        try:
            _, names = ncu.read_metrics(report)
        except (OSError, IndexError, ValueError) as e:
            print(f"{report}: unreadable ({e})", file=sys.stderr)
            return 2
        for name in names.values():
            k = key(name)
            print(f"{os.path.basename(report)}: {name[:90]}: "
                  f"{'not in the table' if frames.get(k) is None else str(frames[k]) + ' bytes'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

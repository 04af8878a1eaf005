"""The fa3 family's held-out validation shapes (calibration fa3.step_costs_h100 is measured on others): drawn at
random with a recorded seed before any of them was timed, written to bench/gpu/data/fa3_heldout.txt, one shape a
line, `b h hkv sq sk d wl wr` (wl, wr: the window, -1 unbounded; 0 right with -1 left: causal). fa3_calib.sh times
each (forward by CUDA events with fa3-v1's own schedule, backward's main kernel by ncu) and `run.py derive
fa3-heldout` compares them with `flashsim sim predict`.
    python3 bench/gpu/fa3_heldout.py   # rewrites the list (same seed: the same shapes)"""
import os

import heldout

SEED = 2026112629  # the date and the issue
COUNT = 24
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "fa3_heldout.txt")


def draw(rng):
    d = rng.choice([64, 96, 128, 256])
    hq = rng.choice([8, 16, 32])
    ratio = rng.choice([1, 1, 2, 4, 8])
    hkv = max(1, hq // ratio)
    seq = rng.randint(300, 12000)
    sk = seq if rng.random() < 0.75 else rng.randint(300, 12000)
    mask = rng.choice(["none", "none", "causal", "causal", "window"])
    wl, wr = (-1, -1) if mask == "none" else (-1, 0) if mask == "causal" else (rng.randint(256, 2048), 0)
    # about 2^27 elements of Q at most: a few milliseconds a kernel
    b = max(1, min(16, (1 << 27) // (seq * hq * d)))
    b = rng.randint(1, b)
    return b, hq, hkv, seq, sk, d, wl, wr


def main():
    heldout.write(OUT, SEED, COUNT, draw, f"fa3 held-out shapes, seed {SEED} (bench/gpu/fa3_heldout.py): b h hkv sq sk d wl wr")


if __name__ == "__main__":
    main()

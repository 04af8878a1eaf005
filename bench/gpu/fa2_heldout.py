"""The FA2 held-out validation shapes (issue 31): problems the fa2 time and traffic models are never fitted
against, drawn at random with a recorded seed before any of them was measured, written to
bench/gpu/data/fa2_heldout.txt, one problem a line, `b h hkv n d causal` (square: SDPA's flash backend aligns a
causal mask top-left, flashsim bottom-right; they agree where the query and key lengths do). `run.py traffic
fa2-heldout` profiles each with ncu (fa2-v1's forward and backward, SDPA's flash forward and backward) and
`run.py derive fa2-heldout` compares them with `flashsim traffic compare`.
    python3 bench/gpu/fa2_heldout.py   # rewrites the list (same seed: the same problems)"""
import os

import heldout

SEED = 2026112731  # the date and the issue
COUNT = 24
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "fa2_heldout.txt")


def draw(rng):
    d, hq, hkv = heldout.head_dim_and_heads(rng)
    # half the lengths odd (not a multiple of any tile), half a multiple of 64
    n = rng.randint(300, 12000)
    n = n | 1 if rng.random() < 0.5 else max(64, n // 64 * 64)
    causal = int(rng.random() < 0.5)
    # about 2^27 elements of Q at most: a few milliseconds a kernel under ncu's replays
    b = rng.randint(1, max(1, min(16, (1 << 27) // (n * hq * d))))
    return b, hq, hkv, n, d, causal


def main():
    heldout.write(OUT, SEED, COUNT, draw, f"fa2 held-out problems, seed {SEED} (bench/gpu/fa2_heldout.py): b h hkv n d causal")


if __name__ == "__main__":
    main()

"""Held-out validation sets: problems drawn at random with a recorded seed before any is measured, written one a
line under a header naming the seed and the script (fa2_heldout.py, fa3_heldout.py)."""
import random


def head_dim_and_heads(rng):
    """(head dim, query heads, kv heads): d64 .. d256, 8 .. 32 heads, GQA ratios 1 (twice as likely), 2, 4, 8."""
    d = rng.choice([64, 96, 128, 256])
    hq = rng.choice([8, 12, 16, 32])
    ratio = rng.choice([1, 1, 2, 4, 8])
    return d, hq, max(1, hq // ratio)


def write(out, seed, count, draw, header):
    """Draws `count` problems with random.Random(seed) and `draw(rng)`, writes them to `out` under `# header` and
    prints the file."""
    rng = random.Random(seed)
    shapes = [draw(rng) for _ in range(count)]
    with open(out, "w") as f:
        f.write(f"# {header}\n")
        for s in shapes:
            f.write(" ".join(map(str, s)) + "\n")
    print(open(out).read(), end="")

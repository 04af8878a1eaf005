"""Held-out validation sets: problems drawn at random with a recorded seed before any is measured, written one a
line under a header naming the seed and the script (fa2_heldout.py, fa3_heldout.py)."""
import random


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

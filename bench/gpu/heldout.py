"""Held-out validation sets: problems drawn at random with a recorded seed before any is measured, written one a
line under a header naming the seed and the script (fa2_heldout.py, fa3_heldout.py)."""
import os
import random
import sys


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


def pick_set(argv, sets, data, default, script):
    """A leading `--set N` taken out of argv: (seed, list file) of set N, else of `default`; None (after one line
    on stderr) for a set not in `sets` (name -> (seed, file name under data))."""
    name = default
    if len(argv) > 2 and argv[1] == "--set":
        name = argv[2]
        del argv[1:3]
        if name not in sets:
            print(f"{script}: --set is one of {', '.join(sets)}", file=sys.stderr)
            return None
    return sets[name][0], os.path.join(data, sets[name][1])

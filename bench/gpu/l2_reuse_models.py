#!/usr/bin/env python3
"""Replacement models against the L2 probe's read-reuse curve (bench/results/l2_probe_h100_2026-11-22, launches
24-36: a buffer of B MiB read 3 times in 64 KB chunks by CTAs on other SMs). Each model is run on the same access
pattern and prints its miss per re-read next to the measured one. Models: one LRU of the whole 50 MiB; two
partitions of 25 MiB (each line homed in one, a copy kept in the reader's partition, as the H100's L2 keeps data
read across its two halves) with LRU or with random replacement. CTAs land on either half at random.

usage: l2_reuse_models.py
"""
import collections
import random

MIB = 1 << 20
CHUNK = 64 * 1024
# measured miss per re-read (table_run3_single_pass.txt, launches 24-36)
MEASURED = {8: 0, 16: 0, 20: 0, 24: 0, 28: .042, 32: .127, 36: .280, 40: .463, 44: .660, 48: .769, 56: .906,
            64: .966, 96: 1.0}


class Lru:
    def __init__(self, cap, rng):
        self.cap, self.entries, self.used = cap, collections.OrderedDict(), 0

    def has(self, key):
        if key in self.entries:
            self.entries.move_to_end(key)
            return True
        return False

    def put(self, key, size):
        self.entries[key] = size
        self.used += size
        while self.used > self.cap:
            self.used -= self.entries.popitem(last=False)[1]


class RandomReplacement:
    def __init__(self, cap, rng):
        self.cap, self.keys, self.index, self.used, self.rng = cap, [], {}, 0, rng

    def has(self, key):
        return key in self.index

    def put(self, key, size):
        self.index[key] = len(self.keys)
        self.keys.append(key)
        self.used += size
        while self.used > self.cap:  # equal sizes: evict one at random
            i = self.rng.randrange(len(self.keys))
            victim, last = self.keys[i], self.keys[-1]
            self.keys[i], self.index[last] = last, i
            self.keys.pop()
            del self.index[victim]
            self.used -= size


def miss_per_reread(buffer_bytes, cache, parts, seed=0):
    rng = random.Random(seed)
    halves = [cache(50 * MIB // parts, rng) for _ in range(parts)]
    chunks, dram = buffer_bytes // CHUNK, 0
    size = CHUNK // parts  # a chunk's lines split evenly between the homes
    for cta in range(3 * chunks):
        chunk, side = cta % chunks, rng.randrange(parts)
        for home in range(parts):
            key = (chunk, home)
            if halves[side].has(key):
                continue
            if home != side and halves[home].has(key):
                halves[side].put(key, size)  # a copy in the reader's half
                continue
            dram += size
            halves[home].put(key, size)
            if home != side:
                halves[side].put(key, size)
    return (dram / buffer_bytes - 1) / 2


def main():
    models = [("LRU, 50 MiB", Lru, 1), ("LRU, 2 x 25 MiB + copies", Lru, 2),
              ("random, 2 x 25 MiB + copies", RandomReplacement, 2)]
    print(f"{'buffer MiB':>10} {'measured':>9} " + " ".join(f"{name:>28}" for name, _, _ in models))
    for mib, measured in MEASURED.items():
        row = [miss_per_reread(mib * MIB, cache, parts) for _, cache, parts in models]
        print(f"{mib:>10} {measured:>9.3f} " + " ".join(f"{v:>28.3f}" for v in row))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Charts of the tiling simulator's predictions, from `flashsim sim predict --json`.

    python3 bench/sim_charts.py [--flashsim build/default/flashsim] [--out bench/results/sim_charts]

Writes three PNGs:
  traffic_br_bc.png      forward L2->SM load bytes and DRAM bytes over Br x Bc (b1 h16 n4096 d128 bf16, H100)
  traffic_smem.png       the least L2->SM traffic of any tiling that fits in M bytes of shared memory, against
                         the N^2 d^2 / M lower bound of the FlashAttention paper (Theorem 2 / Proposition 3)
  traffic_algorithms.png DRAM bytes of the four forward algorithms (naive, three-pass, two-pass online softmax,
                         FA2) over seqlen, and naive vs FA2 forward + backward
"""
import argparse
import json
import os
import subprocess

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def predict(flashsim, *args):
    # Exit status 2 with "fits": false means "does not fit in this GPU's shared memory"; the JSON still has the
    # counts.
    r = subprocess.run([flashsim, "sim", "predict", "--json", *map(str, args)], capture_output=True, text=True)
    if r.returncode not in (0, 2) or not r.stdout.strip():
        raise RuntimeError(r.stderr)
    return json.loads(r.stdout)


def chart_br_bc(flashsim, out):
    blocks = [16, 32, 64, 128, 192, 256]
    load = np.zeros((len(blocks), len(blocks)))
    dram = np.zeros_like(load)
    fits = np.zeros_like(load, dtype=bool)
    for i, br in enumerate(blocks):
        for j, bc in enumerate(blocks):
            k = predict(flashsim, "--batch", 1, "--heads", 16, "--seqlen", 4096, "--head-dim", 128, "--dtype",
                        "bf16", "--pass", "fwd", "--block-q", br, "--block-k", bc)["kernels"][0]
            load[i, j] = k["load_bytes"] / 2**30
            dram[i, j] = (k["dram_read_bytes"] + k["dram_write_bytes"]) / 2**20
            fits[i, j] = k["fits"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.6))
    for ax, data, title, unit in ((axes[0], load, "L2 -> SM load bytes", "GiB"),
                                  (axes[1], dram, "DRAM read + write bytes", "MiB")):
        cmap = matplotlib.colormaps["viridis"].copy()
        cmap.set_bad("0.85")  # does not fit: grey
        shown = np.ma.masked_where(~fits, data)
        im = ax.imshow(shown, origin="lower", cmap=cmap)
        ax.set_xticks(range(len(blocks)), blocks)
        ax.set_yticks(range(len(blocks)), blocks)
        ax.set_xlabel("Bc (key rows per tile)")
        ax.set_ylabel("Br (query rows per tile)")
        ax.set_title(f"{title} ({unit})")
        for i in range(len(blocks)):
            for j in range(len(blocks)):
                label = f"{data[i, j]:.1f}" if fits[i, j] else "no fit"
                mid = (shown.min() + shown.max()) / 2
                ax.text(j, i, label, ha="center", va="center", fontsize=8,
                        color="white" if fits[i, j] and data[i, j] < mid else "black")
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle("FA2 forward, batch 1, 16 heads, seqlen 4096, head dim 128, bf16, H100-SXM5-80GB "
                 "(4 warps, 1 stage); grey: does not fit (shared memory or 255 registers per thread)")
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(os.path.join(out, "traffic_br_bc.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


def chart_smem(flashsim, out):
    n, d, e, heads = 4096, 128, 2, 16
    blocks = [16, 32, 64, 128, 192, 256, 384, 512]
    points = []
    for br in blocks:
        for bc in blocks:
            k = predict(flashsim, "--batch", 1, "--heads", heads, "--seqlen", n, "--head-dim", d, "--dtype",
                        "bf16", "--pass", "fwd", "--block-q", br, "--block-k", bc)["kernels"][0]
            points.append((k["shared_memory_bytes"], k["load_bytes"], br, bc))
    ms = sorted({p[0] for p in points})
    best = [min(p[1] for p in points if p[0] <= m) for m in ms]
    mgrid = np.geomspace(min(ms), max(ms), 100)
    # N^2 d^2 / M elements per head (M in elements), in bytes: N^2 d^2 e^2 / M_bytes, times the heads.
    bound = heads * n**2 * d**2 * e**2 / mgrid
    fig, ax = plt.subplots(figsize=(8, 5.5))
    ax.scatter([p[0] / 1024 for p in points], [p[1] / 2**30 for p in points], s=12, color="0.7",
               label="every Br x Bc tiling")
    ax.step([m / 1024 for m in ms], [b / 2**30 for b in best], where="post", color="C0", lw=2,
            label="least traffic of a tiling that fits in M")
    ax.plot(mgrid / 1024, bound / 2**30, "--", color="C3", lw=2, label=r"$N^2 d^2 / M$ (heads x, bytes)")
    ax.axvline(227, color="C2", ls=":", label="H100 shared memory per block (227 KiB)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("shared memory per CTA M (KiB)")
    ax.set_ylabel("L2 -> SM bytes of the forward (GiB)")
    ax.set_title(f"FA2 forward traffic vs shared memory: 16 heads, N = {n}, d = {d}, bf16")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "traffic_smem.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


def chart_algorithms(flashsim, out):
    seqlens = [256, 512, 1024, 2048, 4096, 8192, 16384]
    algos = [("naive", "standard (naive: S, P materialized)", "o-"), ("three-pass", "three-pass softmax", "s-"),
             ("two-pass", "two-pass online softmax", "^--"), ("fa2", "FlashAttention-2 (tiled)", "x:")]
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
    gib = 2**30
    for algo, label, style in algos:
        load, fwd, both = [], [], []
        for n in seqlens:
            ks = predict(flashsim, "--batch", 1, "--heads", 16, "--seqlen", n, "--head-dim", 64, "--dtype", "fp16",
                         "--hw", "A100-SXM4-80GB", "--algorithm", algo)["kernels"]
            f = [k for k in ks if "bwd" not in k["kernel"]]
            load.append(sum(k["load_bytes"] + k["store_bytes"] for k in f) / gib)
            fwd.append(sum(k["dram_read_bytes"] + k["dram_write_bytes"] for k in f) / gib)
            both.append(sum(k["dram_read_bytes"] + k["dram_write_bytes"] for k in ks) / gib)
        axes[0].plot(seqlens, load, style, label=label)
        axes[1].plot(seqlens, fwd, style, label=label)
        if algo in ("naive", "fa2"):
            axes[2].plot(seqlens, both, style, label=label + " + its backward" if algo == "naive" else label)
    titles = ("forward, L2 <-> SM bytes (loads + stores)", "forward, DRAM read + write",
              "forward + backward, DRAM read + write")
    for ax, title in zip(axes, titles):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("seqlen")
        ax.set_ylabel("GiB")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[1].text(0.98, 0.02, "the three tiled forwards coincide:\ntheir K re-reads hit in L2", fontsize=8,
                 ha="right", va="bottom", transform=axes[1].transAxes)
    fig.suptitle("The four algorithms: batch 1, 16 heads, head dim 64, fp16, A100-SXM4-80GB profile (analytic)")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(os.path.join(out, "traffic_algorithms.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flashsim", default="build/default/flashsim")
    ap.add_argument("--out", default="bench/results/sim_charts")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    chart_br_bc(a.flashsim, a.out)
    chart_smem(a.flashsim, a.out)
    chart_algorithms(a.flashsim, a.out)
    print(f"wrote {a.out}/traffic_br_bc.png, traffic_smem.png, traffic_algorithms.png")


if __name__ == "__main__":
    main()

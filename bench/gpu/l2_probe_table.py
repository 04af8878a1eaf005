#!/usr/bin/env python3
"""Prints one line per L2 probe launch: what it did (from the launch list l2_probe.sh wrote on stderr) and what
ncu measured (DRAM bytes read and written, time), plus the derived figure each probe exists for.

usage: l2_probe_table.py PROBE.csv LAUNCHES.txt
"""
import sys

from ncu_csv import read_metrics


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    metrics, _ = read_metrics(sys.argv[1])
    mib = 2**20
    for line in open(sys.argv[2]):
        if not line.startswith("launch"):
            continue
        f = line.split()
        launch, kind = int(f[1]), f[2]
        if kind in ("fa_mimic", "causal_mimic"):
            variant, f = f[3], f[:3] + f[4:]
        args = dict(zip(f[3::2], (int(x) for x in f[4::2])))
        m = metrics[launch]
        rd, wr, t = m["dram__bytes_read.sum"], m["dram__bytes_write.sum"], m.get("gpu__time_duration.sum", 0)
        if kind == "stream_rw":
            what = (f"footprint {args['footprint_bytes'] / mib:5.0f} MiB, written {args['write_bytes'] / mib:5.1f} MiB"
                    f" -> still dirty at end {(args['write_bytes'] - wr) / 1e6:6.2f} MB")
        elif kind == "reuse_read":
            s = args["buffer_bytes"]
            what = f"buffer {s / mib:5.0f} MiB read 3x -> miss per re-read {(rd / s - 1) / 2:5.3f}"
        elif kind == "write_then_spin":
            what = f"written {args['write_bytes'] / mib:4.0f} MiB, then idle {args['spin_us']:3d} us"
        elif kind == "fa_mimic":
            what = (f"{variant:28s} O {args['o_bytes'] / 1e6:5.1f} MB, K/V {args['kv_bytes'] / 1e6:6.1f} MB -> O still "
                    f"dirty at end {(args['o_bytes'] - wr) / 1e6:5.2f} MB")
        elif kind == "causal_mimic":
            comp = args["q_bytes"] + args["kv_bytes"]
            what = (f"{variant:24s} Q + K/V {comp / 1e6:5.1f} MB, O {args['o_bytes'] / 1e6:4.1f} MB -> reads "
                    f"{rd / comp:5.3f}x the compulsory")
        elif kind == "dirty_reuse":
            s, first, spread = args["buffer_bytes"], args["dirty_first_bytes"], args["dirty_spread_bytes"]
            when = f"first {first / mib:3.0f}" if first else f"spread {spread / mib:2.0f}"
            what = (f"buffer {s / mib:3.0f} MiB read 3x, dirty {when} MiB -> miss per re-read "
                    f"{(rd / s - 1) / 2:5.3f}, dirty written back {wr / 1e6:5.1f} MB")
        else:  # reuse_frames
            s = args["buffer_bytes"]
            what = (f"buffer {s / mib:3.0f} MiB read 3x, dirty frames {args['frame_bytes'] * args['slots'] / 1e6:4.1f}"
                    f" MB -> miss per re-read {(rd / s - 1) / 2:5.3f}")
        print(f"{launch:2d} {kind:15s} {what:74s} DRAM read {rd / 1e6:7.2f} MB, write {wr / 1e6:7.2f} MB, "
              f"{t / 1e3:6.1f} us")


if __name__ == "__main__":
    main()

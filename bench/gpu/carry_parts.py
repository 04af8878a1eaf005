"""A wheel larger than one device call's carry (64 MiB with the working tree) travels in parts over several calls
to the same warm machine: `split` here cuts it (optionally without members the run does not need) into folders
of at most --part-mb each; `join` there stashes a carried folder's parts and, once every part of a wheel is
there (sha256 checked), unpacks it into --target (a wheel is a zip: unpacking it is installing it without
pip's entry points), the folder to put on PYTHONPATH.

    here:  python3 bench/gpu/carry_parts.py split flashinfer.whl --out .carry --part-mb 30 \
               --drop 'flashinfer/data/csrc/kda/*'
    call 1 (carry .carry/p1): python3 bench/gpu/carry_parts.py join .carry/p1 --target $HOME/fi-site
    call 2 (carry .carry/p2): python3 bench/gpu/carry_parts.py join .carry/p2 --target $HOME/fi-site"""
import argparse
import fnmatch
import hashlib
import io
import json
import os
import pathlib
import shutil
import sys
import zipfile

MB = 1 << 20


def split(args):
    """Each wheel, less the members matching --drop, cut into parts; folder p<i> holds part i of every wheel that
    has one and a manifest (names, part counts, sha256 of the whole)."""
    filtered = []  # every wheel read and filtered before --out is touched: a bad wheel leaves no partial folder
    for path in args.wheels:
        src = zipfile.ZipFile(path)
        buf = io.BytesIO()
        dropped = 0
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                if any(fnmatch.fnmatch(info.filename, g) for g in args.drop):
                    dropped += info.file_size
                    continue
                # --lzma: LZMA instead of the wheel's deflate (nvidia-cutlass-dsl's 193 MB MLIR library: 40% smaller)
                dst.writestr(info, src.read(info), compress_type=zipfile.ZIP_LZMA if args.lzma else info.compress_type)
        filtered.append((os.path.basename(path), buf.getvalue(), dropped))
    shutil.rmtree(args.out, ignore_errors=True)
    manifest = []
    for name, data, dropped in filtered:
        parts = [data[i:i + args.part_mb * MB] for i in range(0, len(data), args.part_mb * MB)]
        for i, part in enumerate(parts, 1):
            os.makedirs(os.path.join(args.out, f"p{i}"), exist_ok=True)
            with open(os.path.join(args.out, f"p{i}", f"{name}.{i:02d}"), "wb") as f:
                f.write(part)
        manifest.append({"name": name, "parts": len(parts), "sha256": hashlib.sha256(data).hexdigest()})
        print(f"{name}: {len(data) / MB:.1f} MiB in {len(parts)} parts ({dropped / MB:.1f} MiB of members dropped)")
    for d in sorted(os.listdir(args.out)):
        with open(os.path.join(args.out, d, "manifest.json"), "w") as f:
            json.dump(manifest, f)
    for d in sorted(os.listdir(args.out)):
        size = sum(os.path.getsize(os.path.join(args.out, d, n)) for n in os.listdir(os.path.join(args.out, d)))
        print(f"{os.path.join(args.out, d)}: {size / MB:.1f} MiB")
    return 0


def join(args):
    """Stashes the folder's parts in --store; unpacks every wheel whose parts are all there into --target."""
    os.makedirs(args.store, exist_ok=True)
    for n in os.listdir(args.folder):
        shutil.copy(os.path.join(args.folder, n), args.store)
    with open(os.path.join(args.store, "manifest.json")) as f:
        manifest = json.load(f)
    missing = 0
    for w in manifest:
        parts = [os.path.join(args.store, f"{w['name']}.{i:02d}") for i in range(1, w["parts"] + 1)]
        have = [p for p in parts if os.path.exists(p)]
        if len(have) < len(parts):
            print(f"{w['name']}: {len(have)} of {len(parts)} parts here")
            missing += 1
            continue
        data = b"".join(pathlib.Path(p).read_bytes() for p in parts)
        if hashlib.sha256(data).hexdigest() != w["sha256"]:
            print(f"{w['name']}: sha256 differs from the manifest's", file=sys.stderr)
            return 1
        zipfile.ZipFile(io.BytesIO(data)).extractall(args.target)
        print(f"{w['name']}: {len(data) / MB:.1f} MiB unpacked into {args.target}")
    return 3 if missing else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("split", help="cut wheels into parts of at most --part-mb (here)")
    s.add_argument("wheels", nargs="+")
    s.add_argument("--out", required=True, help="folder for p1, p2, ... (emptied first)")
    s.add_argument("--part-mb", type=int, default=30, help="MiB a part (default 30)")
    s.add_argument("--lzma", action="store_true", help="recompress the members with LZMA (smaller, slower)")
    s.add_argument("--drop", action="append", default=[], help="glob of members to leave out (repeatable)")
    j = sub.add_parser("join", help="stash a carried folder's parts; unpack every complete wheel (there)")
    j.add_argument("folder")
    j.add_argument("--store", default=os.path.expanduser("~/.carry-parts"), help="where parts wait between calls")
    j.add_argument("--target", required=True, help="folder the wheels unpack into (put it on PYTHONPATH)")
    args = p.parse_args()
    try:
        return split(args) if args.cmd == "split" else join(args)
    except (OSError, zipfile.BadZipFile, json.JSONDecodeError, KeyError) as e:  # a bad path or file: one line
        print(f"carry_parts.py {args.cmd}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

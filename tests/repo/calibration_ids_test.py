#!/usr/bin/env python3
"""Measured constants are cited by calibration id, and run records stay apart from code and fixtures:

- every calibration id cited in source, profiles, help text and docs ("calibration h100.kernel_latency_s",
  "calibration ids h100.l2_dirty_bytes, h100.l2_reuse_bytes") is an entry of bench/calibration.json, and every
  entry names its value, probe, command, date and a results folder that exists;
- nothing under the code and test folders names a dated results folder (<name>_YYYY-MM-DD): they cite the id
  instead (scripts/check_layout.py holds the other layering rules, the run records' folder among them).

  calibration_ids_test.py SOURCE_DIR
"""
import json
import os
import re
import sys

RECORDS = "bench" + "/results"  # spelled apart so that this file does not name it
CODE = ["app", "cli", "core", "families", "fuzz", "golden", "gpu", "python", "reference", "tiling_sim", "tests"]
CITING = CODE + ["docs", "README.md", "bench/gpu", "bench/README.md"]
SOURCE_EXT = (".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp", ".py", ".sh")
TEXT_EXT = SOURCE_EXT + (".json", ".md", ".txt", ".cmake", ".toml")
CITE = re.compile(r"\bcalibration(?: ids?)?\s+`?((?:[a-z][a-z0-9]*\.[a-z][a-z0-9_]*)"
                  r"(?:`?(?:,\s*|\s+and\s+)`?[a-z][a-z0-9]*\.[a-z][a-z0-9_]*)*)")
DATED = re.compile(r"[a-z0-9]_20\d\d-\d\d-\d\d\b")
FIELDS = ("value", "probe", "command", "date", "results")


def files(src, roots, ext):
    for root in roots:
        path = os.path.join(src, root)
        if os.path.isfile(path):
            yield root
            continue
        for d, dirs, names in os.walk(path):
            dirs[:] = [x for x in dirs if not x.startswith(".") and x != "expected"]
            for n in names:
                if n.endswith(ext) or n == "CMakeLists.txt":
                    yield os.path.relpath(os.path.join(d, n), src)


def text(src, rel):
    try:
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, OSError):
        return ""


def main():
    src = sys.argv[1]
    with open(os.path.join(src, "bench", "calibration.json")) as f:
        manifest = json.load(f)["constants"]
    errors = []
    for cid, entry in manifest.items():
        if not re.fullmatch(r"[a-z][a-z0-9]*\.[a-z][a-z0-9_]*", cid):
            errors.append(f"bench/calibration.json: id '{cid}' is not scope.name")
        missing = [k for k in FIELDS if k not in entry]
        if missing:
            errors.append(f"bench/calibration.json: {cid} lacks {', '.join(missing)}")
        results = entry.get("results", "")
        if not results.startswith(RECORDS + "/") or not os.path.isdir(os.path.join(src, results)):
            errors.append(f"bench/calibration.json: {cid}'s results folder '{results}' does not exist")
    cited = {}
    for rel in files(src, CITING, TEXT_EXT):
        for m in CITE.finditer(text(src, rel)):
            for cid in re.split(r"`?(?:,\s*|\s+and\s+)`?", m.group(1)):
                cited.setdefault(cid, rel)
    for cid, rel in sorted(cited.items()):
        if cid not in manifest:
            errors.append(f"{rel}: cites calibration id '{cid}', which bench/calibration.json lacks")
    for rel in files(src, CODE, TEXT_EXT):
        body = text(src, rel)
        for n, line in enumerate(body.splitlines(), 1):
            if DATED.search(line):
                errors.append(f"{rel}:{n}: names a results folder (cite its calibration id): {line.strip()[:100]}")
    for e in errors:
        print(e)
    print(f"{len(manifest)} calibration ids, {len(cited)} cited; {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

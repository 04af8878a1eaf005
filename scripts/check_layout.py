#!/usr/bin/env python3
"""The repository's layering rules (docs/design.md, "Layout"), checked on the files of a checkout.

  cli-includes      no source file outside cli/ includes a cli/ header, and no CMakeLists.txt outside cli/
                    compiles a cli/ source or adds cli/ to an include path (cli/ is the program, not a library)
  results-citations nothing under tests/ core/ reference/ tiling_sim/ golden/ gpu/ python/ names bench/results
                    (code, fixtures and profiles cite a calibration id; tests read tests/data)
  results-sources   no source file under bench/results (run records hold outputs and their READMEs)
  core-families     core/ holds no kernel-family file (specs live in families/<family>/)

Prints one line per violation (path:line: rule: what) and exits 1 if there is any, else prints a summary and
exits 0. The files are git's (tracked and untracked, not ignored) when git is available, else every file under
the root but .git and build.

    python3 scripts/check_layout.py [--root DIR]
"""
import argparse
import os
import re
import subprocess
import sys

SOURCE_EXTS = (".cpp", ".cc", ".c", ".h", ".hpp", ".cu", ".cuh")
RESULTS_SOURCE_EXTS = (".cpp", ".h", ".cu", ".cuh", ".py", ".sh", ".hpp", ".cc", ".c")
CITING_ROOTS = ("tests", "core", "reference", "tiling_sim", "golden", "gpu", "python")
FAMILY_FILE = re.compile(r"^(fa\d+.*|.*instances.*|.*launch_table.*)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def repo_files(root):
    """Paths relative to root, with '/' separators."""
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            check=True, capture_output=True).stdout
        files = [f for f in out.decode("utf-8", "surrogateescape").split("\0") if f]
        return sorted(f for f in files if os.path.isfile(os.path.join(root, f)))
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in (".git", "build")]
            for n in names:
                files.append(os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/"))
        return sorted(files)


def read_text(root, path):
    """The file's lines, or None for a binary file."""
    with open(os.path.join(root, path), "rb") as f:
        data = f.read()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace").splitlines()


def top(path):
    return path.split("/", 1)[0]


def check_cli_includes(root, files, report):
    cli_headers = {f[len("cli/"):] for f in files if top(f) == "cli" and f.endswith((".h", ".hpp", ".cuh"))}
    elsewhere = {os.path.basename(f) for f in files if top(f) != "cli"}
    for f in files:
        if top(f) == "cli":
            continue
        lines = None
        if f.endswith(SOURCE_EXTS):
            lines = read_text(root, f)
            for n, line in enumerate(lines or [], 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                # "cli/x.h", "../cli/x.h", or a bare name only cli/ has (reached through an include path)
                if re.search(r"(^|/)cli/", inc) or (inc in cli_headers and os.path.basename(inc) not in elsewhere):
                    report(f, n, "cli-includes", f'includes the cli/ header "{inc}"')
        elif os.path.basename(f) == "CMakeLists.txt" or f.endswith(".cmake"):
            lines = read_text(root, f)
            for n, line in enumerate(lines or [], 1):
                code = line.split("#", 1)[0]
                if re.search(r"\$\{PROJECT_SOURCE_DIR\}/cli\b", code) or re.search(r"\bflashsim(::|_)cli\b", code):
                    report(f, n, "cli-includes", "reaches into cli/ (its sources, include path or a cli target)")


def check_results_citations(root, files, report):
    for f in files:
        if top(f) not in CITING_ROOTS:
            continue
        for n, line in enumerate(read_text(root, f) or [], 1):
            if "bench/results" in line:
                report(f, n, "results-citations", "names bench/results (cite a calibration id instead)")


def check_results_sources(files, report):
    for f in files:
        if f.startswith("bench/results/") and f.endswith(RESULTS_SOURCE_EXTS):
            report(f, 0, "results-sources", "a source file in a run record (sources live in bench/)")


def check_core_families(files, report):
    for f in files:
        if top(f) == "core" and FAMILY_FILE.match(os.path.basename(f)):
            report(f, 0, "core-families", "a kernel-family file in core/ (specs live in families/<family>/)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    files = repo_files(root)
    violations = []

    def report(path, line, rule, what):
        violations.append(f"{path}:{line}: {rule}: {what}" if line else f"{path}: {rule}: {what}")

    check_cli_includes(root, files, report)
    check_results_citations(root, files, report)
    check_results_sources(files, report)
    check_core_families(files, report)
    for v in violations:
        print(v)
    if violations:
        rules = sorted({v.split(": ")[1] for v in violations})
        print(f"layout: {len(violations)} violations ({', '.join(rules)}) in {len(files)} files")
        return 1
    print(f"layout: {len(files)} files, 4 rules, no violation")
    return 0


if __name__ == "__main__":
    sys.exit(main())

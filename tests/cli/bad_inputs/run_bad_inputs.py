#!/usr/bin/env python3
"""Runs the bad-input corpus (cases.txt) through the flashsim CLI.

Each case must exit with its expected code and name the problem: for exit 2, exactly one stderr line is
`flashsim: error: ...` and it contains the expected fragment; for other codes the fragment is looked for in
stdout and stderr. No case may crash (signal), hang (--timeout), or print a sanitizer report. A failed run
(exit != 0) must not leave anything behind in its scratch folder (no half-written output).

cases.txt: one case per line, `EXIT | FRAGMENT | ARGS`; ARGS are split as a shell would (no expansion but
the placeholders {files} = tests/cli/bad_inputs/files, {src} = the source tree, {tmp} = an empty scratch
folder for this case). Blank lines and lines starting with # are skipped."""
import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

SANITIZER_MARKS = ("Sanitizer", "runtime error:", "LeakSanitizer", "Segmentation fault", "terminate called")


def load_cases(path):
    cases = []
    for lineno, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|", 2)]
        if len(parts) != 3:
            sys.exit(f"{path}:{lineno}: expected EXIT | FRAGMENT | ARGS")
        cases.append((lineno, int(parts[0]), parts[1], parts[2]))
    return cases


def run_case(flashsim, src, files, timeout, case):
    lineno, want_rc, fragment, argline = case
    tmp = tempfile.mkdtemp(prefix="flashsim-bad-")
    try:
        args = [a.replace("{files}", files).replace("{src}", src).replace("{tmp}", tmp)
                for a in shlex.split(argline)]
        try:
            p = subprocess.run([flashsim] + args, capture_output=True, text=True, errors="replace",
                               timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return f"hung (no exit within {timeout} s)"
        out, err = p.stdout, p.stderr
        problems = []
        if p.returncode < 0:
            problems.append(f"killed by signal {-p.returncode}")
        elif p.returncode != want_rc:
            problems.append(f"exit {p.returncode}, expected {want_rc}")
        marks = [m for m in SANITIZER_MARKS if m in err]
        if marks:
            problems.append(f"stderr holds {marks}")
        errors = [l for l in err.splitlines() if "error:" in l]
        if want_rc == 2:
            if len(errors) != 1 or not errors[0].startswith("flashsim: error: "):
                problems.append(f"expected one 'flashsim: error:' line, got {len(errors)}")
            elif fragment.lower() not in errors[0].lower():
                problems.append(f"message lacks '{fragment}'")
        elif fragment.lower() not in (out + err).lower():
            problems.append(f"output lacks '{fragment}'")
        if p.returncode != 0 and os.listdir(tmp):
            problems.append(f"left {sorted(os.listdir(tmp))} behind after failing")
        if problems:
            tail = (err.strip().splitlines() or ["(no stderr)"])[-1][:300]
            return "; ".join(problems) + f"\n      stderr: {tail}"
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flashsim", required=True, help="the flashsim binary of this build")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--src", default=os.path.abspath(os.path.join(here, "..", "..", "..")))
    ap.add_argument("--cases", default=os.path.join(here, "cases.txt"))
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    files = os.path.join(a.src, "tests", "cli", "bad_inputs", "files")
    cases = load_cases(a.cases)
    failed = 0
    for case in cases:
        why = run_case(a.flashsim, a.src, files, a.timeout, case)
        status = "ok  " if why is None else "FAIL"
        print(f"{status} line {case[0]:3}: exit {case[1]}  flashsim {case[3]}")
        if why:
            failed += 1
            print(f"      {why}")
    print(f"{len(cases)} bad inputs, {len(cases) - failed} behaved, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

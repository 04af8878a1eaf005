"""Shared fixtures: the repository's committed smoke suite (written by the command line), the command line
installed with the package, and pytester for the plugin tests."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import flashsim
from flashsim import _cli

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "golden" / "data" / "smoke"
EXAMPLES = ROOT / "golden" / "examples"
sys.path.insert(0, str(EXAMPLES))  # numpy_attention: the NumPy stand-in kernel


@pytest.fixture(scope="session")
def smoke(tmp_path_factory) -> flashsim.golden.Suite:
    """The smoke suite (18 cases) as the command line shipped in the package writes it."""
    out = tmp_path_factory.mktemp("cli") / "smoke"
    run_cli("golden", "generate", "--suite", "smoke", "--out", str(out))
    suite = flashsim.golden.Suite(out)
    yield suite
    for case in suite:
        case.release()


def run_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """The flashsim command line shipped in the package."""
    exe = _cli.binary()
    assert exe.is_file(), f"{exe} missing: the wheel ships the command line"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, check=check,
                          env={**os.environ, "OMP_NUM_THREADS": "2"})

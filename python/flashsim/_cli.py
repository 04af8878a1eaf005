"""The `flashsim` command installed with the package: runs the command line built with the module."""
import os
import sys
from pathlib import Path


def binary() -> Path:
    """Path of the flashsim command line shipped in the package: installed beside the native module (which an
    editable install keeps apart from the Python sources)."""
    from . import _native

    return Path(_native.__file__).parent / "bin" / "flashsim"


def main() -> None:
    exe = binary()
    if not exe.is_file():
        sys.exit(f"flashsim: error: the command line is missing from the package ({exe.name} in bin/)")
    os.execv(exe, [str(exe), *sys.argv[1:]])

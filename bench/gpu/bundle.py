"""What travels to the GPU machine, and how it is unpacked there.

The device tool carries at most 64 MiB with the working tree: `pack` copies flashsim and flashsim-gpu as built
here with the shared libraries of this machine's packages they load (OpenBLAS, OpenMP, fmt, hwloc, OpenSSL...),
not the C library's and not CUDA's (the GPU machine has its own toolkit and driver), and compresses the
libraries (OpenBLAS alone is 36 MB) and flashsim-gpu (44 MB of kernels, 12 MB compressed). `unpack`, on the GPU
machine, restores them once and returns the environment that puts the libraries on the loader's path.
`pack_python` packs the Python package the same way (a cp312 wheel, ml_dtypes and pytest, the libraries);
`golden_subset` copies a generated suite's small cases (the whole default suite is 360 MB). From a shell on
the GPU machine: `eval "$(python3 bench/gpu/bundle.py env BUNDLE)"` unpacks the bundle and exports its
LD_LIBRARY_PATH.
"""
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SYSTEM_LIBS = ("libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so", "ld-linux", "libcu", "libnv")
BINARIES = ("flashsim", "flashsim-gpu")


def shared_libs(binary, skip=SYSTEM_LIBS):
    """(name, path) of the shared libraries `binary` loads that the GPU machine lacks (ldd's resolved ones)."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return [(name, path) for name, path in parse_ldd(out) if not name.startswith(skip)]


def parse_ldd(text):
    """(name, path) of each `name => /path (address)` line of ldd's output."""
    libs = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1] == "=>" and f[2].startswith("/"):
            libs.append((f[0], f[2]))
    return libs


def _tar_xz(folder, name, out, level=None):
    env = dict(os.environ, XZ_OPT=f"-{level}") if level is not None else None
    subprocess.run(["tar", "-C", folder, "-cJf", out, name], check=True, env=env)


def pack(build, out, binaries=BINARIES, strip=True, compress=True, xz_level=None):
    """The bundle of `binaries` of `build` in `out`: the binaries (flashsim-gpu xz-compressed) and lib.tar.xz
    (xz_level: xz's preset, default its own)."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "lib"))
    for b in binaries:
        shutil.copy2(os.path.join(build, b), os.path.join(out, b))
    for b in binaries:
        for _, path in shared_libs(os.path.join(out, b)):
            shutil.copy(os.path.realpath(path), os.path.join(out, "lib", os.path.basename(path)))
    if strip and shutil.which("strip"):
        subprocess.run(["strip"] + [os.path.join(out, b) for b in binaries], check=True)
    if compress:
        _tar_xz(out, "lib", os.path.join(out, "lib.tar.xz"), xz_level)
        shutil.rmtree(os.path.join(out, "lib"))
        if "flashsim-gpu" in binaries:
            subprocess.run(["xz", "-T0", os.path.join(out, "flashsim-gpu")], check=True)
    return sorted(os.listdir(out))


def unpack(bundle):
    """On the GPU machine: the bundle's libraries and flashsim-gpu unpacked (once); the environment to run them."""
    lib = os.path.join(bundle, "lib")
    if not os.path.isdir(lib) and os.path.exists(lib + ".tar.xz"):
        subprocess.run(["tar", "-C", bundle, "-xJf", lib + ".tar.xz"], check=True)
    fg = os.path.join(bundle, "flashsim-gpu")
    if not os.access(fg, os.X_OK) and os.path.exists(fg + ".xz"):
        subprocess.run(["xz", "-dk", fg + ".xz"], check=True)
        os.chmod(fg, 0o755)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join(
        [os.path.abspath(lib), "/usr/local/cuda/lib64"] + ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []))
    return env


def pack_python(out, python="python3.12"):
    """The Python package for the GPU machine, whose python3 (3.12, with PyTorch) has none of our libraries:
    the wheel built here, ml_dtypes (without NumPy: PyTorch's stays the one imported) and pytest, the libraries
    the native module and the bundled command line load. Then `run.py python-check` there."""
    shutil.rmtree(out, ignore_errors=True)
    wheels, lib = os.path.join(out, "wheels"), os.path.join(out, "lib")
    os.makedirs(wheels)
    os.makedirs(lib)
    pip = [python, "-m", "pip"]
    subprocess.run(pip + ["wheel", "-q", "--no-deps", "-w", wheels, ROOT], check=True)
    subprocess.run(pip + ["download", "-q", "--only-binary=:all:", "--no-deps", "-d", wheels, "ml_dtypes"], check=True)
    subprocess.run(pip + ["download", "-q", "--only-binary=:all:", "-d", wheels, "pytest"], check=True)
    whl = glob.glob(os.path.join(wheels, "flashsim-*.whl"))[0]
    with tempfile.TemporaryDirectory() as tmp:
        zipfile.ZipFile(whl).extractall(tmp)
        for b in glob.glob(os.path.join(tmp, "flashsim", "_native*.so")) + [os.path.join(tmp, "flashsim", "bin", "flashsim")]:
            for _, path in shared_libs(b, SYSTEM_LIBS + ("libpython",)):
                shutil.copy(os.path.realpath(path), os.path.join(lib, os.path.basename(path)))
    _tar_xz(out, "lib", os.path.join(out, "lib.tar.xz"))
    shutil.rmtree(lib)
    return sorted(os.listdir(out))


def golden_subset(src, out, max_bytes=500_000):
    """The cases of a generated suite under max_bytes copied to out with a manifest listing just them (the
    default suite: 24 of 161); returns their count. Carry out with the device tool for `run.py sdpa golden`."""
    with open(os.path.join(src, "manifest.json")) as f:
        m = json.load(f)
    m["cases"] = [c for c in m["cases"] if os.path.getsize(os.path.join(src, c["file"])) < max_bytes]
    os.makedirs(out, exist_ok=True)
    for c in m["cases"]:
        shutil.copy(os.path.join(src, c["file"]), os.path.join(out, c["file"]))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(m, f, indent=2)
    return len(m["cases"])


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "env":
        print("usage: bundle.py env BUNDLE   (prints the export that puts the unpacked libraries on the path)",
              file=sys.stderr)
        sys.exit(2)
    if not any(os.path.exists(os.path.join(sys.argv[2], n)) for n in ("lib", "lib.tar.xz")):
        print(f"bundle.py env: {sys.argv[2]}: not a bundle (no lib.tar.xz; run.py bundle makes one)", file=sys.stderr)
        sys.exit(2)
    print("export LD_LIBRARY_PATH=" + shlex.quote(unpack(sys.argv[2])["LD_LIBRARY_PATH"]))

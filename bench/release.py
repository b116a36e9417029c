"""What a learner's install from the release costs: time and disk.

Builds the release (``scripts/build_release.py``), unzips it in a temporary folder outside the
project, runs the set-up commands of its README in a fresh virtual environment (exactly what
a learner types), and prints the download, the time and the sizes. Pip's cache makes the time
that of a machine that has fetched the wheels before (here: the local cache); a first install
also downloads the wheels, about the size of the environment's packages.

    .venv/bin/python bench/release.py [--keep]

Exits non-zero when the environment exceeds MAX_ENV_GB (the CPU build of torch is most of it;
a GPU build, pulled by a wrong install order, is several GB and fails here).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from autograder.classroom.release import learner_readme
from autograder.classroom import release as builder

MAX_ENV_GB = 1.5


def _size(path: Path) -> int:
    """Bytes on disk under ``path`` (``du -sk``)."""
    du = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(du.stdout.split()[0]) * 1024


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (printed)")
    args = parser.parse_args(argv)
    home = Path(tempfile.mkdtemp(prefix="mha-release-bench-"))
    try:
        builder.build(home / "dist" / "release")
        archive = home / "dist" / "release.zip"
        with zipfile.ZipFile(archive) as z:
            z.extractall(home)
        folder = home / "release"
        unzipped = _size(folder)
        commands = learner_readme.setup_commands((folder / "README.md").read_text())
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "MHA_BACKEND")}
        started = time.perf_counter()
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=folder, capture_output=True,
                              text=True, env=dict(env, PIP_DISABLE_PIP_VERSION_CHECK="1"))
        seconds = time.perf_counter() - started
        if proc.returncode != 0:
            print(proc.stdout[-2000:], proc.stderr[-4000:], sep="\n", file=sys.stderr)
            return 1
        venv = _size(folder / ".venv")
        site = next((folder / ".venv" / "lib").glob("python3*/site-packages"))
        torch = _size(site / "torch")
        rows = [("release.zip", _mb(archive.stat().st_size)), ("release, unzipped", _mb(unzipped)),
                ("learner environment (.venv)", _mb(venv)), ("  of which torch", _mb(torch)),
                ("install time (README's commands, warm pip cache)", f"{seconds:.0f} s")]
        width = max(len(name) for name, _ in rows)
        print("\n".join(f"{name:<{width}}  {value:>9}" for name, value in rows))
        print(f"commands:\n{commands.rstrip()}")
        ok = venv <= MAX_ENV_GB * 2**30
        print(f"target: environment <= {MAX_ENV_GB} GB: {'met' if ok else 'MISSED'}")
        return 0 if ok else 1
    finally:
        if args.keep:
            print(f"kept: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: what a learner's install costs, against the full (book and tests) install.

Each set is installed the way the Makefile does it, into a fresh venv in a temporary folder:
`torch==2.13.0` first and alone (the CPU wheel), then the pinned file, then the course package
(`--no-deps -e .`). Prints the wall time and the venv's size on disk for each, and exits non-zero when
the learner's venv is not at most TARGET times the full one. Timings depend on the network and on
pip's cache (a second run reuses the cached wheels): the table says which cache was used.
`--also NAME=FILE` adds another requirements file to the table (an older release's, say).

The target is modest because PyTorch's CPU build (the "of it torch" column) is in both sets: the
grader and chapters 2 to 7 need it. It fails if the book's and the tests' tools creep back in.

    python3 bench/install.py [--sets learner full] [--also NAME=FILE] [--target 0.9] [--no-cache]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETS = {"learner": ROOT / "requirements-learner.txt", "full": ROOT / "requirements.txt"}
TARGET = 0.9


def size_on_disk(path: Path) -> int:
    """Bytes of allocated blocks under path (what `du` counts), hard links once."""
    seen, total = set(), 0
    for root, _, files in os.walk(path):
        for name in files:
            st = os.lstat(os.path.join(root, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def install(requirements: Path, venv: Path, no_cache: bool) -> float:
    cache = ["--no-cache-dir"] if no_cache else []
    python = venv / "bin" / "python"
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "-q", *cache, "torch==2.13.0"],
        [str(python), "-m", "pip", "install", "-q", *cache, "-r", str(requirements)],
        [str(python), "-m", "pip", "install", "-q", *cache, "--no-deps", "--no-build-isolation", "-e", str(ROOT)],
    ]
    t0 = time.perf_counter()
    for cmd in steps:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=venv.parent)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    p.add_argument("--also", action="append", default=[], metavar="NAME=FILE",
                   help="another requirements file to measure")
    p.add_argument("--target", type=float, default=TARGET)
    p.add_argument("--no-cache", action="store_true", help="download every wheel (pip --no-cache-dir)")
    args = p.parse_args(argv)

    files = {name: SETS[name] for name in args.sets}
    for extra in args.also:
        name, sep, path = extra.partition("=")
        if not sep or not Path(path).is_file():
            p.error(f"--also {extra!r}: give NAME=FILE, with FILE an existing requirements file")
        files[name] = Path(path).resolve()
    rows = {}
    for name, requirements in files.items():
        with tempfile.TemporaryDirectory(prefix=f"mha-install-{name}-") as tmp:
            venv = Path(tmp) / "venv"
            seconds = install(requirements, venv, args.no_cache)
            site = next((venv / "lib").glob("python3*/site-packages"))
            count = sum(1 for _ in site.glob("*.dist-info"))
            torch = sum(size_on_disk(p) for p in site.glob("torch*") if p.is_dir())
            rows[name] = (seconds, size_on_disk(venv), count, torch)

    cache = "no pip cache" if args.no_cache else "pip's cache as it is"
    print(f"{'set':<8} {'packages':>8} {'venv size':>10} {'of it torch':>12} {'install time':>13}   "
          f"({cache}, Python {sys.version.split()[0]})")
    for name, (seconds, size, count, torch) in rows.items():
        print(f"{name[:8]:<8} {count:>8} {size / 2**30:>7.2f} GB {torch / 2**30:>9.2f} GB {seconds:>11.0f} s")
    if {"learner", "full"} <= rows.keys():
        ratio = rows["learner"][1] / rows["full"][1]
        verdict = "ok" if ratio <= args.target else "MISSED"
        print(f"learner / full venv size: {ratio:.2f} (target <= {args.target}): {verdict}")
        return 0 if ratio <= args.target else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

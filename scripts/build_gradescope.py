"""Build the Gradescope autograder bundle: ``make gradescope`` -> ``dist/gradescope_autograder.zip``.

Gradescope's autograder specification: a zip with ``setup.sh`` (run once, as root, to build
the image; its ``python.sh`` finds or fetches a final Python >= 3.11.2) and ``run_autograder``
(run per submission) at its top. Gradescope unpacks it in
``/autograder/source``, the submission arrives in ``/autograder/submission`` and the grade
must be written to ``/autograder/results/results.json``. Ours holds, besides those two
scripts (``gradescope/``): the grader (``autograder/``), the reference solutions
(``solutions/``), the stubs (``mha_exercises/``, which the similarity check compares with),
the pinned requirements, and ``seed``: the seed of the hidden randomized cases, drawn here
unless given, and never shown to learners (their release checks public cases of another seed).

    python scripts/build_gradescope.py [--out dist/gradescope_autograder.zip] [--seed N]
"""
from __future__ import annotations

import argparse
import secrets
import stat
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("autograder", "solutions", "mha_exercises", "lab")
SCRIPTS = ("setup.sh", "run_autograder", "python.sh")
# Debian's archive keys: python.sh checks Debian 12's python3.11 against them (Ubuntu 22.04 images).
DATA = ("debian-archive-keys.asc",)
# What the grader imports, and their own dependencies (torch's are pinned here too: its CPU
# index would otherwise pick their versions). Versions come from requirements.txt.
GRADER_REQUIREMENTS = (
    "numpy", "rich", "markdown-it-py", "mdurl", "Pygments", "landlockpy", "PyYAML",
    "filelock", "typing_extensions", "sympy", "mpmath", "networkx", "Jinja2", "MarkupSafe", "fsspec",
    "scikit-learn", "scipy", "joblib", "threadpoolctl",
)
SKIP_PARTS = {"__pycache__", ".ipynb_checkpoints"}


def pinned_requirements(requirements: Path = ROOT / "requirements.txt") -> str:
    pins = {}
    for line in requirements.read_text().splitlines():
        name, sep, version = line.strip().partition("==")
        if sep:
            pins[name.lower()] = f"{name}=={version}"
    missing = [n for n in GRADER_REQUIREMENTS if n.lower() not in pins]
    if missing:
        raise SystemExit(f"build_gradescope: no exact pin in requirements.txt for {', '.join(missing)}")
    header = "# The grader's dependencies, pinned (torch==2.13.0 is installed first by setup.sh).\n"
    return header + "\n".join(pins[n.lower()] for n in GRADER_REQUIREMENTS) + "\n"


def package_files(root: Path = ROOT):
    for package in PACKAGES:
        for f in sorted((root / package).rglob("*")):
            rel = f.relative_to(root)
            if f.is_file() and not SKIP_PARTS & set(rel.parts) and f.suffix not in (".pyc",):
                yield rel


def _add(z: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # reproducible bytes
    info.compress_type = zipfile.ZIP_DEFLATED
    mode = 0o755 if executable else 0o644
    info.external_attr = (stat.S_IFREG | mode) << 16
    z.writestr(info, data)


def build(out: Path, seed: int) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as z:
        for script in SCRIPTS:
            _add(z, script, (ROOT / "gradescope" / script).read_bytes(), executable=True)
        for name in DATA:
            _add(z, name, (ROOT / "gradescope" / name).read_bytes())
        for rel in package_files():
            _add(z, rel.as_posix(), (ROOT / rel).read_bytes())
        _add(z, "requirements-grader.txt", pinned_requirements().encode())
        _add(z, "seed", f"{seed}\n".encode())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "gradescope_autograder.zip")
    parser.add_argument("--seed", type=int, help="seed of the hidden cases (default: drawn at random)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31 - 1) + 1
    out = build(args.out, seed)
    with zipfile.ZipFile(out) as z:
        n = len(z.namelist())
    print(f"{out}: {n} files, {out.stat().st_size / 1024:.0f} kB; hidden seed stored in the bundle. "
          "Upload it as the assignment's autograder (Configure Autograder > Zip file upload).")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The learner release: ``make release`` -> ``dist/release/`` and ``dist/release.zip``.

What learners get in a graded course: the chapters without their solutions, the exercise stubs
and their support code, and a self-check (``mha-check``, and ``check(...)`` in the notebooks)
that runs on *public* cases stored as inputs and expected outputs. Those are computed here,
from the reference solutions, which stay behind. What ships follows a rule, not a list:

* the packages that ``pyproject.toml`` installs, minus ``autograder.SECRET`` (no ``solutions``,
  no judge and checks with their known-bug implementations, no classroom tools, no ``mha-grade``);
* the book: ``_config.yml``, ``_toc.yml`` and the folder of the table of contents' root, every
  ``{solution}`` (and any hint that holds a code block) replaced by a note, outputs cleared;
* the learner's top files: a generated ``README.md`` and ``pyproject.toml``, the learner
  requirements, the exercise contract (``CONTRACT.md``); with ``--html``, the book built with its solutions hidden
  (``make book-learner``), its copies of the chapters stripped like the book (``unsolved.py``).

Only files tracked by git ship (no local submissions, caches or checkpoints). Nothing from
``tests/``, ``gradescope/``, ``scripts/`` or ``bench/``. Final grading (``mha-grade``,
Gradescope) draws hidden cases with another seed.

    python scripts/build_release.py [--out dist/release] [--html _build/learner/_build/html]
    python scripts/build_release.py --book-config _build/learner/_config.yml   # for make book-learner
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import yaml

from ... import SECRET, within
from ...spec import MODULE_OF
from .learner_readme import LEARNER_REQUIREMENTS, readme
from .unsolved import shows_solution, strip_file

ROOT = Path(__file__).resolve().parents[3]  # the checkout the release is built from: its book, its pyproject.toml
BOOK_CONFIG = ("_config.yml", "_toc.yml")
SKIP = {"__pycache__", ".ipynb_checkpoints", "_build", ".pytest_cache"}


# --------------------------------------------------------------------------- what ships


def _tracked(folder: Path) -> list[Path]:
    """The files of ``folder`` that git tracks (all its files, caches aside, outside a checkout)."""
    proc = subprocess.run(["git", "ls-files", "-z", "--", str(folder)], cwd=ROOT, capture_output=True)
    if proc.returncode == 0 and proc.stdout:
        names = [name for name in proc.stdout.decode().split("\0") if name]
        return sorted(ROOT / name for name in names if (ROOT / name).is_file())
    return sorted(p for p in folder.rglob("*") if p.is_file() and not SKIP & set(p.relative_to(ROOT).parts))


def _module(path: Path) -> str:
    """The dotted module a file belongs to (a data file: its package)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    if path.suffix != ".py" or parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def shipped_packages() -> list[str]:
    """The top-level packages ``pyproject.toml`` installs, minus the secret ones."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    names = sorted({p.rstrip("*").rstrip(".") for p in patterns})
    return [n for n in names if (ROOT / n / "__init__.py").exists() and not within(n, SECRET)]


def shipped_files() -> list[Path]:
    """Every file of the repository that goes into the release (the rule of the docstring)."""
    files = [p for name in shipped_packages() for p in _tracked(ROOT / name)
             if not within(_module(p), SECRET)]
    toc = (ROOT / "_toc.yml").read_text()
    root = re.search(r"^root:\s*(\S+)", toc, re.M).group(1)
    files += [ROOT / name for name in BOOK_CONFIG] + _tracked(ROOT / Path(root).parent)
    return files


def copy_html(site: Path, out: Path) -> int:
    """The book built with its solutions hidden, into ``out``. Its downloadable copies of the
    chapters (``_sources/``) are stripped like the book; a page that still renders a solution
    stops the build (a site built with solutions shown)."""
    if not (site / "index.html").exists():
        raise SystemExit(f"--html {site}: no built book there (make book-learner)")
    shipped = [p for p in site.rglob("*.html") if shows_solution(p.read_text(errors="replace"))]
    if shipped:
        raise SystemExit(f"--html {site}: {shipped[0].relative_to(site)} shows a solution; build the book "
                         "with `make book-learner`")
    shutil.copytree(site, out, ignore=lambda d, names: [n for n in names if n in SKIP or n == ".buildinfo"])
    return sum(strip_file(p) for p in out.rglob("*") if p.is_file())



# --------------------------------------------------------------------------- generated files


def write_learner_book_config(path: Path) -> None:
    """The book's ``_config.yml`` with every ``{solution}`` hidden (sphinx-exercise's
    ``hide_solutions``), for ``jupyter-book build . --config PATH``: the book as learners may
    see it before the deadline. Its notebook runs are those of ``make book`` (the same cache)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    sphinx = config.setdefault("sphinx", {})
    sphinx.setdefault("config", {})["hide_solutions"] = True
    # Jupyter Book finds local extensions relative to the configuration file, now elsewhere.
    extensions = sphinx.get("local_extensions") or {}
    sphinx["local_extensions"] = {name: str(ROOT / folder) for name, folder in extensions.items()}
    config.setdefault("execute", {}).setdefault("cache", str(ROOT / "_build" / ".jupyter_cache"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Generated by autograder/classroom/release/__init__.py from _config.yml: solutions hidden.\n"
                    + yaml.safe_dump(config, sort_keys=False))



def public_cases(directory: Path) -> dict[str, int]:
    """Each exercise's public cases with the reference's and the known bugs' outputs."""
    from ... import selfcheck  # deferred: NumPy; --book-config (make book-learner) needs none of these
    from ...grading import judge  # deferred: the references; --book-config needs none of these
    from ...grading.exercises import EXERCISES, draw  # deferred: torch; --book-config needs none of these

    counts = {}
    for exercise in EXERCISES.values():
        cases = draw.public_cases(exercise)  # a stream no grading seed draws from
        expected = [judge.reference_output(case) for case in cases]
        bugs = [judge.shown_bugs(exercise, c, e) for c, e in zip(cases, expected)]  # they name a mistake
        selfcheck.store(exercise, cases, expected, bugs, directory)
        counts[exercise.id] = len(cases)
    return counts


def _pyproject(text: str, packages: list[str]) -> str:
    """The repository's ``pyproject.toml`` for the release: the learner's packages, the
    self-check as its console script, no test or lint settings (their tools are not installed)."""
    text = re.sub(r'(?m)^mha-grade = "autograder\.classroom\.cli:main"$', 'mha-check = "autograder.selfcheck:main"',
                  text)
    text = re.sub(r'(?m)^description = .*$', 'description = "The learner release of an open course on '
                  'multi-head attention: chapters, exercises and a self-check"', text, count=1)
    text = text.replace("pins live in requirements.txt", f"pins live in {LEARNER_REQUIREMENTS}")
    include = "include = [" + ", ".join(f'"{name}*"' for name in packages) + "]"
    text = re.sub(r"include = \[[^\]]*\]", include, text, count=1)
    sections = re.split(r"(?m)^(?=\[)", text)
    return "".join(s for s in sections if not s.startswith(("[tool.pytest", "[tool.ruff")))


def _learner_requirements() -> str:
    path = ROOT / LEARNER_REQUIREMENTS
    if not path.exists():
        raise SystemExit(f"{LEARNER_REQUIREMENTS} is missing: the release installs from it")
    return path.read_text()


def build(out: Path, html: Path | None = None) -> tuple[dict[str, int], int]:
    """Write the release to ``out`` and ``out.zip``: the public cases per exercise, and the
    number of solutions replaced by a note."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    removed = 0
    for path in shipped_files():
        target = out / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        if target.parts[len(out.parts)] == "book":
            removed += strip_file(target)
    if html is not None:
        copy_html(html, out / "html")
    pyproject = (ROOT / "pyproject.toml").read_text()
    python = tomllib.loads(pyproject)["project"]["requires-python"]
    (out / "pyproject.toml").write_text(_pyproject(pyproject, shipped_packages()))
    (out / LEARNER_REQUIREMENTS).write_text(_learner_requirements())
    submit = sorted({f"{module}.py" for module in MODULE_OF.values()})  # the files a submission holds
    (out / "README.md").write_text(readme(python, html is not None, submit))
    shutil.copy2(ROOT / "CONTRACT.md", out / "CONTRACT.md")  # every exercise's names, shapes, conventions
    counts = public_cases(out / "autograder" / "public_cases")
    shutil.make_archive(str(out), "zip", out.parent, out.name)
    return counts, removed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "release")
    parser.add_argument("--html", type=Path, default=None,
                        help="a book built with its solutions hidden (make book-learner), shipped in html/")
    parser.add_argument("--book-config", type=Path, default=None,
                        help="only write the book's configuration with the solutions hidden to this path")
    args = parser.parse_args(argv)
    if args.book_config is not None:
        write_learner_book_config(args.book_config)
        print(f"{args.book_config}: the book's configuration, solutions hidden")
        return 0
    counts, removed = build(args.out, args.html)
    print(f"{args.out} (+ {args.out.name}.zip): {len(counts)} exercises, {sum(counts.values())} public "
          f"cases, {removed} solutions replaced by a note{', with the built book' if args.html else ''}")
    return 0


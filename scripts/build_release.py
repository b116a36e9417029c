"""Build the learner release: ``make release`` -> ``dist/release/`` and ``dist/release.zip``.

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
  (``make book-learner``), its copies of the chapters stripped like the book.

Only files tracked by git ship (no local submissions, caches or checkpoints). Nothing from
``tests/``, ``gradescope/``, ``scripts/`` or ``bench/``. Final grading (``mha-grade``,
Gradescope) draws hidden cases with another seed.

    python scripts/build_release.py [--out dist/release] [--html _build/learner/_build/html]
    python scripts/build_release.py --book-config _build/learner/_config.yml   # for make book-learner
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BOOK_CONFIG = ("_config.yml", "_toc.yml")
LEARNER_REQUIREMENTS = "requirements-learner.txt"
SKIP = {"__pycache__", ".ipynb_checkpoints", "_build", ".pytest_cache"}
SOLUTION_NOTE = "*Solution: published after the deadline.*\n"
HINT_NOTE = "*Hint: its code is published after the deadline.*\n"

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
    from autograder import SECRET, within

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    names = sorted({p.rstrip("*").rstrip(".") for p in patterns})
    return [n for n in names if (ROOT / n / "__init__.py").exists() and not within(n, SECRET)]


def shipped_files() -> list[Path]:
    """Every file of the repository that goes into the release (the rule of the docstring)."""
    from autograder import SECRET, within

    files = [p for name in shipped_packages() for p in _tracked(ROOT / name)
             if not within(_module(p), SECRET)]
    toc = (ROOT / "_toc.yml").read_text()
    root = re.search(r"^root:\s*(\S+)", toc, re.M).group(1)
    files += [ROOT / name for name in BOOK_CONFIG] + _tracked(ROOT / Path(root).parent)
    return files


# --------------------------------------------------------------------------- no solutions

_DIRECTIVE = re.compile(r"^ {0,3}(?P<fence>`{3,}|:{3,})\s*\{(?P<name>[\w-]+)\}(?P<argument>.*)$")
_CODE_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def _closing(lines: list[str], start: int, fence: str) -> int:
    """The index of the line that closes the fence opened at ``start`` (or the last line)."""
    closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    return next((i for i in range(start + 1, len(lines)) if closing.match(lines[i])), len(lines) - 1)


def _is_hint(name: str, argument: str, body: list[str]) -> bool:
    titled = name == "admonition" and "hint" in argument.lower()
    classed = any(re.match(r"\s*:class:.*\bhint\b", line) for line in body)
    return name == "hint" or titled or classed


def strip_markdown(text: str, gated: bool = False) -> tuple[str, int, bool]:
    """``text`` with every solution replaced by a note: ``{solution}`` directives (backtick and
    colon fences), everything between ``{solution-start}`` and ``{solution-end}`` (``gated``
    carries that state across cells), and hints that hold a code block (inline code stays: a
    hint names the tool, the solution writes the code). Returns the text, the number of
    solutions removed and whether a gated solution is still open."""
    lines, out, removed, i = text.splitlines(keepends=True), [], 0, 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        name = match.group("name") if match else None
        if gated:
            if name == "solution-end":
                gated = False
                i = _closing(lines, i, match.group("fence"))
            i += 1
            continue
        if name is None:
            out.append(lines[i])
            i += 1
            continue
        end = _closing(lines, i, match.group("fence"))
        body = lines[i + 1:end]
        if name == "solution":
            out.append(SOLUTION_NOTE)
            removed += 1
        elif name == "solution-start":
            out.append(SOLUTION_NOTE)
            removed, gated = removed + 1, True
        elif _is_hint(name, match.group("argument"), body) and any(_CODE_FENCE.match(line) for line in body):
            out.append(HINT_NOTE)
        else:
            out.extend(lines[i:end + 1])
        i = end + 1
    return "".join(out), removed, gated


def solution_blocks(text: str) -> list[tuple[str, str]]:
    """The ``(argument, body)`` of every ``{solution}`` directive of a markdown text (what the
    book shows; the argument is the label of its exercise)."""
    lines, blocks, i = text.splitlines(keepends=True), [], 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        end = _closing(lines, i, match.group("fence")) if match else i
        if match and match.group("name") == "solution":
            blocks.append((match.group("argument").strip(), "".join(lines[i + 1:end])))
        i = end + 1
    return blocks


def strip_notebook(notebook: dict) -> int:
    """Strip the solutions of every markdown cell and every output, in place; the count removed."""
    cells, removed, gated = [], 0, False
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            if gated:  # a cell inside a gated solution
                continue
            cell["outputs"], cell["execution_count"] = [], None  # outputs of the author's run
        else:
            source = "".join(cell["source"])
            text, count, gated = strip_markdown(source, gated)
            removed += count
            if text != source:
                cell["source"] = text
                cell.pop("attachments", None)
        cells.append(cell)
    if gated:
        raise ValueError("a {solution-start} has no {solution-end}")
    notebook["cells"] = cells
    return removed


def strip_file(path: Path) -> int:
    """Strip one shipped book file in place (notebooks, MyST markdown); the solutions removed."""
    if path.suffix == ".ipynb":
        notebook = json.loads(path.read_text())
        removed = strip_notebook(notebook)
        path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
        return removed
    if path.suffix == ".md" or path.name.endswith((".md.txt", ".ipynb.txt")):
        text, removed, gated = strip_markdown(path.read_text())
        if gated:
            raise ValueError(f"{path}: a {{solution-start}} has no {{solution-end}}")
        path.write_text(text)
        return removed
    return 0


_SOLUTION_NODE = re.compile(r"""class="[^"]*\bsolution\b""")


def copy_html(site: Path, out: Path) -> int:
    """The book built with its solutions hidden, into ``out``. Its downloadable copies of the
    chapters (``_sources/``) are stripped like the book; a page that still renders a solution
    stops the build (a site built with solutions shown)."""
    if not (site / "index.html").exists():
        raise SystemExit(f"--html {site}: no built book there (make book-learner)")
    shipped = [p for p in site.rglob("*.html") if _SOLUTION_NODE.search(p.read_text(errors="replace"))]
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
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    sphinx = config.setdefault("sphinx", {})
    sphinx.setdefault("config", {})["hide_solutions"] = True
    # Jupyter Book finds local extensions relative to the configuration file, now elsewhere.
    extensions = sphinx.get("local_extensions") or {}
    sphinx["local_extensions"] = {name: str(ROOT / folder) for name, folder in extensions.items()}
    config.setdefault("execute", {}).setdefault("cache", str(ROOT / "_build" / ".jupyter_cache"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Generated by scripts/build_release.py from _config.yml: solutions hidden.\n"
                    + yaml.safe_dump(config, sort_keys=False))



def public_cases(directory: Path) -> dict[str, int]:
    """Each exercise's public cases with the reference's and the known bugs' outputs."""
    from autograder import selfcheck
    from autograder.grading import judge
    from autograder.grading.exercises import EXERCISES, draw

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


def readme(python: str, html: bool, submit: list[str]) -> str:
    """The learner's README: set up, open the chapters, read the book, check, hand in."""
    if html:
        book = ("Open `html/index.html` in a browser: the book as published, without the solutions (they "
                "are published after the deadline). The chapters in `book/` are the same pages, to run.")
    else:
        book = ("The chapters are the notebooks in `book/` (open them as above); the solutions are "
                "published after the deadline.")
    files = "\n".join(f"- `mha_exercises/{name}`" for name in submit)
    return f"""# Multi-head attention, from the ground up: learner release

The chapters are Jupyter notebooks in `book/`; your exercises are in `mha_exercises/`: replace
each `raise NotImplementedError` with your code.

## 1. Set up (once)

You need Python {python} (`python3 --version`). In this folder:

```bash
python3 -m venv .venv
.venv/bin/pip install torch==2.13.0
.venv/bin/pip install -r {LEARNER_REQUIREMENTS} -e .
```

`torch==2.13.0` goes first and alone: asked for by another package, pip may choose a much larger
GPU build. On Windows use `.venv\\Scripts\\pip` (and `.venv\\Scripts\\python` below).
`-e` installs this folder in place, so the notebooks and the check run the code you edit here.
The environment takes about 1.3 GB of disk (PyTorch is 750 MB of it); with the packages
already downloaded these commands took under two minutes (measured by `bench/release.py` of the
course repository), plus the download on a first install.

## 2. Work through the chapters

```bash
.venv/bin/jupyter lab book/
```

Start with `01_attention.ipynb`. Each chapter runs *your* `mha_exercises/` code.

## 3. Read the book

{book}

## 4. Check your work

In a chapter, `check("softmax")` (any exercise id) grades one exercise. From a terminal, all
exercises or one:

```bash
.venv/bin/mha-check mha_exercises
.venv/bin/mha-check mha_exercises --exercise softmax
```

Your code runs in a separate, confined process; the check compares its results with stored
expected outputs of public practice cases and names the likely mistake when it recognises one.
Your grade comes from the same checks on hidden cases (other random inputs), so pass them
because your code is right, not because it fits these cases.

## 5. Hand in

Hand in your exercise files, as you edited them, as your instructor asks (for instance,
uploaded together to Gradescope):

{files}
"""


def setup_commands(readme_text: str) -> str:
    """The shell commands of the README's set-up step (the test and the bench run exactly these)."""
    section = readme_text.split("## 1. Set up", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


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
    from autograder.spec import MODULE_OF  # the files a submission holds

    submit = sorted({f"{module}.py" for module in MODULE_OF.values()})
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


if __name__ == "__main__":
    sys.exit(main())

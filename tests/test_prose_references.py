"""What the grader's prose names exists: a renamed file or function leaves no stale pointer.

The docstrings and comments of ``autograder/`` (and of the course's other packages, scripts
and benchmarks) point at files and names in double backticks
(````isolation/sandbox.py````, ````runner.grade_submission````, ````Case.rung````) and at names
in Sphinx roles (``:func:`.intake.prepare```, ``:meth:`Zygote.launch```). Each is checked:

* a path ending in ``.py`` exists: from the repository's root, from the folder of the file
  naming it or one above it (``exercises/draw.py`` in ``grading/``); a bare file name
  anywhere in our folders, and ``path.py::name`` names a top-level definition there;
* ``module.name``, where ``module`` is one of our modules (named in full, or by its last
  parts: ``sandbox``, ``isolation.sandbox``), names a top-level definition, import or
  submodule of it, and ``module.Class.member`` a member of that class (a method, a class
  attribute or field, a ``self.member`` assignment); ``Class.member`` the same for one of our
  classes; a role's bare name, a name of the file naming it or of one of our modules.

What cannot be told apart is skipped, never guessed: a short name that is also a variable's
(````child.refused_tasks```` names the attribute of an instance called child, not of
``isolation/child.py``) when the attribute is one of ours somewhere; a file name that looks
like an example of a learner's misnamed file (````Attention.py````, ````atention.py````);
names outside our packages (``np.allclose``), and file names such as ``summary.png``.
"""
from __future__ import annotations

import ast
import difflib
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("autograder", "mha_exercises", "solutions", "lab")  # importable: module.name
FOLDERS = PACKAGES + ("scripts", "bench", "tests")  # where a named file may be
# Not tests/: a test quotes references as its data (a stale one on purpose, as below).
SCANNED = ("autograder", "mha_exercises", "solutions", "lab", "scripts", "bench")
# Names of files rather than of attributes (``summary.md``, ``class.json``).
EXTENSIONS = {"json", "csv", "md", "png", "yml", "yaml", "toml", "txt", "zip", "html", "npz", "pt", "ipynb",
              "cfg", "ini", "log", "pdf", "svg", "gz", "tar", "sh", "js", "css", "py"}

BACKTICKED = re.compile(r"``([^`\n]+?)``")
ROLE = re.compile(r":(func|meth|class|mod|data|attr|exc|obj):`~?([^`\n]+)`")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


# ------------------------------------------------------------------------- what is defined

@dataclass
class Defined:
    top: set  # module-level names: defs, classes, assignments, imports
    classes: dict  # class name -> its members (nested classes' too, by their own name)
    anywhere: set  # every name defined in the file at any depth, and every attribute assigned


def _targets(node) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for elt in node.elts for n in _targets(elt)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return []


def _bound(stmt) -> list[str]:
    """The names a statement binds in its own scope."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [n for t in stmt.targets for n in _targets(t)]
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        return _targets(stmt.target)
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return _targets(stmt.target)
    return []


def _scope(body) -> set:
    """Names bound by a module's or a class's body, through if/try/with/for blocks."""
    names = set()
    for stmt in body:
        names.update(_bound(stmt))
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                names |= _scope(getattr(stmt, field, []) or [])
    return names


@functools.cache
def defined(path: Path) -> Defined:
    tree = ast.parse(path.read_text())
    classes, anywhere = {}, set()
    for node in ast.walk(tree):
        anywhere.update(_bound(node) if isinstance(node, ast.stmt) else [])
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            anywhere.add(node.attr)
        if isinstance(node, ast.ClassDef):
            members = _scope(node.body)
            for inner in ast.walk(node):
                if (isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store)
                        and isinstance(inner.value, ast.Name) and inner.value.id in ("self", "cls")):
                    members.add(inner.attr)
            classes.setdefault(node.name, set()).update(members)
    return Defined(_scope(tree.body), classes, anywhere)


@functools.cache
def modules() -> dict[str, Path]:
    """Our modules by dotted name: a file, a package's ``__init__.py`` or a namespace folder."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
            for i in range(1, len(parts)):  # a namespace portion (grading/, classroom/) has no file
                found.setdefault(".".join(parts[:i]), path.parents[len(parts) - 1 - i])
    return found


@functools.cache
def our_files() -> dict[str, list[Path]]:
    by_name = {}
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            by_name.setdefault(path.name, []).append(path)
    return by_name


@functools.cache
def attributes_anywhere() -> set:
    return {n for path in modules().values() if path.is_file() for n in defined(path).anywhere}


@functools.cache
def classes_named() -> dict[str, list[set]]:
    found = {}
    for path in set(modules().values()):
        if path.is_file():
            for name, members in defined(path).classes.items():
                found.setdefault(name, []).append(members)
    return found


def _members(module: str, rest: list[str]) -> str:
    """"ok" if ``rest`` is defined in ``module``; "missing" if its first name is not, "stale"
    if a member of one of its classes is not; "skip" if it cannot tell."""
    path = modules()[module]
    if f"{module}.{rest[0]}" in modules():
        return "ok" if len(rest) == 1 else _members(f"{module}.{rest[0]}", rest[1:])
    if not path.is_file() or rest[0] not in defined(path).top:
        return "missing"
    if len(rest) == 1:
        return "ok"
    if rest[0] in defined(path).classes:
        return "ok" if rest[1] in defined(path).classes[rest[0]] else "stale"
    return "skip"  # an import or a value: its members are another module's


# ------------------------------------------------------------------------- one reference

def _dotted(parts: list[str], strict: bool, where: Path | None = None) -> str:
    """"ok", "stale" or "skip" for ``a.b.c`` (``strict``: ``a`` must name a module in full;
    ``where``: the file naming it, which sees a module by a short name only from inside the
    module's package or by importing it)."""
    for i in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:i])
        named = [m for m in modules() if m == prefix or (not strict and m.endswith("." + prefix)
                                                          and _sees(where, m))]
        if named:
            break
    else:
        named, i = [], 0
    if not named:  # not one of our modules: one of our classes?
        if strict or parts[0] not in classes_named():
            return "stale" if strict else "skip"
        return "ok" if any(parts[1] in members for members in classes_named()[parts[0]]) else "stale"
    found = {_members(m, parts[i:]) for m in named}
    for answer in ("ok", "skip", "stale"):
        if answer in found:
            return answer
    # Missing from the module: stale, unless the short name may be a variable's (an instance's).
    return "stale" if parts[0] in PACKAGES or parts[i] not in attributes_anywhere() else "skip"


def _sees(where: Path | None, module: str) -> bool:
    """Whether the file ``where`` may mean ``module`` by its short name: it is in the module's
    package, or imports it (``memory.failcnt`` in a benchmark is a cgroup's file, not
    ``drivers/memory.py``)."""
    if where is None or where.relative_to(ROOT).parts[0] == module.split(".")[0]:
        return True
    return module.rsplit(".", 1)[-1] in _imported_names(where)


@functools.cache
def _imported_names(path: Path) -> set:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {part for a in node.names for part in (a.asname or a.name).split(".")}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names} | set((node.module or "").split("."))
    return names


def _path(text: str, where: Path) -> str:
    file, _, name = text.partition("::")
    if any(c in file for c in "<>*{}$ ") or file.startswith(("/", "~")):
        return "skip"
    if "/" not in file:
        if re.fullmatch(r"[a-z_][a-z0-9_]*\.py", file) is None:
            return "skip"  # Attention.py, heads-1.py: a learner's misnamed file, by way of example
        if file in our_files() or (where.parent / file).exists():
            return "ok"
        return "skip" if difflib.get_close_matches(file, our_files(), n=1, cutoff=0.85) else "stale"
    for base in [ROOT, ROOT / "autograder", *(p for p in where.parents if ROOT in p.parents)]:
        if (base / file).is_file():
            return "stale" if name and name.split(".")[0] not in defined(base / file).top else "ok"
    return "stale"


def verdict(kind: str, text: str, where: Path) -> str:
    """"ok", "stale" or "skip" for one reference in the file ``where``; ``kind``: "``" for
    double backticks, else the role (func, meth, class, mod, ...)."""
    text = text.strip().removesuffix("()")
    here = ".".join(where.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    if kind == "``":
        if text.endswith(".py") or ".py::" in text:
            return _path(text, where)
        if DOTTED.fullmatch(text) is None or text.rsplit(".", 1)[1] in EXTENSIONS:
            return "skip"
        return _dotted(text.split("."), strict=False, where=where)
    if text.startswith("."):  # relative to the package of the file naming it
        dots = len(text) - len(text.lstrip("."))
        package = here.split(".")[: len(here.split(".")) - dots + (where.name == "__init__.py")]
        text = ".".join(package) + "." + text[dots:]
        return ("ok" if text in modules() else "stale") if kind == "mod" else _dotted(text.split("."), True)
    if kind == "mod":
        return "ok" if text in modules() else "stale"
    parts = text.split(".")
    d = defined(where)
    if len(parts) == 1:  # a name of this file (a method in its class's docstring), or a module's
        return "ok" if text in d.top.union(*d.classes.values()) or any(p.is_file() and text in defined(p).top
                                                 for p in modules().values()) else "stale"
    if parts[0] in d.classes:
        return "ok" if parts[1] in d.classes[parts[0]] else "stale"
    return _dotted(parts, strict=parts[0] in PACKAGES)


def references(path: Path):
    """``(line, kind, text)`` of each reference in the file."""
    source = path.read_text()
    for pattern, kind in ((BACKTICKED, None), (ROLE, "role")):
        for m in pattern.finditer(source):
            line = source.count("\n", 0, m.start()) + 1
            yield (line, "``", m.group(1)) if kind is None else (line, m.group(1), m.group(2))


# ------------------------------------------------------------------------- the checks

@pytest.fixture(scope="module")
def checked():
    out = []
    for path in sorted(p for folder in SCANNED for p in (ROOT / folder).rglob("*.py")):
        for line, kind, text in references(path):
            out.append((path.relative_to(ROOT).as_posix(), line, kind, text, verdict(kind, text, path)))
    return out


def test_every_named_file_and_name_exists(checked):
    stale = [f"{p}:{line}: {text}" for p, line, kind, text, v in checked
             if v == "stale"]
    assert not stale, "no longer exists (renamed or removed?):\n" + "\n".join(stale)


def test_the_check_is_not_vacuous(checked):
    """What it skips is mostly no reference (``mha_exercises``, ``check()``, ``grades.csv``);
    what it resolves numbers in the hundreds (327 when this was written)."""
    assert sum(v == "ok" for *_, v in checked) >= 250


HERE = ROOT / "autograder" / "classroom" / "cli.py"


@pytest.mark.parametrize("kind, text, expected", [
    ("``", "isolation/sandbox.py", "ok"),
    ("``", "isolation/sandbox_old.py", "stale"),  # a renamed file
    ("``", "autograder/isolation/sandbox.py", "ok"),
    ("``", "reexec.py", "ok"),
    ("``", "command_line.py", "stale"),
    ("``", "Attention.py", "skip"),  # a learner's misnamed file, by way of example
    ("``", "tests/test_import_placement.py::test_the_check_flags_a_planted_violation", "ok"),
    ("``", "tests/test_import_placement.py::test_gone", "stale"),
    ("``", "runner.grade_submission", "ok"),
    ("``", "runner.grade_everything", "stale"),  # a renamed function
    ("``", "worker._Pristine", "stale"),  # a name that once was
    ("``", "isolation.sandbox.Zygote.launch", "ok"),
    ("``", "sandbox.Zygote.confinement", "ok"),  # self.confinement = ... in a method
    ("``", "sandbox.Zygote.teleport", "stale"),
    ("``", "autograder.SECRET", "ok"),
    ("``", "Case.rung", "ok"),
    ("``", "Case.rungs", "stale"),
    ("``", "np.allclose", "skip"),
    ("``", "summary.png", "skip"),
    ("``", "child.refused_tasks", "skip"),  # an instance named child, not isolation/child.py
    ("func", ".ahead.Ahead.start", "ok"),
    ("func", ".ahead.Ahead.stop", "stale"),
    ("mod", ".write.gradescope", "ok"),
    ("mod", ".write.gradescopes", "stale"),
    ("func", "parser", "ok"),  # this file's
    ("func", "grade_submission", "ok"),  # one of our modules'
    ("func", "grade_it_all", "stale"),
])
def test_a_reference_is_judged(kind, text, expected):
    assert verdict(kind, text, HERE) == expected


def test_a_short_name_outside_its_package_is_ours_only_when_imported():
    """A benchmark's ``memory.failcnt`` is a cgroup's file; ``learner_readme.readme`` in a
    benchmark that imports learner_readme is ours, and stale when renamed."""
    bench = ROOT / "bench" / "gradescope_fit.py"
    assert verdict("``", "memory.failcnt", bench) == "skip"
    assert verdict("``", "memory.failcnt", ROOT / "autograder" / "isolation" / "drivers" / "core.py") == "stale"
    release = ROOT / "bench" / "release.py"
    assert "learner_readme" in _imported_names(release)
    assert verdict("``", "learner_readme.readme", release) == "ok"
    assert verdict("``", "learner_readme.readme_of_old", release) == "stale"

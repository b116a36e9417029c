"""When an import may sit inside a function in ``autograder/``, and the check that it does so
only then.

An import belongs at the top of its module: there a reader sees what the module needs, and a
cycle fails at once instead of on the first call. One stands inside a function only for a
reason the module's top cannot serve:

* **heavy**: a third-party module that costs tens of milliseconds or more to import (torch,
  NumPy, matplotlib, rich, markdown-it; or one of ours that imports one of them), which a light
  path must not pay: ``mha-grade``'s start-up before its exec (``classroom/cli.py``, ``--help``
  included), the process that runs before the zygote is forked, the kernel's ``check()``
  client (``autograder/service/__init__.py``), ``build_release.py --book-config``;
* **order**: what must come after something else at run time: torch once
  ``OMP_NUM_THREADS`` is set (``isolation/zygote.py``), the checks and the references once the
  zygote is forked (``.importlinter``, the ``before-the-fork`` contract), the class read and
  drawn by the process ahead of a batch, not by the image that forks it (``classroom/ahead.py``);
* **platform**: a module some OS lacks (``pwd``, ``resource``, ``landlockpy`` on Windows or
  macOS) on a path that runs on every OS (``isolation/practice.py`` runs there);
* **a secret folder** (``grading/``, ``classroom/``, ``solutions``) reached from public code,
  where a learner release lacks it: by name (``importlib.import_module``), never an import
  statement (``.importlinter``): nothing of it shows here;
* **a cycle**: none; the contract has no cycle between folders, and one inside a folder is
  broken by moving code, not by hiding an import.

The check: every import inside a function of ``autograder/`` is of a module in ``ALLOWED``
(heavy or platform modules, each with its reason; anywhere), or carries a trailing comment
``# deferred: <why>`` on its line, the reason that holds there; and none imports a module its
file already imports at the top.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "autograder"

# Modules that may be imported inside a function anywhere in autograder/ (and their submodules).
ALLOWED = {
    "torch": "heavy (1-1.5 s), and in order: zygote.preload imports it after OMP_NUM_THREADS is "
             "set, and no process imports it before the zygote is forked",
    "numpy": "heavy (0.1 s): mha-grade's start-up and check()'s client never pay it; "
             "zygote.preload imports it for the children",
    "matplotlib": "heavy (0.3 s with pyplot): summary.png's drawing only",
    "rich": "heavy (20 ms): the terminal tables only; JSON writers and check()'s report print none",
    "markdown_it": "heavy (25 ms): the HTML feedback pages only",
    "landlockpy": "platform: installed on Linux only (pyproject.toml)",
    "pwd": "platform: POSIX only, and sandbox.py is imported on every OS (practice.py)",
    "resource": "platform: POSIX only, and a spawned child (practice.py) runs on Windows too",
}


DEFERRED = re.compile(r"#\s*deferred:\s*\S.{9,}")  # a reason of a few words at least


@dataclass(frozen=True)
class Misplaced:
    path: str
    line: int
    module: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: import of {self.module} inside a function: {self.why}"


def module_name(path: str) -> str:
    """``autograder/isolation/sandbox.py`` -> ``autograder.isolation.sandbox``."""
    parts = list(Path(path).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _ours(name: str) -> bool:
    where = ROOT.joinpath(*name.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file() or (
        where.is_dir() and name.split(".")[0] in (PACKAGE, "solutions", "lab", "mha_exercises"))


def imported(node: ast.Import | ast.ImportFrom, path: str) -> list[str]:
    """The modules one import statement loads: ``from ..isolation import sandbox`` in
    ``autograder/classroom/cli.py`` is ``autograder.isolation.sandbox`` (a submodule),
    ``from ..spec import POINTS`` is ``autograder.spec``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module_name(path).split(".")
        if not path.endswith("__init__.py"):
            package = package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    names = [f"{base}.{alias.name}" for alias in node.names]
    return [name if _ours(name) else base for name in names]


def _comments(source: str) -> dict[int, str]:
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string
    return found


def _split(tree: ast.Module):
    """The module's top-level import statements (class bodies and ``try`` blocks included) and
    those inside a function."""
    top, inside = [], []

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                (inside if in_function else top).append(child)
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(tree, False)
    return top, inside


def misplaced(source: str, path: str) -> list[Misplaced]:
    """Each import inside a function of ``source`` (the file ``path``, relative to the
    repository) that the rule of this module's docstring does not allow."""
    top, inside = _split(ast.parse(source))
    at_top = {name for node in top for name in imported(node, path)}
    comments = _comments(source)
    out = []
    for node in inside:
        reason = any(DEFERRED.search(comments.get(line, "")) for line in range(node.lineno, node.end_lineno + 1))
        for name in imported(node, path):
            if name in at_top:
                out.append(Misplaced(path, node.lineno, name, "the module's top imports it already"))
            elif not reason and not any(name == m or name.startswith(m + ".") for m in ALLOWED):
                out.append(Misplaced(path, node.lineno, name, "not in ALLOWED and no `# deferred: <why>`"))
    return out


def function_imports(source: str) -> int:
    return len(_split(ast.parse(source))[1])


def _files():
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / PACKAGE).rglob("*.py"))


@pytest.fixture(scope="module")
def found() -> list[Misplaced]:
    return [m for path in _files() for m in misplaced((ROOT / path).read_text(), path)]


def test_every_import_inside_a_function_has_its_reason(found):
    wrong = [str(m) for m in found]
    assert not wrong, "\n".join(wrong)


def test_every_allowed_module_is_deferred_somewhere():
    used = set()
    for path in _files():
        _, inside = _split(ast.parse((ROOT / path).read_text()))
        used |= {m for node in inside for name in imported(node, path) for m in ALLOWED
                 if name == m or name.startswith(m + ".")}
    assert used == set(ALLOWED), f"not deferred anywhere, remove from ALLOWED: {sorted(set(ALLOWED) - used)}"


EXAMPLE = "autograder/classroom/example.py"


@pytest.mark.parametrize("source, expected", [
    # a needless deferral: json costs nothing and nothing orders it
    ("import os\n\ndef f():\n    import json\n    return json.dumps(os.sep)\n",
     [(4, "json", "not in ALLOWED and no `# deferred: <why>`")]),
    # one of ours, relative, in a method
    ("class A:\n    def f(self):\n        from ..spec import POINTS\n        return POINTS\n",
     [(3, "autograder.spec", "not in ALLOWED and no `# deferred: <why>`")]),
    # a submodule named in `from package import name`, in a nested function
    ("def f():\n    def g():\n        from . import batch\n    return g\n",
     [(3, "autograder.classroom.batch", "not in ALLOWED and no `# deferred: <why>`")]),
    # a reason too short to say anything
    ("def f():\n    import json  # deferred: x\n", [(2, "json", "not in ALLOWED and no `# deferred: <why>`")]),
    # imported at the top already: needless even when allowed or commented
    ("import numpy\n\ndef f():\n    import numpy  # deferred: heavy, not at start-up\n",
     [(4, "numpy", "the module's top imports it already")]),
    # allowed: a heavy module, wherever it is
    ("def f():\n    import matplotlib.pyplot as plt\n    from rich.table import Table\n", []),
    # a reason given on the line (of a statement on several lines)
    ("def f():\n    from .batch import (  # deferred: NumPy, not before the exec\n        main)\n", []),
    # at the top, in a try block or a class body: not inside a function
    ("try:\n    import json\nexcept ImportError:\n    pass\nclass A:\n    import os\n", []),
])
def test_the_check_flags_a_planted_violation(source, expected):
    assert [(m.line, m.module, m.why) for m in misplaced(source, EXAMPLE)] == expected

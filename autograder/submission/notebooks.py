"""Notebook submissions: the learner's exercise code, taken out of chapter notebooks.

A learner may hand in the chapter notebooks (``01_attention.ipynb``, ...) in which they wrote
their functions instead of the module files. We never execute a notebook: we read its JSON,
keep the code that *defines* exercises and write it out as module sources
(``{"attention": "...", ...}``), which the pipeline grades exactly like module files.

What is kept, per exercise module (``spec.MODULE_OF``):

* top-level ``def``/``class`` statements whose name is an exercise id (the contract names:
  ``softmax``, ``MultiHeadAttention``, ...), and every ``def``/``class`` of a code cell tagged
  with an exercise id (``softmax`` or ``exercise:softmax``), which goes to that exercise's module;
* what those definitions need, transitively: the names they read *as globals* (found with
  ``symtable``, so a function's own parameters and locals such as ``scores`` or ``mask``
  never pull in the chapter's top-level ``scores = ...``), bound by the notebook's imports,
  its helper functions and classes, and top-level assignments; kept in notebook order;
* ``attention = load("attention")`` (how the chapters import the exercise modules) becomes
  ``from . import attention``, and ``from mha_exercises.masking import x`` becomes
  ``from .masking import x``, so a learner's layer calls the learner's own attention, as a
  module file would (the pipeline then swaps in the reference where the contract says so).

Everything else (cells that train, plot or call ``check``) is left out, so nothing a notebook
does besides defining the exercises runs in the grader. A notebook that is not valid JSON
cannot be read; the modules of its chapter then raise an ``ImportError`` that says so, which
the pipeline reports as an error for exactly those exercises while the rest are graded.
"""
from __future__ import annotations

import ast
import json
import re
import symtable

from ..spec import MODULE_OF

MODULES = tuple(dict.fromkeys(MODULE_OF.values()))  # chapter order: attention (1) ... efficient (7)
CONTRACT_NAMES = frozenset(MODULE_OF)
PACKAGES = ("mha_exercises", "solutions")  # imports of these become imports of the submission's own modules
MAX_NOTEBOOK = 20 * 2**20  # bytes: chapter notebooks with outputs are well below this
_MAGIC = re.compile(r"^\s*[%!?]")  # IPython magics and shell escapes are not Python (matched per line)
# Blanks, never \s: with re.M, ``^\s*`` also crosses newlines, so a cell of many blank lines
# makes every line start rescan the rest of the cell (quadratic: 60k lines took 30 s).
_DEF = re.compile(r"^[ \t\f]*(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)", re.M)


def modules_from_notebooks(notebooks: dict[str, bytes]) -> dict[str, str]:
    """Module sources for the exercises defined in ``notebooks`` (file name -> raw bytes)."""
    return extract_notebooks(notebooks)[0]


def extract_notebooks(notebooks: dict[str, bytes]) -> tuple[dict[str, str], list[str]]:
    """``({module: source}, taken)``: the modules, and per notebook which exercises it gave."""
    defs: dict[str, tuple[int, str, str, str]] = {}  # exercise name -> (priority, module, source, notebook)
    pools: list[_Pool] = []
    broken: dict[str, str] = {}  # notebook name -> why it could not be read
    for name in sorted(notebooks):
        cells, error = _code_cells(notebooks[name])
        if error:
            broken[name] = error
            continue
        pool = _Pool(name)
        pools.append(pool)
        for tags, source in cells:
            pool.add_cell(source, _exercise_tag(tags), defs)
    modules: dict[str, str] = {}
    for module in MODULES:
        chosen = {n: d for n, d in defs.items() if d[1] == module}
        if chosen:
            modules[module] = _assemble(module, chosen, pools)
    for name, error in broken.items():
        chapter = _chapter_of(name)
        for module in [chapter] if chapter else MODULES:
            if module not in modules:
                message = f"notebook {name!r} could not be read ({error}), so its exercises were not graded"
                modules[module] = f"raise ImportError({message!r})\n"
    taken = []
    for pool in pools:
        names = [n for n, d in defs.items() if d[3] == pool.notebook and "/" not in n]
        beyond = (f"; code cell(s) {', '.join(map(str, pool.beyond))} too deep or too large for the grader's "
                  "parser, left out" if pool.beyond else "")
        if names:
            taken.append(f"{pool.notebook} (the definitions of {', '.join(names)}; no other cell was run{beyond})")
        elif beyond:
            taken.append(f"{pool.notebook} (no exercise definition{beyond})")
    taken += [f"{name} (unreadable: {error})" for name, error in broken.items()]
    return modules, taken


# ------------------------------------------------------------------------------- reading

def _code_cells(raw: bytes) -> tuple[list[tuple[list, str]], str | None]:
    """``[(tags, source)]`` of the code cells, or an error saying why there are none."""
    if len(raw) > MAX_NOTEBOOK:
        return [], f"larger than {MAX_NOTEBOOK} bytes"
    try:
        nb = json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as err:
        return [], f"not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}"
    except RecursionError:
        return [], "its JSON is nested too deeply"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return [], "not a Jupyter notebook: no list of cells"
    cells = []
    for cell in nb["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) else source
        meta = cell.get("metadata")
        tags = meta.get("tags", []) if isinstance(meta, dict) else []
        if isinstance(source, str):
            cells.append((tags if isinstance(tags, list) else [], source))
    return cells, None


def _exercise_tag(tags: list) -> str | None:
    for tag in tags:
        if isinstance(tag, str):
            name = tag.split(":", 1)[-1].strip()
            if name in CONTRACT_NAMES:
                return name
    return None


def _chapter_of(notebook: str) -> str | None:
    """The module a chapter notebook teaches, from ``01_...`` or a module name in its file name."""
    digits = re.match(r"\D{0,3}(\d+)", notebook)
    if digits and 1 <= int(digits.group(1)) <= len(MODULES):
        return MODULES[int(digits.group(1)) - 1]
    return next((m for m in MODULES if m in notebook.lower()), None)


class _Pool:
    """The top-level statements of one notebook, by the names they bind."""

    def __init__(self, notebook: str):
        self.notebook = notebook
        self.chapter = _chapter_of(notebook)
        self.binders: dict[str, tuple[str, tuple]] = {}  # name -> (source, position), the last binding wins
        self.cells = 0
        self.beyond: list[int] = []  # code cells (from 1) Python's parser could not take here

    def add_cell(self, source: str, tag: str | None, defs: dict) -> None:
        self.cells += 1
        text = "\n".join("" if _MAGIC.match(line) else line for line in source.splitlines())
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
            if isinstance(err, (RecursionError, MemoryError)):
                self.beyond.append(self.cells)
            # Kept as it is, so grading reports the syntax error for that exercise's module,
            # as it would for a module file; a cell defining no exercise is simply left out.
            # (RecursionError, MemoryError: a cell too deep or too big for the parser here,
            # which the learner's confined process then reports the same way.)
            names = [n for n in _DEF.findall(text) if n in CONTRACT_NAMES] or ([tag] if tag else [])
            for name in names:
                self._define(defs, name, MODULE_OF[name], text + "\n")
            return
        lines = text.splitlines()
        for index, node in enumerate(tree.body):
            segment = _segment(lines, node)
            where = (self.notebook, self.cells, index)  # notebook order, for the module's preamble
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if node.name in CONTRACT_NAMES:
                    self._define(defs, node.name, MODULE_OF[node.name], segment)
                elif tag:
                    # A helper in a tagged cell: belongs with the tagged exercise.
                    self.binders[node.name] = (segment, where)
                    self._define(defs, f"{tag}/{node.name}", MODULE_OF[tag], segment)
                else:
                    self.binders[node.name] = (segment, where)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                rewritten = _relative_import(node)
                for bound in _bound_names(node):
                    self.binders[bound] = (rewritten or segment, where)
            elif isinstance(node, ast.Assign) and _load_call(node):
                target, module = _load_call(node)
                self.binders[target] = (f"from . import {module} as {target}" if target != module
                                        else f"from . import {module}", where)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for bound in _bound_names(node):
                    self.binders[bound] = (segment, where)

    def _define(self, defs: dict, name: str, module: str, source: str) -> None:
        # A definition in its own chapter's notebook beats a redefinition elsewhere; within
        # that, the later one wins, as when the notebook runs top to bottom.
        priority = 1 if self.chapter == module else 0
        if name not in defs or priority >= defs[name][0]:
            defs[name] = (priority, module, source, self.notebook)


def _assemble(module: str, chosen: dict, pools: list[_Pool]) -> str:
    """A module: the chosen definitions after the imports, helpers and constants they read."""
    body = [d[2] for d in chosen.values()]
    defined = {name.split("/")[-1] for name in chosen}
    needed: dict[str, tuple[str, tuple]] = {}  # bound name -> (statement, where it was in the notebooks)
    pending = [name for source in body for name in _global_reads(source)]
    seen = set()
    while pending:
        name = pending.pop(0)
        if name in seen or name in defined:
            continue
        seen.add(name)
        binder = _find_binder(name, module, pools)
        if binder is None:
            continue  # a builtin, or a name the notebook never binds: Python says so when it runs
        needed[name] = binder
        pending.extend(_global_reads(binder[0]))
    header = f'"""Exercises of `{module}`, taken from the learner\'s notebooks by the grader."""\n'
    # In notebook order, as the learner ran them; one statement may bind several names.
    ordered = sorted(dict.fromkeys(needed.values()), key=lambda b: b[1])
    preamble = list(dict.fromkeys(statement for statement, _ in ordered))
    return header + "\n".join(preamble) + "\n\n\n" + "\n\n".join(body)


def _find_binder(name: str, module: str, pools: list[_Pool]) -> tuple[str, tuple] | None:
    # The module's own chapter notebook first, then the others (a helper defined in chapter 1
    # and used in chapter 4 is still found).
    if name in CONTRACT_NAMES and MODULE_OF[name] != module:
        return f"from .{MODULE_OF[name]} import {name}", ("", 0, -1)  # imports of exercises first
    for pool in sorted(pools, key=lambda p: p.chapter != module):
        if name in pool.binders:
            return pool.binders[name]
    return None


# --------------------------------------------------------------------------------- ast helpers

def _segment(lines: list[str], node: ast.stmt) -> str:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "\n".join(lines[first - 1: node.end_lineno]) + "\n"


def _global_reads(source: str) -> list[str]:
    """The names ``source`` reads from the module's globals, in order of first appearance.

    ``symtable`` does Python's own scoping: a function's parameters and locals, and the
    variables of its comprehensions, are not globals; a name only assigned at the top of
    ``source`` (the statement's own target) is not read.
    """
    try:
        top = symtable.symtable(source, "<notebook>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    reads: list[str] = []
    tables = [top]
    while tables:
        table = tables.pop(0)
        for sym in table.get_symbols():
            if not (sym.is_referenced() and sym.is_global()):
                continue
            if table is top and sym.is_assigned():
                continue
            reads.append(sym.get_name())
        tables.extend(table.get_children())
    return list(dict.fromkeys(reads))


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Import):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, ast.ImportFrom):
        return [a.asname or a.name for a in node.names if a.name != "*"]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _load_call(node: ast.Assign) -> tuple[str, str] | None:
    """``name = load("module")`` -> ``(name, module)``."""
    call = node.value
    if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and isinstance(call, ast.Call)
            and isinstance(call.func, (ast.Name, ast.Attribute))
            and (getattr(call.func, "id", None) or getattr(call.func, "attr", None)) == "load"
            and len(call.args) == 1 and isinstance(call.args[0], ast.Constant)
            and call.args[0].value in MODULES):
        return node.targets[0].id, call.args[0].value
    return None


def _relative_import(node: ast.Import | ast.ImportFrom) -> str | None:
    """An import of the exercise package, rewritten to the submission's own modules."""
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        package, _, module = node.module.partition(".")
        names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
        if package in PACKAGES and module in MODULES:
            return f"from .{module} import {names}"
        if package in PACKAGES and not module:
            kept = [a for a in node.names if a.name in MODULES]
            if kept:
                return "from . import " + ", ".join(
                    a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
    if isinstance(node, ast.Import):
        parts = []
        for a in node.names:
            package, _, module = a.name.partition(".")
            if package in PACKAGES and module in MODULES and a.asname:
                parts.append(f"from . import {module} as {a.asname}")
        if parts:
            return "\n".join(parts)
    return None

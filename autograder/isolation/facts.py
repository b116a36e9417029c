"""What the grader knows of a submission's sources without running them: which modules parse,
which names a module's top level binds, whether it raises NotImplementedError anywhere.

The learner's code runs in a child whose every message is the learner's to write (its code
can walk the child's frames, patch the child's functions, or write to its socket itself), so
whatever a report states in the grader's own words must come from somewhere else: the
grader's clock and the kernel's counts (``exchange.py``), and these facts, read from the
source by Python's own parser in the grader's process (parsing runs none of the learner's
code). ``exchange.settle`` holds the child's words to them.
"""
from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field

_KEPT = 256  # modules' facts kept (a batch parses each learner's modules once)


@dataclass
class ModuleFacts:
    """``error``: why the module does not parse (``"SyntaxError at line 3"``: the parser's type
    and line, no text of the learner's), or ""; ``names``: every name its top level may bind
    (None when it could bind any: ``globals()``, ``exec``, ``from x import *``, ``setattr``);
    ``not_implemented``: some ``raise NotImplementedError`` is in it."""

    error: str = ""
    line: int | None = None
    words: str = ""  # the parser's own account: "SyntaxError at line 3: invalid syntax (`def f(:`)"
    names: frozenset | None = field(default_factory=frozenset)
    not_implemented: bool = False

    def may_define(self, name: str) -> bool:
        return self.names is None or name in self.names


_FACTS: dict[str, ModuleFacts] = {}
_ANY_NAME = frozenset({"globals", "vars", "exec", "eval", "setattr", "__dict__", "locals", "__import__",
                       "import_module", "sys", "modules"})


def of(source: str) -> ModuleFacts:
    """The facts of one module's source (cached by its hash)."""
    key = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    hit = _FACTS.get(key)
    if hit is None:
        if len(_FACTS) >= _KEPT:
            _FACTS.clear()
        hit = _FACTS[key] = _read(source)
    return hit


def _read(source: str) -> ModuleFacts:
    try:
        tree = ast.parse(source, filename="<submission>", type_comments=False)
    except SyntaxError as err:  # IndentationError and TabError too
        line = err.lineno if type(err.lineno) is int and err.lineno > 0 else None
        error = f"{type(err).__name__}" + (f" at line {line}" if line else "")
        words = error + (f": {str(err.msg)[:300]}" if err.msg else "")
        code = (err.text or "").strip()[:120]
        return ModuleFacts(error, line, words + (f" (`{code}`)" if code else ""), None)
    except (RecursionError, MemoryError, ValueError):  # nesting past the parser's stack; a NUL byte
        error = "a source Python's parser cannot read (nested too deeply, or a NUL byte)"
        return ModuleFacts(error, None, error, None)
    names: set[str] | None = set()
    not_implemented = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            not_implemented |= (isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
                                or isinstance(exc, ast.Attribute) and exc.attr == "NotImplementedError")
        if names is None:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    names = None
                    break
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Name) and node.id in _ANY_NAME or isinstance(node, ast.Attribute) and (
                node.attr in _ANY_NAME):
            names = None  # a name made at run time: any may be bound
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return ModuleFacts("", None, "", None if names is None else frozenset(names), not_implemented)

"""Which implementation a chapter notebook runs: yours, or the reference solutions.

Every chapter notebook starts with ``attention = load("attention")`` instead of a plain
import. For a learner this is ``import mha_exercises.attention``: the notebook runs *your*
code. The book build and the notebook tests set ``MHA_BACKEND=solutions`` so that the
published pages show every cell executed against the reference solutions.

A plain import runs a module once per kernel: after you edit ``attention.py``, the kernel
would keep running the old code. So ``load`` first compares the code the kernel holds with
the files (function by function, compiled, nothing run) and reloads, in place, every module
whose file changed and every module that imports one of those. In a notebook it reloads
with IPython's ``superreload``, which also updates the functions, classes and instances the
notebook bound before (``f = attention.softmax``, ``mha = layer.MultiHeadAttention(...)``);
elsewhere with ``importlib.reload``. :func:`outdated` is the comparison, which ``check()``
uses to say when the notebook runs older code than the file it graded.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import os
import sys
import types

BACKENDS = {"learner": "mha_exercises", "solutions": "solutions"}
OWN = ("backend", "check")  # the course's modules in the package: never the learner's code


def backend() -> str:
    """The active backend's name: ``$MHA_BACKEND``, or ``"learner"`` when unset."""
    name = os.environ.get("MHA_BACKEND", "learner")
    if name not in BACKENDS:
        raise ValueError(f"MHA_BACKEND={name!r} is not one of {sorted(BACKENDS)}")
    return name


def load(module: str):
    """Import one exercise module (``"attention"``, ``"masking"``, ...) from the active backend,
    reloading first whatever of the package was edited since the kernel ran it."""
    package = BACKENDS[backend()]
    if package == BACKENDS["learner"] and module in _PUBLISHED:  # see prerequisite()
        package = BACKENDS["solutions"]
    try:
        refresh(package)
        found = importlib.import_module(f"{package}.{module}")
        _reach()
        return found
    except ModuleNotFoundError as err:
        if package == "solutions" and err.name in ("solutions", f"solutions.{module}"):
            raise ModuleNotFoundError(
                f"MHA_BACKEND=solutions but the reference solutions are not installed "
                f"(a learner release has none): unset MHA_BACKEND to run your own code"
            ) from err
        raise


# ------------------------------------------------ an earlier chapter's exercises, not done yet

_PUBLISHED: set[str] = set()  # modules this kernel runs from the published references instead

# The chapter of each exercise module: a module's imports from a module of an earlier chapter are
# that chapter's exercises, which prerequisite() follows (tests/test_learner_notebooks.py checks
# this against autograder/spec.py).
CHAPTER = {"attention": 1, "masking": 2, "heads": 3, "layer": 4, "analysis": 5, "pruning": 6,
           "efficient": 7, "language_model": 8}


def prerequisite(module: str, *names: str, _chapter: int | None = None):
    """An earlier chapter's module, for the exercises of it that this chapter uses (``names``).

    With your code (``MHA_BACKEND`` unset), where one of ``names`` is still a stub in
    ``mha_exercises/<module>.py``: if the reference of that module is installed (your instructor
    published it, after its deadline), the chapter runs with it, from now on also wherever the
    chapter's support code loads the module or one of your modules imports from it, and says so;
    if not, it says what to do first, and the chapter stops at the first cell that uses it, with
    that exercise's own error. Where your ``<module>.py`` is done, the same holds for what it
    imports from a module of a chapter before it (``layer.py``'s ``scaled_dot_product_attention``)."""
    found = load(module)
    if backend() != "learner":
        return found
    todo = stubs(found.__file__, names) if module not in _PUBLISHED else {}
    if module in _PUBLISHED:
        return found
    if not todo:  # yours, done: what it imports from earlier chapters must run too
        chapter = CHAPTER.get(module, 0) if _chapter is None else _chapter
        for origin, imported in imported_names(_read(found.__file__) or "", BACKENDS["learner"]).items():
            if origin != module and CHAPTER.get(origin, chapter) < chapter:
                prerequisite(origin, *sorted(imported), _chapter=chapter)
        return found
    try:
        importlib.import_module(f"{BACKENDS['solutions']}.{module}")
    except ImportError:
        for message in dict.fromkeys(todo.values()):
            print(f"Not done yet, and used by this chapter: {message}. Do it first: the chapter stops at "
                  f"the first cell that uses it.")
        return found
    _PUBLISHED.add(module)
    print(f"Not done yet: {', '.join(todo)} in mha_exercises/{module}.py. This chapter runs the published "
          f"reference solutions of {module}.py instead (yours again in a new kernel once it is done).")
    return load(module)


def _reach() -> None:
    """In your modules the kernel has imported, the names they import from a module it runs from
    the published references are the references' (``from .attention import ...`` bound yours)."""
    if not _PUBLISHED:
        return
    for module in loaded(BACKENDS["learner"]).values():
        for origin, names in imported_names(_read(module.__file__) or "", BACKENDS["learner"]).items():
            if origin not in _PUBLISHED:
                continue
            reference = importlib.import_module(f"{BACKENDS['solutions']}.{origin}")
            yours = sys.modules.get(f"{BACKENDS['learner']}.{origin}")
            for name in names:
                if name == origin:  # `from . import attention`
                    if getattr(module, name, None) is yours:
                        setattr(module, name, reference)
                elif hasattr(reference, name) and getattr(module, name, None) is getattr(yours, name, None):
                    setattr(module, name, getattr(reference, name))  # never a name the module redefined


def imported_names(source: str, package: str) -> dict[str, set[str]]:
    """The names ``source`` imports from each of the package's modules, by short module name
    (``from .attention import softmax`` -> ``{"attention": {"softmax"}}``; ``from . import
    heads`` -> ``{"heads": {"heads"}}``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if (node.level == 1 and not node.module) or (node.level == 0 and node.module == package):
            for a in node.names:
                found.setdefault(a.name, set()).add(a.name)
        elif node.level == 1 or (node.level == 0 and (node.module or "").startswith(package + ".")):
            origin = node.module.split(".")[0] if node.level == 1 else node.module.split(".")[1]
            found.setdefault(origin, set()).update(a.name for a in node.names if a.name != "*")
    return {origin: names for origin, names in found.items() if origin not in OWN}


def stubs(path: str, names=()) -> dict[str, str]:
    """Of the functions and classes ``names`` of a module's file, those still a stub (a function,
    or a method of the class, that raises ``NotImplementedError`` at the top of its body), each
    with the message it raises (which says where to implement it). Read, never run."""
    try:
        tree = ast.parse(_read(path) or "")
    except SyntaxError:
        return {}
    found = {}
    for node in tree.body:
        if names and getattr(node, "name", None) not in names:
            continue
        functions = [node] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else (
            [f for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
            if isinstance(node, ast.ClassDef) else [])
        for statement in (s for function in functions for s in function.body):
            if isinstance(statement, ast.Raise) and _raises_not_implemented(statement.exc):
                args = statement.exc.args if isinstance(statement.exc, ast.Call) else []
                text = args[0].value if args and isinstance(args[0], ast.Constant) else f"`{node.name}`"
                found[node.name] = text
                break
    return found


def _raises_not_implemented(exc) -> bool:
    target = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(target, ast.Name) and target.id == "NotImplementedError"


# ------------------------------------------------------------------- reloading what changed

def loaded(package: str) -> dict[str, types.ModuleType]:
    """The package's exercise modules this process has imported, by short name."""
    found = {}
    for name, module in list(sys.modules.items()):
        short = name[len(package) + 1:]
        if (name.startswith(package + ".") and "." not in short and short not in OWN
                and isinstance(module, types.ModuleType) and getattr(module, "__file__", None)):
            found[short] = module
    return found


def refresh(package: str) -> list[str]:
    """Reload, in place and dependencies first, the package's modules whose file changed and
    the modules that import them; the short names reloaded."""
    modules = loaded(package)
    sources = {name: _read(m.__file__) for name, m in modules.items()}
    # A module whose file is gone or unreadable is left as it is: there is nothing to reload from.
    changed = {name for name, m in modules.items() if sources[name] is not None and outdated(m, sources[name])}
    if not changed:
        return []
    imports = {name: package_imports(sources[name] or "", package) & set(modules) for name in modules}
    while True:  # and everything that imports a changed module, transitively
        more = {name for name in modules if imports[name] & changed} - changed
        if not more:
            break
        changed |= more
    order = []
    def visit(name, seen=()):
        if name in order or name in seen:
            return
        for dep in sorted(imports[name] & changed):
            visit(dep, (*seen, name))
        order.append(name)
    for name in sorted(changed):
        visit(name)
    for name in order:
        _reload(modules[name])
    return order


_OLD_OBJECTS: dict = {}  # superreload's record of every earlier version of each object


def _reload(module) -> None:
    if "IPython" in sys.modules:  # in a notebook: update what the notebook already bound, too
        try:
            from IPython.extensions.autoreload import superreload
        except ImportError:
            superreload = None
        if superreload is not None:
            superreload(module, old_objects=_OLD_OBJECTS)
            return
    importlib.reload(module)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def package_imports(source: str, package: str) -> set[str]:
    """Short names of the package's modules that ``source`` imports (``from .masking import``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                names.add(node.module.split(".")[0])
            elif node.level == 1:
                names.update(a.name for a in node.names)
            elif node.level == 0 and node.module and node.module.startswith(package + "."):
                names.add(node.module.split(".")[1])
            elif node.level == 0 and node.module == package:
                names.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name.split(".")[1] for a in node.names if a.name.startswith(package + "."))
    return names


# ------------------------------------------------------------- the kernel's code vs the file

def outdated(module: types.ModuleType, source: str) -> list[str]:
    """The functions and methods (qualified names) whose code in ``module`` differs from
    ``source``, or that ``source`` defines and the module lacks; [] when they agree.

    Compared compiled, never run; line numbers do not count (an edit above a function does
    not make it old), docstrings and bodies do. A source that does not compile differs."""
    try:
        code = compile(source, module.__file__, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return ["(the file does not compile)"]
    in_file: dict = {}
    _functions_of(code, in_file)
    in_kernel = _kernel_functions(module)
    return [name for name, c in in_file.items()
            if name not in in_kernel or _shape(in_kernel[name]) != _shape(c)]


def _functions_of(code: types.CodeType, out: dict) -> None:
    """Functions defined at the top of ``code`` or in its class bodies, by qualified name."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_flags & inspect.CO_OPTIMIZED:  # a function (its nested ones are in its consts)
                out[const.co_qualname] = const
            else:  # a class body
                _functions_of(const, out)


def _kernel_functions(module: types.ModuleType) -> dict:
    out, seen = {}, set()
    filename = module.__file__

    def visit(obj):
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if isinstance(obj, property):
            for f in (obj.fget, obj.fset, obj.fdel):
                visit(f)
        elif isinstance(obj, types.FunctionType):
            if obj.__code__.co_filename == filename:  # not imported ones, nor decorators' wrappers
                out.setdefault(obj.__code__.co_qualname, obj.__code__)
        elif isinstance(obj, type) and id(obj) not in seen and obj.__module__ == module.__name__:
            seen.add(id(obj))
            for value in list(vars(obj).values()):
                visit(value)

    for value in list(vars(module).values()):
        visit(value)
    return out


def _shape(code: types.CodeType) -> tuple:
    """What a function does, without where it sits in the file (line numbers)."""
    consts = tuple(_shape(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
                   for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags, consts)

"""The submission as a package: ``mha_exercises`` made of the learner's sources, in a child.

Loaded afresh for each exercise (its modules run again, with that exercise's proxies); the
exercises the graded one may use can be *proxied*: answered by the grader's reference.
"""
from __future__ import annotations

import importlib
import importlib.util
import linecache
import sys
import traceback
import types

from autograder import LEARNER_SIDE, within
from autograder.spec import MODULE_OF

PACKAGE = "mha_exercises"
_isinstance, _type, _str, _len = isinstance, type, str, len  # learner code may patch builtins


def blocked(name: str) -> bool:
    """Modules a learner's process must never import: the references, and all of the grader's
    but the learner-side harness (``autograder.LEARNER_SIDE``)."""
    if within(name, ("solutions",)):
        return True
    return name.startswith("autograder.") and not within(name, LEARNER_SIDE)


class Blocker:
    """A meta-path finder that refuses the grader's modules and serves the submission."""

    def __init__(self):
        self.package: Submission | None = None

    def find_spec(self, name, path=None, target=None):
        if blocked(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        if self.package is not None and name.startswith(PACKAGE + "."):
            return self.package.find_spec(name)
        return None



class Submission:
    """``mha_exercises`` made of the learner's sources, with some exercises proxied.

    ``proxies`` maps an exercise name to its module: those names are replaced by a function
    that asks the grader for the reference result (one mistake counts once). They are set
    on their own module right after it runs, and on every module that imported them by name
    (``from .heads import split_heads``) once the exercise's module has loaded.

    A *sibling* (a module other than the graded exercise's ``own``) that is missing or fails
    to import becomes a stand-in: its proxies, and for its other exercises placeholders that
    raise when called. So ``from .masking import masked_softmax`` in attention.py still
    works when masking.py is broken, and a mistake there costs only the exercises that call it.
    """

    def __init__(self, sources: dict, proxies: dict, own: str, call_grader):
        self.sources, self.proxies, self.own, self.module_of = sources, proxies, own, MODULE_OF
        self.functions = {name: _proxy(name, call_grader) for name in proxies}
        self._util = importlib.util
        package = types.ModuleType(PACKAGE)
        package.__path__ = []  # a package with no directory: submodules come from find_spec
        package.__package__ = PACKAGE
        package.__file__ = f"<submission>/{PACKAGE}/__init__.py"
        sys.modules[PACKAGE] = package
        self.package = package
        self.loaded: list[str] = []  # the package's modules, as named in sys.modules
        # Each module that raised while it ran, and why (``import_failure``): sent with the
        # exercise's results, so that the learner hears which file does not import even when
        # stand-ins let the graded one run (their notebook cannot import it).
        self.failed: dict[str, dict] = {}

    def find_spec(self, fullname):
        name = fullname[len(PACKAGE) + 1 :]
        if name in self.sources or (name != self.own and name in self.module_of.values()):
            return self._util.spec_from_loader(fullname, _SourceLoader(self, name), origin=f"{name}.py")
        raise ModuleNotFoundError(f"No module named {fullname!r}: {name}.py is not in the submission",
                                  name=fullname)

    def run_module(self, module, name):
        # Siblings first, so their proxies are in place when this module imports them by name.
        for other in sorted(set(self.proxies.values()) - {name}):
            __import__(f"{PACKAGE}.{other}")
        source = self.sources.get(name)
        try:
            if source is None:
                raise ModuleNotFoundError(f"{name}.py is not in the submission")
            exec(_compiled(name, source), module.__dict__)
        except BaseException as err:  # noqa: BLE001  SystemExit at import too
            if source is not None:
                self.failed[name] = import_failure(name, err)
            if name == self.own:
                raise
            self.stand_in(module, name, err)
        self.install_proxies()

    def stand_in(self, module, name, err):
        why = f"{name}.py could not be imported ({describe(err)})"
        for exercise, home in self.module_of.items():
            if home == name:
                module.__dict__[exercise] = self.functions.get(exercise) or _placeholder(exercise, why)

    def install_proxies(self):
        """Each proxy on its home module (defined there or not) and wherever it was imported."""
        for full in self.loaded:  # not all of sys.modules: this runs at every driver call
            module = sys.modules.get(full)
            if module is not None:
                for f, proxy in self.functions.items():
                    if f in module.__dict__ or self.proxies[f] == full[len(PACKAGE) + 1 :]:
                        module.__dict__[f] = proxy


class _SourceLoader:
    def __init__(self, submission: Submission, name: str):
        self.submission, self.name = submission, name

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__file__ = f"<submission>/{PACKAGE}/{self.name}.py"
        self.submission.loaded.append(f"{PACKAGE}.{self.name}")
        self.submission.run_module(module, self.name)


def _compiled(name: str, source: str):
    """A module's code object, compiled once per child (each exercise runs it afresh)."""
    key = (name, source)
    if key not in _CODE:
        filename = f"{PACKAGE}/{name}.py"
        _CODE[key] = compile(source, filename, "exec", dont_inherit=True)
        # So that an exception's message can quote the learner's line (``describe``).
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return _CODE[key]


_CODE: dict = {}


def _placeholder(name: str, why: str):
    def placeholder(*args, **kwargs):
        raise ImportError(f"{name} is unavailable: {why}")

    placeholder.__name__ = placeholder.__qualname__ = name
    return placeholder


def _proxy(name: str, call_grader):
    """A stand-in for the exercise ``name``: its arguments go to the grader as plain data and
    the reference's result comes back (tensors as new tensors: no autograd graph crosses)."""

    def proxy(*args, **kwargs):
        return call_grader(name, list(args), kwargs)

    proxy.__name__ = proxy.__qualname__ = name
    proxy.__doc__ = f"The reference {name}, computed by the grader (your {name} is graded on its own)."
    return proxy


class Namespace:
    """What a driver sees: ``ns.module("attention")`` is the learner's module."""

    def __init__(self, submission: Submission):
        self.submission = submission

    def module(self, name: str):
        module = importlib.import_module(f"{PACKAGE}.{name}")
        self.submission.install_proxies()
        return module


def import_failure(name: str, err: BaseException) -> dict:
    """Why ``name``.py did not import, as parts: the exception's type, the line of that file
    where it was raised (its last frame there; a SyntaxError's own line), that line's code and
    the message. Plain data; the grader checks and cuts each part (``exchange.not_imported``)."""
    try:
        filename = f"{PACKAGE}/{name}.py"
        line, code = None, ""
        if _isinstance(err, SyntaxError) and err.filename == filename:
            line, code, text = err.lineno, err.text or "", err.msg
        else:
            try:
                text = err.args[0] if _len(err.args) == 1 and _isinstance(err.args[0], _str) else _str(err)
            except BaseException:  # noqa: BLE001  a hostile __str__: the type and line still say it
                text = ""
            frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == filename]
            if frames:
                line, code = frames[-1].lineno, frames[-1].line or ""
        return {"type": _str(_type(err).__name__)[:100], "line": line if _type(line) is int else None,
                "code": _str(code).strip()[:120], "text": _str(text)[:300]}
    except BaseException:  # noqa: BLE001  a hostile __str__ or traceback
        return {"type": "an exception", "line": None, "code": "", "text": ""}


def describe(err: BaseException) -> str:
    """``ValueError: message (attention.py, line 12)``: the learner's own frame if any."""
    try:
        text = f"{_type(err).__name__}: {err}"[:500]
        frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename.startswith(PACKAGE)]
        if _isinstance(err, SyntaxError) and err.filename and err.filename.startswith(PACKAGE):
            return f"{text}"
        if frames:
            f = frames[-1]
            code = (f.line or "").strip()[:120]  # the learner's own line, as its file reads
            text += f" ({f.filename.split('/')[-1]}, line {f.lineno}" + (f": {code})" if code else ")")
        elif err.__traceback__ is not None:  # no line of the learner's in it: the harness raised
            text += " (raised by the grader's harness around your code, not by a line of yours)"
        return text
    except BaseException:  # noqa: BLE001  a hostile __str__
        return "an exception"


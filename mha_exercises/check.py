"""``check("exercise_id")`` (or ``check(function)``): grade one exercise from a notebook.

It grades the code the notebook runs (your ``mha_exercises/``, or the reference solutions
when ``MHA_BACKEND=solutions``) with the same isolated grader as ``make grade``. The first
check in a kernel starts the grader as a separate process (``autograder/service/``) that
stays up while the kernel lives: each check sends it the exercise id and your module files
as they are now, your code runs in a fresh confined process, and the verdict comes back in
a fraction of a torch import. Nothing of the grader runs in this kernel. When the kernel
still runs an older version of a function than the file just graded, ``check`` says so.
"""
from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

from .backend import BACKENDS, backend, package_imports, loaded, outdated

WIDTH = 88


def check(exercise, *, time_limit: float | None = None) -> None:
    """Grade ``exercise`` (an id like ``"softmax"``, or the function/class itself) and print the verdict."""
    name = exercise if isinstance(exercise, str) else getattr(exercise, "__name__", None)
    if not isinstance(name, str):
        print("check(): give an exercise id such as 'softmax', or the function itself, not "
              + _shown(repr(exercise)))
        return
    if importlib.util.find_spec("autograder") is None:
        print(f"check({name!r}): the grader is not available in this installation; run your own "
              "tests, or ask your instructor for a graded run.")
        return
    from autograder import service
    # Read in place: a learner's own files on their own machine need no forked reader (a fork
    # in a notebook's kernel is best avoided).
    from autograder.submission import SubmissionError, read as read_submission

    package = BACKENDS[backend()]
    # The folder the notebook's `load(...)` imports from (first on the package's path).
    directory = Path(next(iter(importlib.util.find_spec(package).submodule_search_locations)))
    try:
        sources = read_submission(directory).sources
        report = service.grade(name, sources, str(directory), time_limit)
    except (service.ServiceError, SubmissionError) as err:
        print(f"check({name!r}): could not grade: {_shown(err)}")
        return
    print("\n".join(report_lines(package, name, exercise, sources, report)))


def warm_up() -> None:
    """Start the grader in the background (a chapter's set-up cell calls this), so that the
    first ``check()`` a few seconds later answers as fast as every later one. Returns at once;
    does nothing where the grader is not installed."""
    if importlib.util.find_spec("autograder") is None:
        return
    from autograder import service, submission  # noqa: F401  check()'s imports, paid now

    service.start()


def report_lines(package: str, name: str, exercise, sources: dict, report: dict) -> list[str]:
    """What check() prints for ``report``: the verdict, then the notes on the package and kernel.

    An exercise whose module, or a module that one imports, does not import (a syntax error,
    an exception at import) is not graded: the line says which file, the type and the line.
    The grader ran it with stand-ins for that file's functions, but the notebook cannot import it."""
    module = _module_of(name)
    result = next((r for r in report.get("exercises", []) if r.get("id") == name), None)
    broken = _not_compiling(sources)
    broken.update({k: v for k, v in ((result or {}).get("not_imported") or {}).items() if k in sources})
    chain = _imported_by(module, sources, package)
    blocking = [short for short in chain if short in broken and short != module]
    kernel = [_wrap(line, "   ", "     ") for line in _kernel_notes(package, name, exercise, sources, report, broken)]
    if module in broken or blocking:
        first = module if module in broken else blocking[0]
        head = _wrap(f"✘ {name}: not graded: your file {first}.py does not import: {broken[first]}", "", "   ")
        notes = _package_notes(package, name, chain, broken, blocking, result)
        return [head] + [_wrap(line, "   ", "     ") for line in notes] + kernel
    return [verdict(report)] + kernel


def _module_of(name: str) -> str | None:
    from autograder.spec import MODULE_OF

    return MODULE_OF.get(name)


def _not_compiling(sources: dict) -> dict[str, str]:
    """``{module: "SyntaxError at line 12: ..."}`` of the files that do not compile (compiled only,
    never run: nothing of the learner's executes in this kernel here). The grader's report adds
    the files that compile but raise when imported (``not_imported``: its confined run saw them)."""
    broken = {}
    for short, source in sources.items():
        try:
            compile(source, f"{short}.py", "exec", dont_inherit=True)
        except SyntaxError as err:
            code = (err.text or "").strip()[:120]  # as the grader cuts it (exchange.not_imported)
            broken[short] = (f"{type(err).__name__} at line {err.lineno}: {err.msg}"
                             + (f" (`{code}`)" if code else ""))
        except ValueError as err:  # a null byte in the source
            broken[short] = f"the file cannot be compiled ({err})"
    return broken


def _imported_by(module: str | None, sources: dict, package: str) -> dict[str, str | None]:
    """``module`` and, transitively, the package modules it imports, each with the module
    through which it is first reached (None for ``module`` itself)."""
    todo, seen = [(module, None)] if module else [], {}
    while todo:
        short, by = todo.pop(0)
        if short in seen or short not in sources:
            continue
        seen[short] = by
        todo += [(other, short) for other in sorted(package_imports(sources[short], package))]
    return seen


def _package_notes(package: str, name: str, chain: dict, broken: dict, blocking: list[str],
                   result: dict | None) -> list[str]:
    """Why an exercise is not graded though the grader ran it: the file that does not import,
    how the exercise's module reaches it, what to do, and what the run with stand-ins scored."""
    module = next(iter(chain), None)
    notes = []
    for short in blocking:
        path, by = [], chain[short]
        while by is not None and by != module:
            path.append(by)
            by = chain[by]
        through = f" through {' and '.join(f'{p}.py' for p in reversed(path))}" if path else ""
        also = f"your file {short}.py does not import: {broken[short]}; " if short != blocking[0] else ""
        notes.append(f"{also}{module}.py imports {short}.py{through}, so `import {package}.{module}` fails "
                     f"in your notebook too. Fix {short}.py, save it, and check again.")
    if blocking and result and result.get("cases"):
        from autograder.scoring.rounding import points  # how every reader sees points

        passed = sum(bool(c.get("passed")) for c in result["cases"])
        notes.append(f"(The grader ran your {name} with stand-ins for {' and '.join(f'{b}.py' for b in blocking)}'s "
                     f"functions: {points(result['score'])}/{points(result['max_score'])} points, "
                     f"{passed} of {len(result['cases'])} checks passed.)")
    elif module in broken:
        notes.append(f"Fix {module}.py, save it, and check again.")
    return notes


def _kernel_notes(package: str, name: str, exercise, sources: dict, report: dict, broken=None) -> list[str]:
    """What the learner should know about the code this kernel runs vs the files just graded:
    older functions in the exercise's module or the modules it imports, a function passed
    that is not the file's, a check that ran unconfined."""
    from autograder.spec import MODULE_OF

    notes, module = [], MODULE_OF.get(name)
    here, todo, seen = loaded(package), [module] if module else [], []
    while todo:  # the exercise's module and, transitively, the package modules it imports
        short = todo.pop()
        if short in seen or short not in sources:
            continue
        seen.append(short)
        todo += sorted(package_imports(sources[short], package))
    for short in seen:
        if short in (broken or {}):  # said plainly by _package_notes or the grader's "does not import"
            continue
        old = outdated(here[short], sources[short]) if short in here else []
        if old:
            names = " and ".join(dict.fromkeys(q.split(".")[0] for q in old))
            notes.append(f"note: your notebook still runs an older {names} than {package}/{short}.py, "
                         f"the file just graded: re-run the cell `{short} = load(\"{short}\")` "
                         "(load reloads what you edited).")
    code = getattr(exercise, "__code__", None)
    if code is not None and module and not code.co_filename.endswith(f"{module}.py"):
        notes.append(f"note: the {name} you passed is not the one in {package}/{module}.py, which is "
                     "what check() grades.")
    confinement = report.get("confinement") or {}
    if report.get("practice"):
        from autograder.isolation.practice import LABEL

        notes.append(f"({LABEL}: your code ran in a plain subprocess with a time limit; "
                     "graded runs are confined, on Linux)")
    elif confinement and not confinement.get("confined"):
        notes.append(f"(your code was not confined by the kernel here: {confinement.get('why')})")
    return notes


def verdict(report: dict, blocked: bool = False) -> str:
    """A few lines: a mark, the score and status, then what is wrong (and the notes).

    ``blocked``: the package cannot be imported (a module the exercise's module imports does
    not import), so no exercise gets the mark of a pass, whatever it scored with stand-ins."""
    from autograder.scoring.rounding import points  # how every reader sees points

    from autograder.said import Budget

    lines, _BUDGET[0] = [], Budget()
    for r in report["exercises"]:
        _BUDGET[0].exercise()
        mark = "✔" if r["status"] == "passed" and not blocked else "✘"
        n = len(r["cases"])
        passed = sum(c["passed"] for c in r["cases"])
        lines.append(f"{mark} {r['id']}: {points(r['score'])}/{points(r['max_score'])} points, "
                     f"{r['status']} ({passed} of {n} checks passed)")
        if r["status"] == "not attempted" and r["cases"]:  # one reason for every check
            lines.append(_wrap(r["cases"][0]["feedback"], "   "))
        elif r["feedback"]:
            lines.append(_wrap(r["feedback"], "   "))
        shown, failing = _telling(r)[:3], n - passed
        if shown and len(shown) < failing:  # the summary counted them all: say these are examples
            lines.append(f"   {_examples(len(shown), failing)}:")
        for c in shown:
            lines.append(_wrap(f"• {c['name']}: {c['feedback']}", "   ", "     "))
        lines += [_wrap(f"note: {note}", "   ", "     ") for note in r["notes"]]
    return "\n".join(lines)


def _telling(result: dict) -> list[dict]:
    """Failing checks that add to the summary: one example per diagnosis, each other failure once."""
    said = [result["feedback"].lower()]
    out = []
    for c in result["cases"]:
        key = (c.get("diagnosis") or c["feedback"] or "").lower()
        if c["passed"] or not key or any(key in text for text in said):
            continue
        said.append(key)
        out.append(c)
    if not out and result["status"] != "not attempted":  # the summary named the cause: one example
        out = [c for c in result["cases"] if not c["passed"] and c["feedback"] not in result["feedback"]][:1]
    return out


def _examples(shown: int, failing: int) -> str:
    return f"{'one' if shown == 1 else shown} of the {failing} failing checks, for example"


def _wrap(text: str, first: str, rest: str | None = None) -> str:
    # The one renderer of the grader's sentences (the learner's words in their slots, within a budget).
    from autograder.said import render

    return textwrap.fill(render(text, "terminal", _BUDGET[0], values=True), WIDTH, initial_indent=first,
                         subsequent_indent=rest or first)


_BUDGET = [None]  # the learner's bytes this report has left (verdict sets it)


def _shown(text) -> str:
    """Text of the learner's (an object's repr, a file's name) as the characters it is: an escape
    sequence or a bidi override in it is printed as ``\\x1b``, ``\\u202e``, never acted on.
    (The grader's verdicts come inert already: ``autograder/inert.py``.)"""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text)[:2000])

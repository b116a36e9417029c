"""Every learner stub raises NotImplementedError naming its exercise id (CONTRACT.md contract).

The exercises come from the one table ``autograder.spec.COURSE``: nothing here lists them again.
The docstring table of ``mha_exercises`` is checked against it too.
"""
import importlib
import inspect

import pytest

import mha_exercises
from autograder.spec import COURSE, MODULE_OF

IDS = [e.id for e in COURSE]


def stub(exercise):
    return getattr(importlib.import_module(f"mha_exercises.{MODULE_OF[exercise]}"), exercise)


def call_with_placeholders(obj):
    """Call a stub (or build a stub class) with None for every required argument: a stub raises
    before it reads any."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    params = list(inspect.signature(target).parameters.values())[1 if inspect.isclass(obj) else 0:]
    args = [None for p in params if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    kwargs = {p.name: None for p in params if p.default is p.empty and p.kind is p.KEYWORD_ONLY}
    return obj(*args, **kwargs)


@pytest.mark.parametrize("exercise", IDS)
def test_stub_raises_naming_its_exercise(exercise):
    with pytest.raises(NotImplementedError, match=f"`{exercise}`"):
        call_with_placeholders(stub(exercise))


@pytest.mark.parametrize("exercise", IDS)
def test_stub_docstring_states_the_contract(exercise):
    doc = inspect.getdoc(stub(exercise)) or ""
    assert f"``{exercise}``" in doc and "chapter" in doc, f"{exercise}: docstring must name its id and chapter"


@pytest.mark.parametrize("exercise", IDS)
def test_solution_has_the_stub_signature(exercise):
    import importlib.util

    name = f"solutions.{MODULE_OF[exercise]}"
    solution = importlib.import_module(name) if importlib.util.find_spec(name) else None
    if not hasattr(solution, exercise):
        pytest.skip(f"no reference solution for {exercise} yet")
    mine, ref = stub(exercise), getattr(solution, exercise)
    if inspect.isclass(mine):
        mine, ref = mine.__init__, ref.__init__
    assert inspect.signature(mine) == inspect.signature(ref)


def course_table() -> str:
    """The package docstring's table of modules and exercises, generated from ``COURSE``."""
    modules: dict = {}
    for e in COURSE:
        modules.setdefault(e.module, (e.chapter, []))[1].append(f"``{e.id}``")
    rows = [(f"{m}.py", ", ".join(ids), str(ch)) for m, (ch, ids) in modules.items()]
    widths = [max(len(r[i]) for r in rows + [("module", "exercises", "ch.")]) for i in range(3)]
    rule = "  ".join("=" * w for w in widths)
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([rule, line(("module", "exercises", "ch.")), rule, *map(line, rows), rule])


def test_the_package_docstring_lists_the_course_table():
    assert course_table() in mha_exercises.__doc__, "regenerate it with tests/test_stubs.py:course_table()\n" + \
        course_table()


@pytest.mark.parametrize("exercise", IDS)
def test_a_docstring_promises_no_error_check_the_grader_lacks(exercise):
    """A stub asking for a ``ValueError`` either has a case that checks it (the ``call_raises``
    driver) or says that the checks do not test it: the learner reads the docstring as what is
    graded."""
    import numpy as np

    from autograder.grading.exercises import EXERCISES

    doc = " ".join((inspect.getdoc(stub(exercise)) or "").split())
    if "ValueError" not in doc:
        return
    drivers = {case.driver for case in EXERCISES[exercise].cases(np.random.default_rng(0))}
    assert "call_raises" in drivers or "the checks do not test" in doc.lower(), (
        f"{exercise}: the docstring asks for a ValueError that no case of the grader checks")

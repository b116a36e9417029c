"""The judge: the expected outputs and the diagnoses; comparing and scoring are ``scoring/``'s.

Runs in the grader's process. For each case it runs the case's driver against the reference
solutions (``reference.py``) for the expected output; on a mismatch it runs the exercise's
known bugs on the same inputs, and a bug whose output the learner's matches, and whose
claim no other case contradicts (``scoring.stated_diagnoses``), names the likely cause. ``scoring.score`` compares, scores and words the feedback, exactly as the
learner's self-check does on the stored public cases.
"""
from __future__ import annotations

import numpy as np

from .. import scoring
from ..isolation import drivers
from ..scoring import check_case, compare_outputs  # noqa: F401  (the release builder and tests use them here)
from ..spec import Case, CaseError, Exercise, ExerciseResult
from . import catalogue, reference
from .exercises import draw

PROPERTIES = scoring.PROPERTIES


# --- running drivers in the grader's process ---------------------------------------------------

def run_driver(case: Case, ns):
    return getattr(drivers, case.driver)(ns, **case.inputs)


# What the reference (or a known bug) returns on a case, kept for the next submission: the
# runner draws each exercise's cases once per process and seed, so a batch grader computes
# them once for the whole class. Keyed by identity; the key's objects are kept alive with
# the entry (an id is unique only while its object lives). Nothing here mutates an output.
# Other modules reach it only through the functions below (reference_output, keep_reference_output,
# forget_outputs).
_OUTPUTS: dict = {}
_OUTPUTS_MAX = 16384  # the generated catalogue adds an output per mutant and case


def _cached(objects: tuple, compute):
    key = tuple(map(id, objects))
    hit = _OUTPUTS.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], objects)):
        return hit[1]
    if len(_OUTPUTS) >= _OUTPUTS_MAX:
        _OUTPUTS.clear()
    value = compute()
    _OUTPUTS[key] = (objects, value)
    return value


def reference_output(case: Case):
    """What the reference returns on ``case``: computed once per Case object."""
    return _cached((case,), lambda: run_driver(case, reference.namespace()))


def keep_reference_output(case: Case, output) -> None:
    """Take ``output`` as the reference's on ``case`` (read from disk by ``cache.warm``) unless
    already known."""
    _cached((case,), lambda: output)


def forget_outputs() -> None:
    """Drop every kept output (the reference's and the known bugs'): the next ones are computed,
    or read from disk."""
    _OUTPUTS.clear()


def bug_output(case, exercise, bug):
    """What one way of writing a known bug returns on ``case`` (None: it cannot run on it)."""
    def run():
        try:
            with np.errstate(all="ignore"):
                return run_driver(case, reference.namespace({exercise.id: bug}))
        except Exception:  # a bug that cannot even run on these inputs explains nothing
            return None

    return _cached((case, exercise, bug), run)


def variants(bug) -> tuple:
    """A known bug's implementations: one, or the ways of writing the same mistake."""
    return tuple(bug) if isinstance(bug, (tuple, list)) else (bug,)


def known_bugs(exercise: Exercise, generated: bool = True) -> dict:
    """The exercise's known bugs: the listed ones, then (``generated``) the catalogue of the
    reference's mutants (``catalogue.of``) under diagnoses the listed ones do not use."""
    if not generated:
        return exercise.bugs
    return {**exercise.bugs, **{d: w for d, w in catalogue.of(exercise.id).items() if d not in exercise.bugs}}


def bug_shown(exercise: Exercise, case: Case, expected, diagnosis: str) -> list | None:
    """One known bug's outputs on ``case``, one per way of writing it (None for a way that does
    not show, or cannot run), or None when no way shows."""
    ways = variants(known_bugs(exercise).get(diagnosis, ()))

    def compute():
        outs = [o if o is not None and compare_outputs(o, expected, case, True) is not None else None
                for o in (bug_output(case, exercise, v) for v in ways)]
        return outs if any(o is not None for o in outs) else None

    return _cached((case, exercise, bug_shown, *ways), compute)


def shown_bugs(exercise: Exercise, case: Case, expected, generated: bool = False) -> dict[str, list]:
    """``{diagnosis: [output per way of writing it]}`` of the known bugs that show on ``case``
    (an output that differs from ``expected``; None for a way that does not show or cannot
    run): what the release stores for its self-check to name a mistake (the listed bugs only:
    ``generated=False``)."""
    shown = {d: bug_shown(exercise, case, expected, d) for d in known_bugs(exercise, generated)}
    return {d: outs for d, outs in shown.items() if outs is not None}


def judge_exercise(exercise: Exercise, cases: list[Case], outputs: list, notes: list[str]) -> ExerciseResult:
    expected = [None if isinstance(o, CaseError) else reference_output(c) for c, o in zip(cases, outputs)]

    def bugs(i, diagnosis=None):  # asked only about cases with the learner's data: their expected output exists
        if diagnosis is not None:  # one bug, run only when a claim needs it checked on this case
            if cases[i].driver.endswith("_raises") and diagnosis not in exercise.bugs:
                return None
            return bug_shown(exercise, cases[i], expected[i], diagnosis)
        listed = shown_bugs(exercise, cases[i], expected[i])
        # The generated catalogue only where no listed bug is the learner's output here (it costs a
        # run per mutant); never on a call that must raise (it shows only whether it raised).
        if cases[i].driver.endswith("_raises") or any(
                scoring.matches(outputs[i], out, cases[i]) for outs in listed.values() for out in outs if out is not None):
            return listed
        return shown_bugs(exercise, cases[i], expected[i], generated=True)

    return scoring.score(exercise.id, exercise.points, cases, outputs, expected, bugs, exercise.ladder, notes,
                         exercise.hints)


_DRAWN: dict = {}  # (exercise id, seed) -> (exercise, its grading cases), for judge_in_process


def in_process_cases(exercise: Exercise, seed: int = 0) -> list[Case]:
    """The cases :func:`judge_in_process` grades ``exercise`` on for ``seed``: drawn once per
    process, the same Case objects each time, so the reference's and the bugs' outputs are kept."""
    drawn = _DRAWN.get((exercise.id, seed))
    if drawn is None or drawn[0] is not exercise:
        drawn = _DRAWN[(exercise.id, seed)] = (exercise, draw.grading_cases(exercise, seed))
    return drawn[1]


def judge_in_process(exercise: Exercise, implementation=None, seed: int = 0) -> ExerciseResult:
    """Grade a *trusted* implementation (None: the reference) in this process, as the pipeline would.

    For the grader's own tests and for contributors trying a new exercise's checks: the drivers
    run against the reference namespace with ``implementation`` swapped in. Never use it on
    learner code, which must run in the sandbox.
    """
    ns = reference.namespace(None if implementation is None else {exercise.id: implementation})
    cases = in_process_cases(exercise, seed)
    outputs = []
    for case in cases:
        try:
            with np.errstate(all="ignore"):
                outputs.append(run_driver(case, ns))
        except Exception as err:
            outputs.append(CaseError("exception", f"{type(err).__name__}: {err}"))
    return judge_exercise(exercise, cases, outputs, [])

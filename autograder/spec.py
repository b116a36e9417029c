"""The contract between the grading pipeline and the per-exercise checks.

An :class:`Exercise` is identified by the same id as its stub, its chapter section and its
solution (``CONTRACT.md``). Its ``cases(rng)`` returns seeded :class:`Case` objects. A case
names a *driver* (a function of ``autograder/isolation/drivers/``) and its inputs. The pipeline runs
the driver twice on the same inputs:

* in the learner's isolated process, against the learner's modules, and
* in the grader's process, against the reference solutions (and against each known bug of
  the exercise, to diagnose a mismatch).

Drivers take a :class:`Namespace` and the case's inputs and return a dict of *plain data*
(NumPy arrays, Python numbers, bools, strings, None, and lists/dicts of these), so nothing
the learner's process returns is ever an object of the learner's making.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from .inert import inert
from .said import clean


@dataclass(frozen=True)
class ExerciseInfo:
    """Where an exercise lives and what it is worth: its id, the module (file of the
    submission) that holds it, its chapter and its points."""

    id: str
    module: str
    chapter: int
    points: int
    # Where the property checks (``scoring``) find the mask of a case that calls this function:
    # its position among the arguments when it is not passed by name (masked_softmax(scores,
    # mask)), and whether it is a layer's mask, (B, Lq, Lk) shared by the heads of weights
    # (B, H, Lq, Lk). Declared here so that the shared judge names no exercise.
    mask_position: int | None = None
    heads_share_mask: bool = False


# The one list of exercises, in course order: every other list of exercise ids (the checks'
# registry, the stubs' test, the docstring table of ``mha_exercises``) is generated from it or
# tested against it. The points total 100.
COURSE = tuple(ExerciseInfo(*row) for row in (
    ("softmax", "attention", 1, 5), ("scaled_dot_product_attention", "attention", 1, 7),
    ("padding_mask", "masking", 2, 4), ("causal_mask", "masking", 2, 4), ("masked_softmax", "masking", 2, 7, 1),
    ("split_heads", "heads", 3, 4), ("merge_heads", "heads", 3, 4),
    ("multi_head_attention", "layer", 4, 7, None, True), ("parameter_count", "layer", 4, 3),
    ("MultiHeadAttention", "layer", 4, 9),
    ("attention_entropy", "analysis", 5, 3),
    ("head_importance", "pruning", 6, 7), ("prune_heads", "pruning", 6, 7),
    ("chunked_attention", "efficient", 7, 7), ("repeat_kv", "efficient", 7, 2),
    ("GroupedQueryAttention", "efficient", 7, 5), ("KVCache", "efficient", 7, 5),
    ("sinusoidal_positions", "language_model", 8, 2), ("apply_rope", "language_model", 8, 3),
    ("generate", "language_model", 8, 3), ("induction_score", "language_model", 8, 2),
))
INFO = {e.id: e for e in COURSE}
POINTS = {e.id: e.points for e in COURSE}
MODULE_OF = {e.id: e.module for e in COURSE}
assert sum(POINTS.values()) == 100


class Namespace(Protocol):
    """Where a driver finds the code under test: ``ns.module("attention").softmax``."""

    def module(self, name: str) -> Any: ...


@dataclass(frozen=True)
class Case:
    """One graded check of an exercise.

    ``name`` is short and specific ("float32, padding, fully masked rows"); reports show it as
    ``"<exercise id>: <name>"``. ``weight`` is its share of the exercise's points (the
    exercise's cases are normalised to sum to its points). ``inputs`` is plain data passed to
    the driver as keyword arguments. ``rtol``/``atol`` are the tolerances for comparing with
    the reference; ``properties`` names extra property checks of ``scoring/properties.py`` (e.g.
    ``"rows_sum_to_one"``, ``"masked_exactly_zero"``, ``"inputs_unchanged"``).
    """

    name: str
    driver: str
    inputs: dict
    weight: float = 1.0
    rtol: float = 1e-5
    atol: float = 1e-6
    properties: tuple[str, ...] = ()
    timeout: float | None = None  # seconds; None = the exercise's default
    rung: int = 0  # its step on the exercise's ladder (``Exercise.ladder``): 0 is the simplest input
    # What the inputs are, one value per feature, each worded as a condition a learner can read
    # ({"lengths": "Lq = Lk", "dtype": "float32"}): a failing case and a passing one that differ
    # in one feature alone name that feature as the cause (``scoring``); nothing else may.
    features: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Exercise:
    """An exercise's checks: seeded cases, known bugs, and the exercises it may call.

    ``bugs`` maps a learner-facing diagnosis ("your output matches attention without the
    1/sqrt(d_k) scale") to a buggy implementation with the exercise's own signature (a
    function or a class), or to a tuple of variants: ways of writing the same mistake. ``uses`` lists the other exercise ids the learner's version may
    call: the pipeline replaces those with the reference (one mistake counts once) and the
    report says so.
    """

    id: str
    cases: Callable[[Any], list[Case]]  # rng: numpy.random.Generator -> cases
    bugs: dict[str, Any] = field(default_factory=dict)
    uses: tuple[str, ...] = ()
    timeout: float = 10.0  # seconds per exercise in the learner's process
    # CPU seconds any one case may use: an infinite loop is stopped after this, not after the
    # exercise's whole timeout. Outside chapter 6, every known implementation, correct or not
    # (tests/wrong_implementations/, a loop over heads included), runs ALL its exercise's
    # cases in 0.03-0.05 s of CPU (12 cases: a few ms each): bench/gradescope_fit.py measures
    # it, and fails when all of one's cases together come within a fifth of this limit.
    case_cpu: float = 0.5
    memory_mb: int = 2048
    # The case ladder: ``(what the inputs of rung r add, what the code must then do)``, from
    # the simplest input up. A report says the last rung that passed and the first that failed
    # ("Correct on E = kdim = vdim; fails on kdim != E: W_k maps kdim to E").
    ladder: tuple[tuple[str, str], ...] = ()
    # What the code must do where a feature takes a value, keyed ``(feature, value)`` or
    # ``feature``: said after a minimal pair isolates that feature ("fails on Lq != Lk: ...").
    hints: dict = field(default_factory=dict)

    @property
    def module(self) -> str:
        return MODULE_OF[self.id]

    @property
    def points(self) -> float:
        return POINTS[self.id]


@dataclass
class CaseResult:
    """What the judge concluded about one case."""

    name: str
    score: float  # points earned
    max_score: float
    passed: bool
    feedback: str  # one or two sentences that say *what* is wrong, or "" when passed
    diagnosis: str | None = None  # the matched known bug, if any
    # What made it fail, as parts a writer can show without the rest: ``{"kind": "exception",
    # "type": ..., "file": ..., "line": ..., "text": ...}`` for an error of the learner's
    # code, ``{"kind": "mismatch", "what": "shape"}`` for a wrong output (scoring.cause_parts).
    cause: dict = field(default_factory=dict)

    def __post_init__(self):
        # Its feedback may quote the learner's output (a type's name, a string): inert here,
        # so every writer of a report inherits it; the learner's words in it stay in their slots
        # (``said.py``), which every writer renders under the learner's budget.
        self.feedback = clean(self.feedback)


STATUSES = ("passed", "partial", "failed", "not attempted", "error", "timed out")


@dataclass
class ExerciseResult:
    id: str
    status: str  # one of STATUSES
    score: float
    max_score: float
    cases: list[CaseResult] = field(default_factory=list)
    feedback: str = ""
    notes: list[str] = field(default_factory=list)  # e.g. "graded with the reference split_heads"
    cpu_seconds: float = 0.0  # CPU time of the learner's process on it, as the kernel counted it
    ladder: str = ""  # "Correct on ...; fails on ...": the case ladder's verdict, in the grader's words
    # The learner's modules that did not import in this exercise's run, and why (the type, the
    # line): {"masking": "ValueError at line 3: boom (`raise ValueError('boom')`)"}.
    not_imported: dict = field(default_factory=dict)

    def __post_init__(self):
        self.feedback = clean(self.feedback)
        self.notes = [clean(n) for n in self.notes]
        self.not_imported = {inert(k): inert(v) for k, v in self.not_imported.items()}


@dataclass
class CaseError:
    """Why the learner's process gave no output for a case (the pipeline fills this in).

    ``kind`` is one of: ``"not_implemented"`` (the stub still raises NotImplementedError),
    ``"missing"`` (the module or the function is not in the submission), ``"import"`` (the
    module failed to import: syntax error, exception, exit at import), ``"exception"``,
    ``"timeout"``, ``"memory"``, ``"crash"`` (the process died: os._exit, signal),
    ``"garbage"`` (output that is not plain data of the expected form), ``"not_run"`` (the
    grader never ran the case: the exercise's run stopped before it; it shows nothing about
    the code, and no feedback may use it as evidence).
    """

    kind: str
    message: str
    # False where the outcome is not this case's own: the exercise's or the run's time, or the
    # exercise's message cap, ran out while it ran (the cases before it had spent them).
    own: bool = True
    # The line of the submitted source at the file and line the error names, as the grader read
    # it itself (``exchange.held_to_facts``), or "": what a sentence may quote of the learner's line.
    source: str = ""

    def __post_init__(self):
        # The one door of the learner's words into a result (an exception's message, its type's
        # name, the learner's source line): escape sequences and other controls are made inert.
        self.message = inert(self.message)
        self.source = inert(self.source)

    @property
    def ran(self) -> bool:
        return self.kind != "not_run"

    @property
    def evidence(self) -> bool:
        """Whether the outcome says something about this case's inputs (a pair may use it)."""
        return self.ran and self.own


# The interface between the pipeline (runner.py, worker.py) and the judge (judge.py):
#
#   judge.judge_exercise(exercise: Exercise, cases: list[Case],
#                        outputs: list[dict | CaseError], notes: list[str]) -> ExerciseResult
#
# ``outputs[i]`` is what the driver of ``cases[i]`` returned in the learner's process (plain
# data, already decoded), or the CaseError that replaced it. The judge computes the reference
# outputs itself (drivers run in the grader's process against ``solutions``), compares with
# the stated tolerances, checks the properties, and on a mismatch runs the exercise's known
# bugs to name the likely cause. Comparing, statuses and the words of the feedback are
# ``scoring/``'s, shared with the learner's self-check.

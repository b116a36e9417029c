"""The contract between the grading pipeline and the per-exercise checks.

An :class:`Exercise` is identified by the same id as its stub, its chapter section and its
solution (``COURSE.md``). Its ``cases(rng)`` returns seeded :class:`Case` objects. A case
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

# Points per exercise id; the course totals 100 once every chapter's exercises exist.
POINTS = {
    "softmax": 5, "scaled_dot_product_attention": 8,                                   # ch. 1
    "padding_mask": 4, "causal_mask": 4, "masked_softmax": 7,                          # ch. 2
    "split_heads": 4, "merge_heads": 4,                                                # ch. 3
    "multi_head_attention": 8, "parameter_count": 3, "MultiHeadAttention": 10,         # ch. 4
    "attention_entropy": 4,                                                            # ch. 5
    "head_importance": 8, "prune_heads": 8,                                            # ch. 6
    "chunked_attention": 8, "repeat_kv": 3, "GroupedQueryAttention": 6, "KVCache": 6,  # ch. 7
}
assert sum(POINTS.values()) == 100

# The module (file of the submission) that holds each exercise.
MODULE_OF = {
    "softmax": "attention", "scaled_dot_product_attention": "attention",
    "padding_mask": "masking", "causal_mask": "masking", "masked_softmax": "masking",
    "split_heads": "heads", "merge_heads": "heads",
    "multi_head_attention": "layer", "parameter_count": "layer", "MultiHeadAttention": "layer",
    "attention_entropy": "analysis",
    "head_importance": "pruning", "prune_heads": "pruning",
    "chunked_attention": "efficient", "repeat_kv": "efficient",
    "GroupedQueryAttention": "efficient", "KVCache": "efficient",
}


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
    the reference; ``properties`` names extra property checks of ``judge.py`` (e.g.
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


@dataclass(frozen=True)
class Exercise:
    """An exercise's checks: seeded cases, known bugs, and the exercises it may call.

    ``bugs`` maps a learner-facing diagnosis ("your output matches attention without the
    1/sqrt(d_k) scale") to a buggy implementation with the exercise's own signature (a
    function or a class). ``uses`` lists the other exercise ids the learner's version may
    call: the pipeline replaces those with the reference (one mistake counts once) and the
    report says so.
    """

    id: str
    cases: Callable[[Any], list[Case]]  # rng: numpy.random.Generator -> cases
    bugs: dict[str, Any] = field(default_factory=dict)
    uses: tuple[str, ...] = ()
    timeout: float = 10.0  # seconds per exercise in the learner's process
    memory_mb: int = 2048

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


@dataclass
class CaseError:
    """Why the learner's process gave no output for a case (the pipeline fills this in).

    ``kind`` is one of: ``"not_implemented"`` (the stub still raises NotImplementedError),
    ``"missing"`` (the module or the function is not in the submission), ``"import"`` (the
    module failed to import: syntax error, exception, exit at import), ``"exception"``,
    ``"timeout"``, ``"memory"``, ``"crash"`` (the process died: os._exit, signal),
    ``"garbage"`` (output that is not plain data of the expected form).
    """

    kind: str
    message: str


# The interface between the pipeline (runner.py, worker.py) and the judge (judge.py):
#
#   judge.judge_exercise(exercise: Exercise, cases: list[Case],
#                        outputs: list[dict | CaseError], notes: list[str]) -> ExerciseResult
#
# ``outputs[i]`` is what the driver of ``cases[i]`` returned in the learner's process (plain
# data, already decoded), or the CaseError that replaced it. The judge computes the reference
# outputs itself (drivers run in the grader's process against ``solutions``), compares with
# the stated tolerances, checks the properties, and on a mismatch runs the exercise's known
# bugs to name the likely cause. It decides the status: all cases "not_implemented"/"missing"
# -> "not attempted"; any "timeout" -> "timed out"; "import"/"crash"/"memory" -> "error";
# otherwise passed / partial / failed by score.

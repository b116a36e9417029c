"""The checks of every exercise, one module per chapter (or part of one): ``EXERCISES`` maps id -> Exercise.

Adding an exercise's checks
===========================

An exercise's checks live in the module of its chapter (``attention.py`` holds chapter 1's
``softmax`` and ``scaled_dot_product_attention``; name a new one for what it holds, e.g.
``pruning.py`` for chapter 6). For each exercise write three things there:

1. **Cases**: ``def my_cases(rng) -> list[Case]``, seeded by ``rng`` (a NumPy Generator; never
   use global random state). 6-12 small cases: the whole course grades in about two seconds.
   For a plain function use ``cases.call_case(name, function, args, kwargs, returns=...,
   sizes=..., dtype=..., properties=...)``: it runs ``<module>.<function>(*args, **kwargs)``
   in the learner's process through the generic ``call`` driver and sets the tolerance of the
   dtype (``cases.TOLERANCE``, stated once with its reason); ``as_tensors=True`` hands the
   arrays to a PyTorch function as tensors (tensor results come back as arrays). Give every size a distinct value
   and name it in ``sizes`` (``dict(B=2, H=3, Lq=4, Lk=5)``) so that a swapped axis shows and
   the feedback can name it ("shape (2, 5, 4) = (B, Lk, Lq)"). Cover float32 and float64,
   masks (padding, causal, fully masked rows), extreme values, and properties
   (``"rows_sum_to_one"``, ``"masked_exactly_zero"``, ``"inputs_unchanged"``; see
   ``scoring.PROPERTIES``). Inputs are plain data only (arrays, numbers, lists, dicts).
2. **A driver**, only if ``call`` cannot express the check (a torch module to build, a
   backward pass): add ``def my_driver(ns, **inputs) -> dict`` to the chapter's module of ``autograder/isolation/drivers/`` (and its ``__init__``).
   It gets the code under test from ``ns.module("layer")``, works on copies of its inputs, and
   returns plain data (``drivers.describe_result`` turns a result into it); it runs in the
   learner's process, so it must not import ``solutions``, the judge or these checks. The
   judge runs the same driver against the reference, so never compare inside a driver.
3. **Known bugs**: small functions (or classes) with the exercise's own signature, one per
   classic mistake, named for it, in a dict ``{diagnosis: implementation}``. The diagnosis is
   the sentence the learner reads when their output matches the bug's on a failing case:
   "your output matches attention without the 1/sqrt(d_k) scale". Bugs are trusted grader
   code and may import ``solutions``. Make sure some case actually shows each bug. When a
   mistake is commonly written in ways that differ on some inputs (``exp(s) * mask`` gives
   NaN where ``np.where(mask, exp(s), 0)`` gives 0), map the diagnosis to a tuple of variants.
   Prefer mistakes seen in published code (course solutions, tutorials, libraries) and name
   the source in a comment.

Then declare ``MY_EXERCISE = Exercise(id="my_exercise", cases=my_cases, bugs={...},
uses=("other_exercise",))`` (``uses``: the exercises it may call, which the pipeline replaces
with the reference so one mistake counts once), list it in the module's ``EXERCISES`` tuple,
and, for a new chapter module, add its one import line below. The id must be a row of ``spec.COURSE``
(its module, chapter and points: the one place an exercise is declared).

Each case says what its inputs are in ``features`` (the same keys for every case of the exercise,
each value worded as a condition and computed from the case's own arguments:
``{"lengths": "Lq = Lk", "dtype": "float32"}``), and ``Exercise.hints`` says what the code must
do where a feature takes a value (keyed by the value or the feature). The feedback names a
feature as a cause only where changing it alone changes the outcome. Best, an *intervention*:
after a case, its copy with one argument changed toward the simplest case
(``cases.intervention``, or the chapter's own builder, marked ``scoring.PROBE``), run on the
learner's code and never graded; the cause is stated only when the copy passes ("Correct on B =
1; fails on B > 1: 'greedy, B = 3' fails and passes with its batch alone changed to B = 1").
Else a *minimal pair*: a failing case and a passing one that differ in that feature alone
("Correct on Lq = Lk; fails on Lq < Lk, other features the same: ..."; "Your code assumes Lq =
Lk: with Lq < Lk it raises ... at layer.py line 12" when the failing case raised). A case that
must raise, or runs none of the learner's arithmetic (``scoring.INERT``: zero new tokens), is
never the passing side. So build the cases in pairs: for every feature a hint names, a case that
differs from a simpler one in that feature only (``tests/test_feedback_truth.py`` checks it). A known bug's diagnosis is stated only where the learner's output is the bug's and
no case contradicts it (``scoring.stated_diagnoses``): a learner right where the bug is wrong is
not told the bug, so write each way of writing a mistake as its own variant.

Cases climb a ladder (``Case.rung``, ``Exercise.ladder``): rung 0 is the simplest input
(Lq = Lk, d_k = d_v, one width, float64), and each semantic property (fully masked rows,
causal alignment, dtype kept, inputs untouched) is checked there too, so that code assuming
a special case still meets its real mistake. Every input is drawn from ``rng`` (sizes too):
``draw.py`` keeps the hidden cases disjoint from the public ones shipped with the release.
Name a case for its input ("Lq > Lk, causal"), never for a suspected cause.

Tests: in ``tests/wrong_implementations/`` add, for the exercise, at least three buggy
implementations that must lose points with their diagnosis and two correct alternatives that
must get full marks (see that folder's README); ``tests/test_grader_checks.py`` picks them up.
"""
from __future__ import annotations

from types import ModuleType

from ...spec import POINTS, Exercise

# One import per module of checks; every imported module with an EXERCISES tuple is collected.
from . import attention  # noqa: F401,E402  chapter 1
from . import masking  # noqa: F401,E402  chapter 2
from . import heads  # noqa: F401,E402  chapter 3
from . import layer  # noqa: F401,E402  chapter 4 (NumPy)
from . import layer_module  # noqa: F401,E402  chapter 4 (the PyTorch module)
from . import analysis  # noqa: F401,E402  chapter 5
from . import importance  # noqa: F401,E402  chapter 6 (head_importance)
from . import pruning  # noqa: F401,E402  chapter 6 (prune_heads)
from . import chunked  # noqa: F401,E402  chapter 7 (chunked_attention)
from . import key_value  # noqa: F401,E402  chapter 7 (repeat_kv, GroupedQueryAttention, KVCache)
from . import positions  # noqa: F401,E402  chapter 8 (sinusoidal positions, RoPE)
from . import generation  # noqa: F401,E402  chapter 8 (generate)
from . import induction  # noqa: F401,E402  chapter 8 (induction_score)

_ALL = {ex.id: ex for module in list(globals().values()) if isinstance(module, ModuleType)
        for ex in getattr(module, "EXERCISES", ())}
# In the course's order (spec.POINTS), so reports list the exercises chapter by chapter.
EXERCISES: dict[str, Exercise] = {id: _ALL[id] for id in POINTS if id in _ALL}
if set(_ALL) - set(EXERCISES):
    raise ImportError(f"checks of exercises missing from spec.COURSE: {sorted(set(_ALL) - set(EXERCISES))}")

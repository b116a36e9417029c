"""One judge, hidden cases that stay hidden, and feedback that is true for its case.

* The public cases (shipped with their expected outputs) and the hidden ones (any grading
  seed) never share a case's inputs.
* The learner's self-check (stored public cases, no solutions) and the grader give the same
  submission word-for-word the same feedback on the same cases: both go through ``scoring``.
* Messages say only what holds for the case: masked keys only where the case has a mask, an
  exception without a message says so, a harness that cannot run says so, every cause of the
  failing cases is named once with its count, and the ladder names the rung that fails.
"""
from __future__ import annotations

import re

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from autograder.said import plain  # the learner's words in their slots, read as text
from autograder.said import plain as said_plain  # where a test names a case "plain"
from autograder import scoring, selfcheck
from autograder.grading import judge, reference
from autograder.grading.exercises import EXERCISES, draw
from autograder.spec import COURSE, Case, CaseError

LIBRARY = Path(__file__).parent / "wrong_implementations"
GRADING_SEEDS = range(50)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_no_hidden_case_has_the_inputs_of_a_public_case(exercise_id):
    exercise = EXERCISES[exercise_id]
    public = {draw.fingerprint(c) for c in draw.public_cases(exercise)}
    for seed in GRADING_SEEDS:
        # An intervention (a case's copy with one argument changed, never graded) may meet one.
        shared = [c.name for c in draw.grading_cases(exercise, seed)
                  if draw.fingerprint(c) in public and scoring.PROBE not in c.features]
        assert not shared, (seed, shared)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_cases_draw_their_inputs_from_the_stream(exercise_id):
    """No case has inputs fixed by construction: two grading seeds share no case's inputs
    (so the disjointness above rarely needs a redraw, and a lookup table of one draw is useless)."""
    exercise = EXERCISES[exercise_id]
    first, second = ([draw.fingerprint(c) for c in exercise.cases(draw.rng(seed, exercise_id))
                      if scoring.PROBE not in c.features] for seed in (1, 2))
    assert len(set(first) & set(second)) <= 1, exercise_id  # small integer inputs may meet by chance


def test_the_public_stream_is_no_grading_seed():
    ex = "softmax"
    public = draw.rng(selfcheck.PUBLIC_SEED, ex, public=True).random(4)
    assert not np.array_equal(public, draw.rng(selfcheck.PUBLIC_SEED, ex).random(4))


# --- one judge: the self-check's words are the grader's ----------------------------------------

def _library(exercise_id):
    spec = importlib.util.spec_from_file_location(f"wrong_{exercise_id}", LIBRARY / f"{exercise_id}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outputs(exercise, cases, implementation):
    ns = reference.namespace({exercise.id: implementation})
    outputs = []
    for case in cases:
        try:
            with np.errstate(all="ignore"):
                outputs.append(judge.run_driver(case, ns))
        except Exception as err:
            outputs.append(CaseError("exception", f"{type(err).__name__}: {err}"))
    return outputs


@pytest.mark.parametrize("exercise_id", ["softmax", "scaled_dot_product_attention", "masked_softmax",
                                         "causal_mask", "MultiHeadAttention", "KVCache", "prune_heads"])
def test_the_self_check_and_the_grader_say_the_same_words(exercise_id, tmp_path):
    exercise = EXERCISES[exercise_id]
    cases = draw.public_cases(exercise)
    expected = [judge.reference_output(c) for c in cases]
    selfcheck.store(exercise, cases, expected, [judge.shown_bugs(exercise, c, e) for c, e in zip(cases, expected)],
                    tmp_path)
    data = selfcheck.load(exercise_id, tmp_path)
    wrong = list(_library(exercise_id).WRONG)
    for implementation in wrong[:3] + [_library(exercise_id).CORRECT[0]]:
        outputs = _outputs(exercise, cases, implementation)
        graded = judge.judge_exercise(exercise, cases, outputs, [])
        checked = selfcheck.judge(data, outputs)
        assert checked.feedback == graded.feedback, implementation.__name__
        assert [(c.name, c.feedback, c.score) for c in checked.cases] == [
            (c.name, c.feedback, c.score) for c in graded.cases]
        assert (checked.status, checked.score) == (graded.status, graded.score)


# --- messages true for their case ----------------------------------------------------------------

def _case(exercise_id, words, seed=0):
    return next(c for c in draw.grading_cases(EXERCISES[exercise_id], seed) if words in c.name)


def test_masked_keys_are_the_case_s_own_mask():
    """A zero weight of the reference (an underflow) is no masked key: without a mask in the case
    the message never speaks of masked keys; with one, it does."""
    plain = _case("scaled_dot_product_attention", "no mask")
    expected = judge.reference_output(plain)
    weights = expected["weights"].copy()
    weights.flat[0] += 1e-3
    reasons = scoring.check_case(plain, {**expected, "weights": weights}, expected)
    assert reasons and not any("masked" in r for r in reasons), reasons

    masked = _case("scaled_dot_product_attention", "padding mask")
    expected = judge.reference_output(masked)
    mask = scoring.case_mask(masked, expected["weights"].shape)
    weights = expected["weights"].copy()
    at = tuple(int(i) for i in np.argwhere(~mask)[0])
    weights[at] = 1e-3
    reasons = scoring.check_case(masked, {**expected, "weights": weights}, expected)
    assert any(said_plain(r).startswith(f"weights must be exactly 0 at masked keys: got 0.001 at index {at}") for r in reasons)


def test_an_exception_without_a_message_says_so():
    message = "AssertionError:  (attention.py, line 40: assert x.ndim == 4)"
    feedback = plain(scoring.error_feedback(CaseError("exception", message)))
    assert feedback == "raised AssertionError (with no message) (attention.py, line 40: assert x.ndim == 4)"


def test_a_harness_that_cannot_run_the_pruned_layer_says_so_and_names_the_dtype():
    from autograder.grading.exercises import pruning

    result = judge.judge_in_process(EXERCISES["prune_heads"], pruning.prune_new_float32_linears)
    float32 = next(c for c in result.cases if c.name.startswith("float32 layer"))
    float64 = next(c for c in result.cases if c.name.startswith("float64 layer"))
    assert float32.passed
    assert "W_q.weight is 'float32', expected 'float64'" in plain(float64.feedback), float64.feedback
    assert "is a str" not in result.feedback
    # Every failing case is explained by the known bug: no minimal-pair sentence repeats it.
    assert result.feedback.startswith("Your pruned layer's weights are float32 in a float64 layer"), result.feedback
    assert "Correct on" not in result.feedback


def test_every_cause_is_named_once_with_its_count():
    """Code that assumes 4-D inputs crashes on the 3-D cases; its NaN on fully masked rows (4-D)
    and its float64 output for float32 inputs are named too, not hidden behind the crash."""
    from solutions.masking import masked_softmax as reference_masked_softmax

    def four_d_only_nan_rows(q, k, v, mask=None):
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        e = np.exp(scores - scores.max(-1, keepdims=True))
        w = e / e.sum(-1, keepdims=True)
        return w @ v, w

    assert reference_masked_softmax is not None
    result = judge.judge_in_process(EXERCISES["scaled_dot_product_attention"], four_d_only_nan_rows)
    assert result.feedback.startswith("Your output matches attention with -inf filled in and no guard")
    assert "Raised ValueError: axes don't match array" in plain(result.feedback)
    assert "keep the input's dtype" in result.feedback  # np.where(..., -np.inf) makes float32 float64
    assert result.feedback.count("failing cases") == 3, result.feedback
    for case in result.cases:  # the case names describe inputs; the cause is in the feedback
        assert "nan" not in case.name.lower() and "bug" not in case.name.lower()


def test_a_minimal_pair_names_the_feature_that_fails():
    base = reference.namespace().module("layer").MultiHeadAttention

    class IgnoresKdim(base):
        def __init__(self, embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0):
            super().__init__(embed_dim, num_heads, bias=bias, dropout=dropout)

    result = judge.judge_in_process(EXERCISES["MultiHeadAttention"], IgnoresKdim)
    assert re.search(r"'kdim, vdim != E' fails and '[^']+' passes, and their inputs differ only in the [^:]+: kdim, "
                     r"vdim != E where the passing one has kdim = vdim = E", result.feedback) or any(
        r.diagnosis for r in result.cases), result.feedback


def test_head_scores_are_located_by_layer_and_head():
    from autograder.grading.exercises import importance

    result = judge.judge_in_process(EXERCISES["head_importance"], importance.importance_signed)
    assert any("at layer " in c.feedback and ", head " in c.feedback for c in result.cases if not c.passed)


def test_case_names_never_name_a_suspected_cause():
    words = ("bug", "wrong", "mistake", "unless", "forgot", "nan")
    for exercise in EXERCISES.values():
        for case in draw.grading_cases(exercise, 0):
            assert not any(w in case.name.lower().split() for w in words), (exercise.id, case.name)


def test_every_ladder_rung_has_cases_and_starts_at_the_simplest():
    for exercise in EXERCISES.values():
        rungs = {c.rung for c in draw.grading_cases(exercise, 0)}
        assert rungs == set(range(len(exercise.ladder) or 1)), exercise.id


def test_case_results_are_the_same_for_points_formatting():
    assert (scoring.points(7.0), scoring.points(3.4285714)) == ("7", "3.43")
    # The one rounding rule (halves up from the number as printed), no trailing zeros, no "-0".
    assert [scoring.points(x) for x in (3.5, 2.675, 10.0, 0.0, -1e-12)] == ["3.5", "2.68", "10", "0", "0"]
    assert isinstance(Case("x", "call", {}).rung, int)


@pytest.mark.parametrize("exercise_id", ["scaled_dot_product_attention", "masked_softmax", "multi_head_attention",
                                         "MultiHeadAttention"])
def test_mask_messages_hold_for_their_case(exercise_id):
    """Over every known bug: a message about masked keys or fully masked rows only on a case
    whose own mask has them."""
    exercise = EXERCISES[exercise_id]
    for bug in exercise.bugs.values():
        for variant in judge.variants(bug):
            result = judge.judge_in_process(exercise, variant)
            graded = [c for c in draw.grading_cases(exercise, 0) if scoring.PROBE not in c.features]
            for case, verdict in zip(graded, result.cases, strict=True):
                expected = judge.reference_output(case)
                shape = getattr(expected.get("weights", expected.get("out")), "shape", None)
                mask = scoring.case_mask(case, shape) if shape else None
                if "at masked keys" in verdict.feedback:
                    assert mask is not None and not mask.all(), (case.name, verdict.feedback)
                if "fully masked row" in verdict.feedback:
                    assert mask is not None and (~mask).all(-1).any(), (case.name, verdict.feedback)


def test_the_mask_of_a_call_is_where_its_exercise_declares_it():
    """masked_softmax's positional mask and multi_head_attention's (B, Lq, Lk) mask shared by the
    heads come from the exercises' declarations (spec.COURSE): the shared judge names neither."""
    mask = np.array([[True, False]])
    positional = Case("m", "call", {"function": "masked_softmax", "args": [np.zeros((1, 2)), mask]})
    assert scoring.case_mask(positional, (1, 2)).tolist() == [[True, False]]
    undeclared = Case("s", "call", {"function": "softmax", "args": [np.zeros((1, 2)), mask]})
    assert scoring.case_mask(undeclared, (1, 2)) is None
    per_batch = np.array([[[True, False], [True, True]], [[False, True], [True, False]]])  # (B=2, Lq, Lk)
    layer = Case("l", "call", {"function": "multi_head_attention", "kwargs": {"mask": per_batch}})
    widened = scoring.case_mask(layer, (2, 3, 2, 2))  # (B, H, Lq, Lk): each head has its batch's mask
    assert all((widened[b, h] == per_batch[b]).all() for b in range(2) for h in range(3))
    ids = [e.id for e in COURSE]
    source = Path(scoring.__file__)  # the module, or the package's folder
    judge_text = "".join(p.read_text() for p in (source.parent.glob("*.py") if source.stem == "__init__" else [source]))
    assert not [i for i in ids if f'"{i}"' in judge_text]


def test_an_exception_names_the_learner_s_line_or_the_harness():
    from autograder.isolation import package

    namespace = {}
    exec(package._compiled("attention", "def softmax(x, axis=-1):\n    assert x.ndim == 4\n"), namespace)
    try:
        namespace["softmax"](np.ones(3))
    except AssertionError as err:
        assert package.describe(err) == "AssertionError:  (attention.py, line 2: assert x.ndim == 4)"
    try:
        np.ones(3) @ np.ones(4)  # no line of the learner's in the traceback
    except ValueError as err:
        assert package.describe(err).endswith("(raised by the grader's harness around your code, not by a line "
                                               "of yours)")


def test_two_different_answers_to_inputs_that_must_be_refused_are_two_causes():
    """One case raising nothing and one raising IndexError, where both must raise ValueError:
    the summary names each, never one sentence "in 2 of 2 failing cases"."""
    from autograder.scoring import cause
    from autograder.spec import CaseResult

    def failing(reason):
        return cause(CaseResult("c", 0.0, 1.0, False, reason), None, [reason])

    nothing = failing("raised nothing where it must raise ValueError")
    other = failing("raised IndexError where it must raise ValueError")
    assert nothing[0] != other[0] and nothing[1] != other[1]

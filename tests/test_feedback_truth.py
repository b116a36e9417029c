"""Feedback that never misleads: every diagnosis the grader states is true of the code it is
shown for, a cause is blamed only when a minimal pair of cases isolates it, and the messages
a learner reported as false are gone, with the true cause named instead.

Drivers run in-process (``judge.judge_in_process``) except where the message comes from the
isolation pipeline (a used exercise rejecting the learner's arguments, a file that does not
import), which go through ``runner.grade_submission`` and the check service."""
from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from solution_copies import edited_solutions

from autograder.said import plain
from autograder import scoring
from autograder.grading import judge, reference
from autograder.isolation import exchange
from autograder.grading.exercises import EXERCISES, draw, layer_module
from autograder.spec import Case, CaseError

LIBRARY = Path(__file__).parent / "wrong_implementations"


def library(exercise_id):
    spec = importlib.util.spec_from_file_location(f"wrong_implementations_{exercise_id}",
                                                  LIBRARY / f"{exercise_id}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stated(result) -> set[str]:
    """The diagnoses a result states (on its cases; the summary repeats them)."""
    return {c.diagnosis for c in result.cases if c.diagnosis}


def without(exercise_id, *names):
    """The exercise with the known bugs whose diagnosis contains one of ``names`` removed."""
    exercise = EXERCISES[exercise_id]
    return dataclasses.replace(exercise, bugs={d: b for d, b in exercise.bugs.items()
                                               if not any(n in d for n in names)})


# --- item 2: a diagnosis is a claim, checked ---------------------------------------------------

def _equivalent(exercise, diagnosis, other, seeds) -> bool:
    """Whether two known bugs give the same outputs on every case of ``seeds`` (then either
    diagnosis is as true as the other)."""
    for seed in seeds:
        for case in judge.in_process_cases(exercise, seed):
            expected = judge.reference_output(case)
            a, b = (judge.bug_shown(exercise, case, expected, d) for d in (diagnosis, other))
            if (a is None) != (b is None):
                return False
            if a is not None and not any(x is not None and y is not None and scoring.matches(x, y, case)
                                         for x in a for y in b):
                return False
    return True


KNOWN = [pytest.param(ex.id, d, id=f"{ex.id}-{d[:40]}") for ex in EXERCISES.values() for d in ex.bugs]


@pytest.mark.parametrize("exercise_id, diagnosis", KNOWN)
def test_each_known_bug_variant_is_told_only_what_is_true_of_it(exercise_id, diagnosis):
    """Graded as a learner's code, every way of writing a known bug gets its own diagnosis and
    no other (unless the other bug's outputs are its own on every case)."""
    exercise = EXERCISES[exercise_id]
    seeds = (0, 1)
    for variant in judge.variants(exercise.bugs[diagnosis]):
        for seed in seeds:
            result = judge.judge_in_process(exercise, variant, seed)
            assert diagnosis in stated(result), (variant, seed, result.feedback)
            for other in stated(result) - {diagnosis}:
                assert _equivalent(exercise, diagnosis, other, seeds), (variant.__name__, other)


def _library_entries():
    for exercise_id in EXERCISES:
        module = library(exercise_id)
        also = getattr(module, "ALSO_TRUE", {})
        for implementation, text in module.WRONG.items():
            yield pytest.param(exercise_id, implementation, text, also.get(implementation, ()),
                               id=f"{exercise_id}-{implementation.__name__}")


@pytest.mark.parametrize("exercise_id, implementation, text, also_true", list(_library_entries()))
def test_the_library_s_mistakes_are_told_only_what_is_true_of_them(exercise_id, implementation, text, also_true):
    """Each mistake of ``tests/wrong_implementations/`` may be told the diagnosis its entry
    expects (the one containing its text), and those its file lists in ``ALSO_TRUE`` for it
    (a second mistake in the same code), never another."""
    exercise = EXERCISES[exercise_id]
    for seed in (0, 1):
        result = judge.judge_in_process(exercise, implementation, seed)
        allowed = [d for d in exercise.bugs if text.lower() in d.lower()
                   or any(t.lower() in d.lower() for t in also_true)]
        assert stated(result) <= set(allowed), (seed, stated(result) - set(allowed))


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_correct_alternatives_get_no_diagnosis(exercise_id):
    for implementation in library(exercise_id).CORRECT:
        result = judge.judge_in_process(EXERCISES[exercise_id], implementation, 1)
        assert not stated(result) and not result.feedback, (implementation.__name__, result.feedback)


def test_a_bug_right_where_the_known_bug_is_wrong_is_not_that_bug():
    """The scoring rule alone: a learner who matches a bug on one failing case but passes a case
    where that bug shows is not told the bug."""
    case = Case("c", "call", {"function": "causal_mask", "args": [2], "kwargs": {}, "returns": ["out"]})
    right, wrong = {"out": np.array([True, False])}, {"out": np.array([False, False])}
    outputs, expected = [right, wrong], [right, right]

    def bugs(i, diagnosis=None):
        shown = {"the bug": [wrong]}
        return shown if diagnosis is None else shown.get(diagnosis)

    result = scoring.score("causal_mask", 4, [case, case], outputs, expected, bugs)
    assert not stated(result)  # the learner passes case 0, where the bug shows
    result = scoring.score("causal_mask", 4, [case, case], [wrong, wrong], expected, bugs)
    assert stated(result) == {"the bug"}


# --- the false messages of the issue, each gone with the true cause named -----------------------

def flipped_offset(num_queries, num_keys=None):
    num_keys = num_queries if num_keys is None else num_keys
    i, j = np.arange(num_queries)[:, None], np.arange(num_keys)[None, :]
    return j <= i + (num_queries - num_keys)


def test_a_flipped_causal_offset_is_not_called_inverted():
    for exercise in (EXERCISES["causal_mask"], without("causal_mask", "wrong sign")):
        for seed in range(3):
            result = judge.judge_in_process(exercise, flipped_offset, seed)
            assert "inverted" not in result.feedback, result.feedback
    named = judge.judge_in_process(EXERCISES["causal_mask"], flipped_offset).feedback
    assert named.startswith("Your mask shifts the diagonal by Lq - Lk, the wrong sign"), named
    # Without that known bug, the minimal pair names the feature: square passes, Lq != Lk fails.
    unnamed = judge.judge_in_process(without("causal_mask", "wrong sign"), flipped_offset).feedback
    # Without it, a generated mutant's name (the offset subtracted) or the minimal pair says where.
    assert re.search(r"their inputs differ only in the [\w ]+: (one query, )?Lq [<>] Lk where the passing one has "
                     r"Lq = Lk|if an addition were a subtraction in the query positions", unnamed), unnamed
    assert "j <= i + (Lk - Lq)" not in unnamed  # which inputs fail says where, not what to change


class _Learner(library("MultiHeadAttention").Layer):
    """A learner's layer (the library's, correct), for mistakes the library does not hold."""


class ReturnsDroppedWeights(_Learner):
    after_dropout = True


class HeadMaskAfterMerge(_Learner):
    def forward(self, query, key, value, mask=None, head_mask=None):
        out, weights = super().forward(query, key, value, mask, None)
        if head_mask is not None:  # on the output of W_o, each head's share of the features
            out = out * head_mask.repeat_interleave(out.shape[-1] // len(head_mask))
        return out, weights


class FromTorchTransposed(_Learner):
    @classmethod
    def from_torch(cls, ref):
        layer = super().from_torch(ref)
        with torch.no_grad():
            for linear in (layer.W_q, layer.W_k, layer.W_v, layer.W_o):
                linear.weight.copy_(linear.weight.T.clone())
        return layer


@pytest.mark.parametrize("learner, part, feature", [
    (ReturnsDroppedWeights, "dropout", "dropout=0.5"),
    (HeadMaskAfterMerge, "head_mask", "a head_mask (1, 0, 0.5)"),
])
def test_the_layer_s_summary_blames_the_part_that_fails(learner, part, feature):
    exercise = EXERCISES["MultiHeadAttention"]
    result = judge.judge_in_process(exercise, learner)
    assert result.score < result.max_score
    assert "kdim" not in result.feedback and "W_k" not in result.feedback, result.feedback
    # Every case of the part fails (the masks case with a head_mask counts against the head_mask:
    # its copy without one passes), and every other part passes.
    assert "By part: " in result.feedback and re.search(rf"{part}: (\d) of \1 cases fail", result.feedback), \
        result.feedback
    assert all(f"{other} passes" in result.feedback for other in layer_module.PARTS if other != part), result.feedback
    # With no known bug to name it, the minimal pair does: the same case without the feature passes.
    unnamed = judge.judge_in_process(dataclasses.replace(exercise, bugs={}), learner)
    assert "fails on kdim" not in unnamed.feedback and "W_k" not in unnamed.feedback, unnamed.feedback
    assert re.search(rf"fails with {re.escape(feature)}[^.]* and passes with its|differ only in the [^:]+: "
                     rf"{re.escape(feature)}[^.]* where", unnamed.feedback) or any(r.diagnosis for r in unnamed.cases), \
        unnamed.feedback


def test_the_layer_s_cases_isolate_every_part_and_every_hinted_feature():
    """Item 1: a head_mask case with E = kdim = vdim and no mask, a dropout case with no mask...:
    for every feature a hint names, some case differs from the first in that feature alone."""
    hinted = [e for e in EXERCISES.values() if e.hints]
    assert len(hinted) == len(EXERCISES)
    for exercise in EXERCISES.values():  # every case says what its inputs are, in the same features
        cases = draw.grading_cases(exercise, 0)
        assert all(c.features for c in cases), exercise.id
        assert len({frozenset(c.features) - set(scoring.summary.RESERVED) for c in cases}) == 1, exercise.id
    for exercise in hinted:
        exercise_id = exercise.id
        features = [{k: v for k, v in c.features.items() if k not in scoring.summary.RESERVED}
                    for c in judge.in_process_cases(exercise, 0)]
        isolated = set()
        for a in features:
            for b in features:
                differ = [k for k in a if a[k] != b.get(k)]
                if len(differ) == 1:
                    isolated |= {differ[0], a[differ[0]], b[differ[0]]}
        for hinted in exercise.hints:
            assert hinted in isolated, (exercise_id, hinted)
    parts = {c.features["part"] for c in layer_module.layer_cases(np.random.default_rng(0))}
    assert parts == set(layer_module.PARTS)


def test_from_torch_copying_the_transpose_is_told_so():
    result = judge.judge_in_process(EXERCISES["MultiHeadAttention"], FromTorchTransposed)
    assert "transposed (w.T)" in result.feedback, result.feedback
    assert "chunk" not in result.feedback.split("By part")[0], result.feedback


def test_a_mask_without_its_head_axis_is_worded_from_the_learner_s_side():
    from autograder.grading.arguments import describe_rejected

    q, k, v = np.zeros((2, 3, 4, 6)), np.zeros((2, 3, 5, 6)), np.zeros((2, 3, 5, 7))
    words = describe_rejected("scaled_dot_product_attention", [q, k, v, np.ones((2, 4, 5), bool)], {},
                              ValueError("operands could not be broadcast together"))
    assert words.startswith("the mask (2, 4, 5) = (B, Lq, Lk) needs a head axis: (B, 1, Lq, Lk)"), words
    feedback = scoring.error_feedback(CaseError("exception", f"RuntimeError: the reference "
                                                f"scaled_dot_product_attention raised {words} (layer.py, line 9: "
                                                f"heads, w = scaled_dot_product_attention(q, k, v, mask))"))
    assert "reference" not in feedback
    assert plain(feedback).startswith("your call to scaled_dot_product_attention at layer.py line 9"), feedback


def test_a_mask_without_its_head_axis_through_the_pipeline(tmp_path):
    runner = pytest.importorskip("autograder.grading.runner")
    submission = edited_solutions(tmp_path, "layer", "return mask[:, None] if mask.ndim == 3 else mask",
                                  "return mask")
    report = runner.grade_submission(submission, exercises=["multi_head_attention"])
    result = report.exercises[0]
    assert result.status in ("partial", "failed")
    assert "reference" not in result.feedback and "the reference" not in " ".join(c.feedback for c in result.cases)
    assert "needs a head axis" in result.feedback, result.feedback
    said = [c.feedback for c in result.cases if not c.passed]
    assert any("= (B, Lq, Lk) needs a head axis: (B, 1, Lq, Lk)" in f for f in said), said  # (B, L, L) rows
    assert any("= (B, 1, Lk) needs a head axis: (B, 1, 1, Lk)" in f for f in said), said  # the padding mask


def test_a_file_that_does_not_import_grades_none_of_its_exercises(tmp_path):
    runner = pytest.importorskip("autograder.grading.runner")
    submission = edited_solutions(tmp_path, "masking", "def causal_mask(", "def causal_mask(:")
    report = runner.grade_submission(submission, exercises=["padding_mask", "causal_mask", "masked_softmax",
                                                            "multi_head_attention"])
    results = {r.id: r for r in report.exercises}
    line = next(i for i, text in enumerate((submission / "masking.py").read_text().splitlines(), 1)
                if "def causal_mask(:" in text)
    for exercise_id in ("padding_mask", "causal_mask", "masked_softmax"):
        result = results[exercise_id]
        assert result.score == 0 and result.status == "error"
        assert all(plain(c.feedback).startswith("not graded: your file masking.py does not import: SyntaxError")
                   for c in result.cases), result.cases[0].feedback
        assert f"line {line}" in result.cases[0].feedback
    assert results["multi_head_attention"].status == "passed"  # graded with stand-ins for masking.py...


def test_check_does_not_pass_an_exercise_whose_package_does_not_import():
    """...but check() marks it ✘ and says which file to fix, plainly."""
    from autograder import service
    from autograder.submission import load
    from mha_exercises.check import report_lines

    sources = dict(load(Path(__file__).resolve().parents[1] / "solutions").sources)
    sources["masking"] = sources["masking"].replace("def causal_mask(", "def causal_mask(:")
    try:
        report = service.grade("multi_head_attention", sources, "solutions")
    finally:
        service.stop()
    assert report["exercises"][0]["status"] == "passed"  # stand-ins for masking.py's functions
    text = " ".join(" ".join(report_lines("solutions", "multi_head_attention", "multi_head_attention", sources,
                                          report)).split())
    assert not text.startswith("✔"), text
    assert text.startswith("✘ multi_head_attention")
    assert text.startswith("✘ multi_head_attention: not graded: your file masking.py does not import: "
                           "SyntaxError at line"), text
    assert "Fix masking.py, save it, and check again." in text
    assert "older (the file does not compile)" not in text
    masking = " ".join(" ".join(report_lines("solutions", "causal_mask", "causal_mask", sources,
                                             {"exercises": [], "confinement": {}})).split())
    assert "older" not in masking and "does not compile" not in masking  # the grader's line says it


# --- item 4: the contract graded as written ----------------------------------------------------

def test_split_heads_is_graded_on_leading_axes_and_the_value_error():
    def three_d_only(x, num_heads):  # full marks before: the contract was not graded as written
        B, L, F = x.shape
        if F % num_heads:
            raise ValueError("no")
        return x.reshape(B, L, num_heads, F // num_heads).transpose(0, 2, 1, 3)

    def no_check(x, num_heads):
        d = x.shape[-1] // num_heads
        return np.stack([x[..., h * d:(h + 1) * d] for h in range(num_heads)], axis=-3)

    result = judge.judge_in_process(EXERCISES["split_heads"], three_d_only)
    # In process the exception names no line of the learner's: the pair is an observation, with no hint.
    assert result.score < result.max_score and "differ only in the leading axes: two leading axes" in result.feedback
    result = judge.judge_in_process(EXERCISES["split_heads"], no_check)
    assert result.score < result.max_score and "raise ValueError" in result.feedback, result.feedback
    failing = [c for c in result.cases if not c.passed]
    assert [c.name for c in failing] == ["last axis not divisible by num_heads"]


def test_merge_by_swapaxes_and_a_count_ignoring_value_dim_are_named():
    def swapped(x):
        return np.swapaxes(x, -1, -3).reshape(*x.shape[:-3], x.shape[-2], -1)

    def ignores_value_dim(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
        output_dim = query_dim if output_dim is None else output_dim
        hk = num_heads * key_dim  # the values too: value_dim never read
        return 3 * (query_dim * hk + bias * hk) + hk * output_dim + bias * output_dim

    merge = judge.judge_in_process(EXERCISES["merge_heads"], swapped)
    assert merge.feedback.startswith("Your output swaps the head axis with the feature axis (swapaxes(-1, -3))")
    count = judge.judge_in_process(EXERCISES["parameter_count"], ignores_value_dim)
    assert "ignores value_dim" in count.feedback, count.feedback


MEMORY_CASE = "Lq 64 < Lk 512, d_k = d_v, chunk_size 16 (memory measured)"


def _mib(text, before):
    return float(re.search(rf"{before} (\d+\.\d) MiB", text)[1])


@pytest.mark.parametrize("name", ["full_scores_then_chunks", "plain_softmax", "scores_chunked_then_joined",
                                  "numpy_whole_matrix"])
def test_a_whole_score_matrix_is_told_what_it_held(name):
    """Right values, the whole (Lq, Lk) matrix held: only the measured case fails, and its numbers
    are true (the matrix's size from the case's shapes, a peak at least half of it, the largest
    torch block the matrix itself, the reference's peak under a quarter of it)."""
    implementation = getattr(library("chunked_attention"), name)
    result = judge.judge_in_process(EXERCISES["chunked_attention"], implementation)
    failing = [c for c in result.cases if not c.passed]
    assert [c.name for c in failing] == [MEMORY_CASE], result.feedback
    said = failing[0].feedback
    case = next(c for c in judge.in_process_cases(EXERCISES["chunked_attention"], 0) if c.name == MEMORY_CASE)
    q, k = case.inputs["args"][:2]
    whole = np.prod(q.shape[:-1]) * k.shape[-2] * q.dtype.itemsize
    assert f"the whole (..., Lq, Lk) = {(*q.shape[:-1], k.shape[-2])} float64 score matrix" in said, said
    assert _mib(said, "at least half the") == round(whole / 2**20, 1)
    assert _mib(said, "your call held") >= whole / 2 / 2**20
    assert _mib(said, "holds") < whole / 4 / 2**20  # the reference's
    if name != "numpy_whole_matrix":
        assert "of new torch tensors at once (the largest" in said and _mib(said, "the largest") >= whole / 2**20
    else:
        assert "of new NumPy arrays and Python objects at once:" in said
    assert failing[0].cause == {"kind": "mismatch", "what": "peak memory"}
    assert scoring.MISMATCH_WORDS["peak memory"].startswith("the call held at least half of the whole score matrix")
    assert re.search(r"differ only in the [^:]+: 512 keys \(32 chunks\) where the passing one has a few keys",
                     result.feedback), result.feedback
    assert not stated(result)  # no known bug's values: nothing to diagnose but the memory


def _stops(what):
    reference_chunked = reference.namespace().module("efficient").chunked_attention

    def chunked(q, k, v, chunk_size, causal=False):
        if what == "tracemalloc":
            import tracemalloc
            tracemalloc.stop()
        elif torch.autograd._profiler_enabled():
            torch.autograd._disable_profiler_legacy()
        return reference_chunked(q, k, v, chunk_size, causal)

    return chunked


@pytest.mark.parametrize("what, said", [("tracemalloc", "stopped tracemalloc,"),
                                        ("profiler", "stopped torch's profiler,")])
def test_a_call_that_stops_the_measure_is_told_so(what, said):
    result = judge.judge_in_process(EXERCISES["chunked_attention"], _stops(what))
    failing = [c for c in result.cases if not c.passed]
    assert [c.name for c in failing] == [MEMORY_CASE], result.feedback
    assert plain(failing[0].feedback) == (f"your call {said} with which the grader measures the memory the call "
                                   "allocates: leave it running")


class _ParameterProjections(library("MultiHeadAttention").Layer):
    """Weights as bare parameters, applied with F.linear: W_q is no module at all."""

    def __init__(self, embed_dim, num_heads, **kwargs):
        super().__init__(embed_dim, num_heads, **kwargs)
        self.W_q = torch.nn.Parameter(self.W_q.weight.detach().clone())
        del self.W_o


def test_projections_that_are_not_nn_linear_are_named_with_what_they_are():
    exercise = EXERCISES["MultiHeadAttention"]
    result = judge.judge_in_process(exercise, library("MultiHeadAttention").OwnProjections)
    failing = [c for c in result.cases if not c.passed]
    assert [c.name for c in failing] == ["E = kdim = vdim, Lq = Lk, no mask: W_q..W_o are nn.Linear"]
    module = library("MultiHeadAttention").__name__
    assert plain(failing[0].feedback) == (
        f"your layer's W_q and W_v are not nn.Linear: W_q is a Projection ({module}.Projection), W_v is a "
        f"Projection ({module}.Projection); W_q, W_k, W_v and W_o must be nn.Linear modules (torch.nn.Linear or a "
        "subclass of it)")
    assert failing[0].cause == {"kind": "mismatch", "what": "module types"}
    # A layer whose W_q is a bare parameter and that has no W_o fails everywhere (its weights
    # cannot be loaded); the case on the types says what they are.
    said = {c.name: plain(c.feedback) for c in judge.judge_in_process(exercise, _ParameterProjections).cases}
    assert said["E = kdim = vdim, Lq = Lk, no mask: W_q..W_o are nn.Linear"].startswith(
        "your layer's W_q and W_o are not nn.Linear: W_q is a Parameter (torch.nn.parameter.Parameter), W_o is "
        "None or missing;"), said


# --- item 5: a shape assumption named from the failing line and the feature ----------------------

def test_a_crash_on_a_general_case_names_the_assumption():
    exercise = EXERCISES["split_heads"]
    cases = judge.in_process_cases(exercise, 0)
    ns = reference.namespace()
    outputs = []
    for case in cases:
        if case.features.get("leading axes") == "two leading axes (B, C, ...)":
            outputs.append(CaseError("exception", "ValueError: too many values to unpack (expected 3) "
                                                  "(heads.py, line 5: B, L, F = x.shape)",
                                     source="B, L, F = x.shape"))  # the grader's read of line 5 (held_to_facts)
        else:
            outputs.append(judge.run_driver(case, ns))
    result = judge.judge_exercise(exercise, cases, outputs, [])
    # Every value that passes with the rest alike is named: here one leading axis and none.
    assert ("With two leading axes (B, C, ...) your code raises ValueError at heads.py line 5 (`B, L, F = x.shape`), "
            "while a case with one leading axis (B, ...) or no leading axis") in plain(result.feedback), result.feedback


def test_a_transpose_of_every_axis_on_the_failing_line_is_explained():
    """A fact about the failing line (``k.T`` on a 3-D or 4-D array), said after the crash."""
    exercise = EXERCISES["scaled_dot_product_attention"]
    cases = draw.grading_cases(exercise, 0)
    outputs = [CaseError("exception", "ValueError: matmul: mismatch (attention.py, line 10: scores = q @ k.T / 2)",
                         source="scores = q @ k.T / 2")  # the grader's read of line 10 (exchange.held_to_facts)
               for _ in cases]
    feedback = plain(judge.judge_exercise(exercise, cases, outputs, []).feedback)
    assert "`k.T` reverses every axis of an array with more than two axes" in feedback, feedback
    assert "np.swapaxes(k, -1, -2)" in feedback
    outputs = [CaseError("exception", "ValueError: x (attention.py, line 10: scores = q @ k.mT)",
                         source="scores = q @ k.mT") for _ in cases]
    assert "reverses every axis" not in judge.judge_exercise(exercise, cases, outputs, []).feedback


def test_without_a_minimal_pair_no_feature_is_blamed():
    """Failing cases that differ from every passing case in two features: the sentence lists what
    they share and blames neither; with a pair, the one feature is named."""
    def case(name, **features):
        return Case(name, "call", {"function": "causal_mask", "args": [2], "kwargs": {}, "returns": ["out"]},
                    features=features)

    right, wrong = {"out": np.array([True])}, {"out": np.array([False])}
    cases = [case("a", lengths="Lq = Lk", dtype="float64"), case("b", lengths="Lq < Lk", dtype="float32")]
    result = scoring.score("causal_mask", 4, cases, [right, wrong], [right, right], lambda i, d=None: {} if d is None
                           else None)
    assert "Every failing case has Lq < Lk and float32, which no passing case has; no passing case differs from " \
           "such a failing case in a single feature" in result.feedback, result.feedback
    assert "Correct on" not in result.feedback
    cases.append(case("c", lengths="Lq < Lk", dtype="float64"))
    result = scoring.score("causal_mask", 4, cases, [right, wrong, wrong], [right] * 3,
                           lambda i, d=None: {} if d is None else None, hints={"Lq < Lk": "align to the end"})
    assert ("'c' fails and 'a' passes, and their inputs differ only in the lengths: Lq < Lk where the passing one has "
            "Lq = Lk.") in result.feedback, result.feedback
    assert "align to the end" not in result.feedback  # an observation of inputs: no hint to change the code


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["Lq = Lk", "Lq < Lk"]), st.sampled_from(["float64", "float32"]),
                          st.sampled_from(["right", "wrong", "slow", "not run"])), min_size=2, max_size=8))
def test_a_case_the_grader_never_ran_is_no_evidence(rows):
    """After two slow cases in a row the grader leaves the rest unrun (``exchange.not_run``): such a case
    is never named as the failing half of a pair, never makes a rung of the ladder pass or fail,
    and its words are its own ("not run"), never the slow case's."""
    def case(i, lengths, dtype):
        return Case(f"case{i}", "call", {"function": "causal_mask", "args": [2], "kwargs": {}, "returns": ["out"]},
                    features={"lengths": lengths, "dtype": dtype}, rung=int(lengths != "Lq = Lk"))

    right, wrong = {"out": np.array([True])}, {"out": np.array([False])}
    made = {"right": right, "wrong": wrong, "slow": CaseError("timeout", "this case used more than 1.5 s"),
            "not run": exchange.not_run("two cases in a row ran out of their limits")}
    cases = [case(i, lengths, dtype) for i, (lengths, dtype, _) in enumerate(rows)]
    result = scoring.score("causal_mask", 4, cases, [made[what] for *_, what in rows], [right] * len(rows),
                           lambda i, d=None: {} if d is None else None,
                           ladder=(("Lq = Lk", ""), ("Lq < Lk", "align to the end")))
    unrun = [f"case{i}" for i, (*_, what) in enumerate(rows) if what == "not run"]
    for name in unrun:
        assert f"{name!r} fails" not in result.feedback and f"{name!r} vs" not in result.feedback, result.feedback
    if unrun:
        assert not result.ladder and "Every case with" not in result.feedback, result.feedback
        shown = [c.feedback for c in result.cases if c.name in unrun]
        assert all(f.startswith("not run: ") for f in shown), shown
    assert "this case used more than" not in result.feedback or any(what == "slow" for *_, what in rows)
    if unrun and "Every failing case" in result.feedback:  # what the failing cases share: those that ran
        assert "Every failing case that ran to its own end has" in result.feedback, result.feedback


def test_an_intervention_never_run_earns_nothing_and_vetoes_nothing():
    """A slow case's intervention (its copy with one feature changed) is not run: it is no graded
    case, and no pair is vetoed by it (a probe that never ran shows nothing)."""
    from autograder.scoring import summary

    def case(name, dtype, **more):
        return Case(name, "call", {"function": "causal_mask", "args": [2], "kwargs": {}, "returns": ["out"]},
                    features={"lengths": "Lq = Lk", "dtype": dtype, **more})

    right = {"out": np.array([True])}
    cases = [case("a", "float32"), case("a, dtype changed", "float64", **{summary.PROBE: ("a", "dtype")}),
             case("b", "float64")]
    outputs = [CaseError("timeout", "this case used more than 1.5 s of CPU time"),
               exchange.not_run("the case it changes one feature of ran out of its limit"), right]
    result = scoring.score("causal_mask", 4, cases, outputs, [right] * 3, lambda i, d=None: {} if d is None else None)
    assert [c.name for c in result.cases] == ["a", "b"]
    assert "'a' fails and 'b' passes, and their inputs differ only in the dtype: float32" in result.feedback, \
        result.feedback


def test_a_case_out_of_time_names_its_feature_but_no_fix():
    """Slow on float32 only: the pair says where it fails, never the float32 hint (keeping the
    dtype is not what is slow there); a case cut short by the exercise's time names nothing."""
    def case(name, dtype):
        return Case(name, "call", {"function": "causal_mask", "args": [2], "kwargs": {}, "returns": ["out"]},
                    features={"lengths": "Lq = Lk", "dtype": dtype})

    right = {"out": np.array([True])}
    cases = [case("a", "float32"), case("b", "float64")]
    hints = {"float32": "keep the input's dtype"}
    slow = CaseError("timeout", "this case used more than 1.5 s of CPU time")
    result = scoring.score("causal_mask", 4, cases, [slow, right], [right] * 2,
                           lambda i, d=None: {} if d is None else None, hints=hints)
    assert "differ only in the dtype: float32" in result.feedback and "keep the" not in result.feedback
    cut = CaseError("timeout", "the exercise's 10 s ran out during this case", own=False)
    result = scoring.score("causal_mask", 4, cases, [cut, right], [right] * 2,
                           lambda i, d=None: {} if d is None else None, hints=hints)
    assert "fails on" not in result.feedback and "Correct on" not in result.feedback, result.feedback


# --- issue 42: the learner mistakes its report quotes, each named, none told a false sentence ------

def _table(length, dim, offset=0, base=10000.0, *, sign=-1, slope=2, layout="interleaved", dtype=torch.float32):
    if dim % 2:
        raise ValueError(f"odd dim {dim}")
    positions = torch.arange(offset, offset + length, dtype=torch.float64)[:, None]
    angles = positions * base ** (sign * slope * torch.arange(dim // 2, dtype=torch.float64) / dim)
    if layout == "halves":  # fairseq: [sin(all) | cos(all)]
        return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1).to(dtype)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(-2).to(dtype)


def test_a_table_that_multiplies_by_the_frequency_is_named_and_the_offset_is_not_blamed():
    result = judge.judge_in_process(EXERCISES["sinusoidal_positions"], lambda *a, **k: _table(*a, sign=1, **k))
    assert any("base^(-1)" in (r.diagnosis or "") for r in result.cases), result.feedback
    assert "offset" not in result.feedback.replace("offset + t", ""), result.feedback


def test_rope_with_exponent_4i_over_d_is_named_as_the_base_squared():
    def rope(x, offset=0, base=10000.0):
        d = x.shape[-1]
        if d % 2:
            raise ValueError("odd d")
        positions = torch.arange(offset, offset + x.shape[-2], dtype=torch.float64)[:, None]
        angles = positions * base ** (-4 * torch.arange(d // 2, dtype=torch.float64) / d)
        cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
        x1, x2 = x[..., :d // 2], x[..., d // 2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    result = judge.judge_in_process(EXERCISES["apply_rope"], rope)
    assert all("base^2 in place of base" in (r.diagnosis or "") for r in result.cases if not r.passed), result.feedback
    assert "fails with an offset" not in result.feedback, result.feedback


def test_a_float64_table_is_not_said_to_have_float32_inputs():
    result = judge.judge_in_process(EXERCISES["sinusoidal_positions"], lambda *a, **k: _table(*a, dtype=torch.float64, **k))
    assert result.score < result.max_score
    said = plain(result.feedback) + " ".join(plain(r.feedback) for r in result.cases)
    assert "inputs" not in said and "is float64, expected float32" in said, said
    assert "the dtype cast were left out" in result.feedback, result.feedback  # the generated catalogue's name


def test_a_sines_then_cosines_table_is_told_its_columns_are_the_references_in_another_order():
    exercise = dataclasses.replace(EXERCISES["sinusoidal_positions"], bugs={})
    result = judge.judge_in_process(exercise, lambda *a, **k: _table(*a, layout="halves", **k))
    assert ("Your result is the reference's with the entries along its last axis (dim) in another order: the "
            "reference's even-numbered entries first, then its odd-numbered ones") in result.feedback, result.feedback


def test_a_softmax_shifted_by_the_row_minimum_loses_points():
    def softmax(x, axis=-1):
        e = np.exp(x - x.min(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    with np.errstate(all="ignore"):
        result = judge.judge_in_process(EXERCISES["softmax"], softmax)
    assert result.score < result.max_score
    assert [r.name for r in result.cases if not r.passed] == ["rows spanning -1e4 to 1e4"]
    assert "subtract each row's own max" not in result.feedback  # which rows fail says where, not what to change


def _gqa_reading_the_cache_length_after_update():
    from solutions import efficient as ref

    class GQA(ref.GroupedQueryAttention):
        def forward(self, x, mask=None, causal=False, cache=None):
            q = self._split(self.W_q(x), self.num_heads)
            k, v = self._split(self.W_k(x), self.num_kv_heads), self._split(self.W_v(x), self.num_kv_heads)
            past = 0
            if cache is not None:
                k, v = cache.update(k, v)
                past = len(cache)  # read after the update: the new tokens counted too
            n_rep = self.num_heads // self.num_kv_heads
            k, v = ref.repeat_kv(k, n_rep), ref.repeat_kv(v, n_rep)
            allowed = None if mask is None else mask.to(torch.bool)
            if causal:
                lq, lk = q.shape[-2], k.shape[-2]
                causal_ = torch.arange(lk)[None, :] <= torch.arange(lq)[:, None] + past
                allowed = causal_ if allowed is None else allowed & causal_
            return self.W_o(ref.attention(q, k, v, allowed).transpose(-3, -2).flatten(-2))

    return GQA


def test_gqa_reading_len_cache_after_update_is_named_and_no_dtype_is_blamed():
    learner = _gqa_reading_the_cache_length_after_update()
    result = judge.judge_in_process(EXERCISES["GroupedQueryAttention"], learner)
    failing = [r for r in result.cases if not r.passed]
    assert failing and all("cache's length after it took the new keys" in (r.diagnosis or "") for r in failing), \
        result.feedback
    # Without that bug listed, no pair blames the dtype: the 1-token float32 case differs in the
    # number of new tokens too (the code never reads the dtype).
    result = judge.judge_in_process(without("GroupedQueryAttention", "after it took"), learner)
    assert result.score < result.max_score
    assert "float64" not in plain(result.feedback) and "Correct on" not in result.feedback, result.feedback


def test_a_numpy_layer_putting_the_head_axis_first_is_told_where_its_axes_are(tmp_path):
    runner = pytest.importorskip("autograder.grading.runner")
    submission = edited_solutions(tmp_path, "layer", "return mask[:, None] if mask.ndim == 3 else mask",
                                  "return mask[None] if mask.ndim == 3 else mask")
    result = runner.grade_submission(submission, exercises=["multi_head_attention"]).exercises[0]
    said = plain(result.feedback)
    failing = [r.name for r in result.cases if not r.passed]
    assert sorted(failing) == ["self-attention, mask (B, L, L) with fully masked rows",
                               "self-attention, padding mask (B, 1, L)"], failing  # causal (Lq, Lk) and 4-D pass
    assert "assumes" not in said and "RuntimeError" not in said, said  # the grader's proxy raised it, not their code
    assert "Your call to scaled_dot_product_attention at layer.py line 29 passed arguments it cannot take (in 2 of 2" in said
    for r in result.cases:
        if not r.passed:
            assert "has its size-1 axis first and an axis of size B = 2 second" in plain(r.feedback), r.feedback


def _prune_indexing_w_o_bias(layer, heads):
    from solutions import pruning as ref

    heads, removed = {int(h) for h in heads}, getattr(layer, "pruned_heads", set())
    surviving = [h for h in range(layer.num_heads + len(removed)) if h not in removed]
    keep = [i for i, h in enumerate(surviving) if h not in heads]
    index = (torch.tensor(keep)[:, None] * layer.head_dim + torch.arange(layer.head_dim)).flatten()
    for linear in (layer.W_q, layer.W_k, layer.W_v):
        ref._keep(linear, index, dim=0)
    ref._keep(layer.W_o, index, dim=1)
    if layer.W_o.bias is not None:  # the mistake: W_o's bias indexed like its input columns
        layer.W_o.bias = torch.nn.Parameter(layer.W_o.bias[index].detach().clone())
    layer.num_heads = len(keep)
    layer.pruned_heads = removed | (heads & set(surviving))
    return layer


def test_prune_heads_indexing_w_o_bias_is_named_and_compared_after_every_call():
    result = judge.judge_in_process(EXERCISES["prune_heads"], _prune_indexing_w_o_bias)
    failing = [r for r in result.cases if not r.passed]
    assert failing and all("W_o's bias pruned with its input columns" in (r.diagnosis or "") for r in failing)
    # The harness's forward pass fails after the first call; the driver still makes every call the
    # case describes, so the shapes compared are those after all of them (W_q is right: [12, 24]).
    result = judge.judge_in_process(without("prune_heads", "W_o's bias"), _prune_indexing_w_o_bias)
    said = {r.name: plain(r.feedback) for r in result.cases if not r.passed}
    assert "W_q.weight" not in " ".join(said.values()), said
    assert "W_o.bias is [12], expected [24]" in said["prune [3], then [2, 4] (original numbering)"], said
    assert "values differ" not in plain(result.feedback), result.feedback  # shapes were compared, not values


@pytest.mark.parametrize("stem", ["hf_bertology", "mlm_rewiring_zero_grad"])
def test_bertology_s_importance_loop_is_named_by_all_three_of_its_departures(stem):
    path = Path(__file__).parent / "outside" / "head_importance" / f"{stem}.py"
    spec = importlib.util.spec_from_file_location(f"outside_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = judge.judge_in_process(EXERCISES["head_importance"], module.head_importance)
    failing = [r for r in result.cases if not r.passed]
    assert failing and all("never reset, so the gradients accumulate" in (r.diagnosis or "") for r in failing), \
        result.feedback


def test_a_padding_mask_sized_by_the_longest_length_is_named_where_it_returns():
    def padding_mask(valid_lens, num_keys):  # get_mask_from_lengths: arange(max(lengths)), num_keys unused
        lengths = torch.as_tensor(np.asarray(valid_lens))
        mask = (torch.arange(int(lengths.max())) < lengths.unsqueeze(1)).numpy()
        return mask[:, None, :] if lengths.ndim == 1 else mask

    result = judge.judge_in_process(EXERCISES["padding_mask"], padding_mask)
    named = [r for r in result.cases if "num_keys = max(valid_lens)" in (r.diagnosis or "")]
    assert named and all(not r.passed for r in named), result.feedback
    # The (B, Lq) cases raise in the learner's code: the bug is not claimed there.
    assert all(r.diagnosis is None for r in result.cases if "raised" in plain(r.feedback)), result.feedback


def _outside(exercise_id, stem):
    path = Path(__file__).parent / "outside" / exercise_id / f"{stem}.py"
    spec = importlib.util.spec_from_file_location(f"outside_{exercise_id}_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("stem, said, where", [
    ("nanogpt_generate", "drawn from torch's global generator instead of the generator passed in", "sampled"),
    ("transformerstudy_always_sample", "sampling at temperature 1 whatever the temperature", "")])
def test_nanogpt_style_generate_loops_are_named_where_their_tokens_are_theirs(stem, said, where):
    result = judge.judge_in_process(EXERCISES["generate"], _outside("generate", stem).generate)
    named = [r for r in result.cases if said in (r.diagnosis or "")]
    assert named and all(not r.passed and r.name.startswith(where) for r in named), result.feedback
    # Greedy nanoGPT divides by a temperature of 0 and raises: those cases are told the exception, no bug.
    assert all(r.diagnosis is None for r in result.cases if "raised" in plain(r.feedback)), result.feedback


def _prune_then(after):
    from solutions import pruning as ref

    def prune_heads(layer, heads):
        num_heads = layer.num_heads
        ref.prune_heads(layer, heads)
        return after(layer, heads, num_heads)

    return prune_heads


@pytest.mark.parametrize("learner, said", [
    # num_heads counts an already-removed head again: the second call's forward pass fails.
    (_prune_then(lambda layer, heads, n: setattr(layer, "num_heads", n - len(heads)) or layer),
     {"prune [2], then [2, 5] (2 is already gone), then [0]": "num_heads is 2, expected 3"}),
    # No return: the layer is pruned right, only the returned object is wrong.
    (_prune_then(lambda layer, heads, n: None), {}),
])
def test_prune_heads_is_compared_in_the_state_its_calls_leave(learner, said):
    exercise = dataclasses.replace(EXERCISES["prune_heads"], bugs={})
    result = judge.judge_in_process(exercise, learner)
    told = {r.name: plain(r.feedback) for r in result.cases if not r.passed}
    assert told and not any("W_q.weight" in t or "values differ" in t for t in told.values()), told
    for name, words in said.items():
        assert words in told[name], told
    if not said:  # every failing case is told the return, nothing about shapes
        assert all("returned the same layer" in t for t in told.values()), told
        result = judge.judge_in_process(EXERCISES["prune_heads"], learner)
        assert all("does not return that layer" in (r.diagnosis or "") for r in result.cases if not r.passed)


def test_an_output_nan_throughout_matches_no_bug_and_no_mutant():
    import inspect

    from solutions import efficient as ref

    source = inspect.getsource(ref.chunked_attention).replace(
        "rescale = torch.exp(m - shift)", "rescale = torch.exp(shift - m.clamp(min=torch.finfo(q.dtype).min))")
    assert "exp(shift - m" in source
    namespace = dict(vars(ref))
    exec(source, namespace)  # the rescale inverted: 0 * inf on the first chunk, NaN everywhere
    result = judge.judge_in_process(EXERCISES["chunked_attention"], namespace["chunked_attention"])
    assert result.score < result.max_score
    assert not any(r.diagnosis for r in result.cases), [r.diagnosis for r in result.cases]
    assert "The output holds NaN" in plain(result.feedback), result.feedback


def test_the_ladder_is_said_of_its_rungs_never_of_a_feature_later_rungs_share():
    from autograder.scoring import summary

    said = summary.climbed((("one head", ""), ("fewer key/value heads", ""), ("decoding after cached tokens", "")),
                           {0: [True], 1: [True, True], 2: [False, True]})
    assert said == ("Every case on the rungs 'one head' and 'fewer key/value heads' passes; the failing ones are on "
                    "the rung 'decoding after cached tokens'."), said


def test_a_pair_names_the_other_values_its_failing_cases_have():
    import inspect

    from solutions import efficient as ref

    source = inspect.getsource(ref.chunked_attention).replace("l = l * rescale + p.sum(", "l = l + p.sum(")
    assert "l = l + p.sum(" in source
    namespace = dict(vars(ref))
    exec(source, namespace)  # the denominator not rescaled: wrong wherever there is more than one chunk
    result = judge.judge_in_process(EXERCISES["chunked_attention"], namespace["chunked_attention"])
    said = plain(result.feedback)
    assert "chunk_size does not divide Lk where the passing one has chunk_size > Lk (other failing cases have " \
           "chunk_size divides Lk" in said, said


def test_a_pair_says_when_a_passing_case_has_the_failing_value_too():
    from autograder.scoring import summary

    def case(name, mask, cache):
        return Case(name, "call", {}, features={"mask": mask, "cache": cache})

    cases = [case("fully masked row", "a boolean mask", "no cache"), case("no mask", "no mask", "no cache"),
             case("decoding, padding mask", "a boolean mask", "a cache")]
    said = summary.isolated(cases, [False, True, True], [{}, {}, {}], {}, set())
    assert said[:1] == ["'fully masked row' fails and 'no mask' passes, and their inputs differ only in the mask: a "
                    "boolean mask where the passing one has no mask (a boolean mask passes in 'decoding, padding "
                    "mask')."], said


def test_a_cache_s_sequence_axis_is_never_labelled_by_a_size_it_happens_to_equal():
    from solutions import efficient as ref

    class NewOnly(ref.KVCache):  # stores everything, returns only the new (k, v)
        def update(self, k, v):
            super().update(k, v)
            return k, v

    result = judge.judge_in_process(EXERCISES["KVCache"], NewOnly)
    said = plain(result.feedback) + " ".join(plain(r.feedback) for r in result.cases)
    assert "entries missing at the start along its second-to-last axis" in said, said
    assert "axis (d)" not in said and "(d_v)" not in said and "= (B, Hkv, d, d)" not in said, said


def test_a_running_max_started_at_zero_loses_points():
    import inspect

    from solutions import efficient as ref

    source = inspect.getsource(ref.chunked_attention).replace(
        'm = torch.full((*q.shape[:-1], 1), float("-inf"), dtype=q.dtype, device=q.device)',
        "m = torch.zeros((*q.shape[:-1], 1), dtype=q.dtype, device=q.device)")
    assert "m = torch.zeros(" in source
    namespace = dict(vars(ref))
    exec(source, namespace)  # right unless every score of a row is far below 0: exp underflows to 0 / 0
    result = judge.judge_in_process(EXERCISES["chunked_attention"], namespace["chunked_attention"])
    assert [r.name for r in result.cases if not r.passed] == ["every score about -2000, Lq 4, Lk 10, chunk_size 3"]


def test_induction_reading_key_then_query_is_named_as_the_transposed_weights():
    def induction_score(weights, period):
        length = weights.shape[-1]
        if not 1 <= period < length:
            raise ValueError("period")
        queries = torch.arange(period, length)
        return weights[..., queries - period + 1, queries].mean(dim=-1)  # [key, query]: swapped

    result = judge.judge_in_process(EXERCISES["induction_score"], induction_score)
    failing = [r for r in result.cases if not r.passed]
    assert failing and all("on the transposed weights" in (r.diagnosis or "") for r in failing), result.feedback
    assert "where the passing one has period 1" not in plain(result.feedback), result.feedback


def test_a_kv_cache_s_checks_are_named_as_checks_not_as_inputs_the_passing_cases_lack():
    from solutions import efficient as ref

    class BatchLength(ref.KVCache):  # len() is the batch size
        def __len__(self):
            return 0 if self.keys is None else len(self.keys)

    said = plain(judge.judge_in_process(EXERCISES["KVCache"], BatchLength).feedback)
    assert "Every failing case has the check of what each update returns, which no passing case has" in said, said
    assert "has updates" not in said, said  # the passing decoding cases call update too


def test_an_output_bias_left_out_is_told_the_difference_is_one_vector_at_every_position():
    from solutions import layer as ref

    def multi_head_attention(query, key, value, params, num_heads, mask=None):
        q, k, v = (ref.split_heads(ref._affine(x, params, n), num_heads) for x, n in ((query, "q"), (key, "k"),
                                                                                    (value, "v")))
        heads, weights = ref.scaled_dot_product_attention(
            q, k, v, None if mask is None else ref._heads_mask(np.asarray(mask, dtype=bool)))
        return ref.merge_heads(heads) @ params["W_o"], weights  # b_o left out

    result = judge.judge_in_process(EXERCISES["multi_head_attention"], multi_head_attention)
    assert result.score < result.max_score
    assert ("it is the reference's plus one and the same vector along the last axis (E_out) at every index of the "
            "other axes") in plain(result.feedback), result.feedback


def test_a_temperature_applied_to_the_probabilities_is_named_where_it_shows():
    from solutions import language_model as ref

    def generate(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
        tokens, caches = prompt, (model.new_caches() if use_cache else None)
        logits = model(tokens, caches=caches)
        for step in range(max_new_tokens):
            last = logits[:, -1, :]
            if temperature == 0:
                nxt = last.argmax(dim=-1, keepdim=True)
            else:  # the temperature divides the probabilities: multinomial renormalises them
                nxt = torch.multinomial(torch.softmax(last, dim=-1) / temperature, 1, generator=generator)
            tokens = torch.cat([tokens, nxt], dim=1)
            if step + 1 < max_new_tokens:
                logits = model(nxt, caches=caches) if use_cache else model(tokens)
        return tokens

    assert ref.generate is not generate
    result = judge.judge_in_process(EXERCISES["generate"], generate)
    failing = [r for r in result.cases if not r.passed]
    assert failing and all("at temperature 1 whatever the temperature: divide" in (r.diagnosis or "")
                           for r in failing), result.feedback


def test_a_log_with_where_and_no_out_loses_points_whatever_memory_it_is_given():
    def attention_entropy(weights):
        w = np.asarray(weights)
        return -(w * np.log(w, where=w > 0)).sum(-1)  # the masked-out entries of the log are never written

    with np.errstate(all="ignore"):
        result = judge.judge_in_process(EXERCISES["attention_entropy"], attention_entropy)
    assert result.score < result.max_score, result.feedback
    assert "np.log(w, where=w > 0) without out=" in plain(result.feedback), result.feedback

"""The grader's checks and judge: wrong implementations lose points with the right diagnosis,
correct alternatives and the solutions get full marks, and the judge's messages name what is
wrong. Drivers run in-process here (fast, independent of the isolation pipeline); one test at
the end goes through ``runner.grade_submission``."""
from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from autograder.said import plain  # the learner's words in their slots, read as text
from autograder import scoring
from autograder.grading import judge, reference
from autograder.grading.exercises import EXERCISES
from autograder.spec import Case, CaseError, Exercise
from solution_copies import edited_solutions

LIBRARY = Path(__file__).parent / "wrong_implementations"
SEEDS = range(5)


def library(exercise_id):
    path = LIBRARY / f"{exercise_id}.py"
    spec = importlib.util.spec_from_file_location(f"wrong_implementations_{exercise_id}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def grade(exercise: Exercise, implementation=None, seed=0):
    """Grade ``implementation`` of the exercise (None: the solution) as the pipeline would."""
    return judge.judge_in_process(exercise, implementation, seed)


def _entries(kind):
    return [pytest.param(ex, impl, expected, id=f"{ex}-{impl.__name__}")
            for ex in EXERCISES for impl, expected in
            (library(ex).WRONG.items() if kind == "wrong" else ((i, None) for i in library(ex).CORRECT))]


def test_library_covers_every_exercise():
    for exercise_id in EXERCISES:
        module = library(exercise_id)
        assert len(module.WRONG) >= 3, exercise_id
        assert len(module.CORRECT) >= 2, exercise_id


@pytest.mark.parametrize("exercise_id, implementation, expected", _entries("wrong"))
def test_wrong_implementation_loses_points_with_its_diagnosis(exercise_id, implementation, expected):
    result = grade(EXERCISES[exercise_id], implementation)
    assert result.score < result.max_score
    assert result.status in ("partial", "failed")
    assert expected.lower() in result.feedback.lower(), result.feedback


@pytest.mark.parametrize("exercise_id, implementation, expected", _entries("correct"))
@pytest.mark.parametrize("seed", range(3))
def test_correct_alternative_gets_full_marks(exercise_id, implementation, expected, seed):
    result = grade(EXERCISES[exercise_id], implementation, seed)
    assert result.status == "passed", [c.feedback for c in result.cases if not c.passed]
    assert result.score == result.max_score


@pytest.mark.parametrize("exercise_id", EXERCISES)
@pytest.mark.parametrize("seed", SEEDS)
def test_solutions_get_full_marks(exercise_id, seed):
    result = grade(EXERCISES[exercise_id], seed=seed)
    assert (result.status, result.score) == ("passed", result.max_score), result.feedback


@pytest.mark.parametrize("exercise_id, diagnosis", [(ex.id, d) for ex in EXERCISES.values() for d in ex.bugs])
def test_every_known_bug_is_caught_and_named_by_its_own_cases(exercise_id, diagnosis):
    """Each known bug must show on some case and be the bug the judge names for itself."""
    exercise = EXERCISES[exercise_id]
    bug = exercise.bugs[diagnosis]
    for variant in bug if isinstance(bug, tuple) else (bug,):
        result = grade(exercise, variant)
        assert result.score < result.max_score
        assert result.feedback.startswith(diagnosis[:1].upper() + diagnosis[1:]), result.feedback


MOST_CASES = {"MultiHeadAttention": 15, "chunked_attention": 14}


def test_exercises_follow_the_contract():
    for exercise in EXERCISES.values():
        drawn = exercise.cases(np.random.default_rng(0))
        cases = [c for c in drawn if scoring.PROBE not in c.features]
        # MultiHeadAttention: each of the six parts a learner writes has cases that isolate it, and
        # one looks at the projections' types; chunked_attention: one more measures its memory.
        assert 5 <= len(cases) <= MOST_CASES.get(exercise.id, 12), exercise.id
        assert len({c.name for c in cases}) == len(cases), exercise.id  # names tell cases apart
        # An intervention copies a graded case with one named feature changed (and only that one).
        for probe in (c for c in drawn if scoring.PROBE in c.features):
            name, feature = probe.features[scoring.PROBE]
            copied = next(c for c in cases if c.name == name)
            differ = {k for k in copied.features if k not in scoring.summary.RESERVED
                      and copied.features[k] != probe.features[k]}
            assert differ == {feature}, (exercise.id, name, feature, differ)
        assert len(drawn) - len(cases) <= 2 * len(cases), exercise.id  # interventions at most double the cost
        assert all(p in judge.PROPERTIES for c in cases for p in c.properties)
        # Seeded: the same rng seed gives the same inputs.
        again = exercise.cases(np.random.default_rng(0))
        assert repr([c.inputs for c in drawn]) == repr([c.inputs for c in again])


# --- the judge's messages and statuses ---------------------------------------------------------

def _attention_case():
    return next(c for c in EXERCISES["scaled_dot_product_attention"].cases(np.random.default_rng(0))
                if c.name == "4-D (B, H, Lq, d_k), Lq < Lk, d_k != d_v, no mask")


def _expected(case):
    return judge.run_driver(case, reference.namespace())


def test_shape_mismatch_names_the_axes():
    case = _attention_case()
    got = dict(_expected(case))
    got["weights"] = np.swapaxes(got["weights"], -1, -2)
    message = plain(judge.check_case(case, got, _expected(case))[-1])
    assert message == ("weights has shape (2, 3, 5, 4) = (B, H, Lk, Lq), expected (2, 3, 4, 5) = "
                       "(B, H, Lq, Lk): axes swapped or transposed?")


def test_dtype_mismatch_is_named():
    case = next(c for c in EXERCISES["softmax"].cases(np.random.default_rng(0)) if "float32" in c.name)
    expected = _expected(case)
    got = {**expected, "out": expected["out"].astype(np.float64)}
    assert judge.check_case(case, got, expected) == ["the result is float64 for float32 inputs: keep the input's dtype"]


def test_nan_and_largest_error_are_located():
    case = _attention_case()
    expected = _expected(case)
    out = expected["out"].copy()
    out[1, 2, 3, 4] = np.nan
    assert "out has NaN at 1 of 168 entries, first at index (1, 2, 3, 4)" in judge.check_case(
        case, {**expected, "out": out}, expected)[-1]
    out = expected["out"].copy()
    out[0, 1, 2, 3] += 0.5
    message = plain(judge.check_case(case, {**expected, "out": out}, expected)[-1])  # values shown: the grader's view
    assert "the largest error is 0.5 at index (0, 1, 2, 3)" in message
    assert "rtol=1e-09, atol=1e-12" in message


def test_wrong_return_forms_are_described():
    case = _attention_case()
    expected = _expected(case)
    three = {"result_type": "tuple", "len": 3, "types": {}}
    assert list(map(plain, judge.check_case(case, three, expected))) == [
        "returned a tuple of 3 values, expected a tuple of 2 values (out, weights)"]
    assert list(map(plain, judge.check_case(case, {"result_type": "NoneType", "types": {}}, expected))) == [
        "returned None, expected a tuple of 2 values (out, weights)"]


def test_a_mutated_input_is_reported():
    case = _attention_case()
    expected = _expected(case)
    after = [a.copy() for a in case.inputs["args"]]
    after[1][0, 0, 0, 0] += 1
    message = judge.check_case(case, {**expected, "args_after": after}, expected)
    assert message == ["argument 2 was modified in place (exercises never modify their inputs)"]


def _case_errors(kinds):
    exercise = EXERCISES["causal_mask"]
    cases = exercise.cases(np.random.default_rng(0))
    outputs = [CaseError(k, f"{k} message") for k in kinds] + [_expected(c) for c in cases[len(kinds):]]
    return judge.judge_exercise(exercise, cases, outputs, ["a note"])


def test_statuses_from_case_errors():
    n = len(EXERCISES["causal_mask"].cases(np.random.default_rng(0)))
    assert _case_errors(["not_implemented"] * n).status == "not attempted"
    assert _case_errors(["missing"] * n).score == 0
    assert _case_errors(["timeout"]).status == "timed out"
    assert _case_errors(["import"] * n).status == "error"
    partial = _case_errors(["exception"])
    assert partial.status == "partial" and 0 < partial.score < partial.max_score
    assert plain(partial.cases[0].feedback) == "raised exception message"
    assert partial.notes == ["a note"]


def test_garbage_output_costs_the_case_not_the_grader():
    exercise = EXERCISES["softmax"]
    cases = exercise.cases(np.random.default_rng(0))
    outputs = [[1, 2], {"out": "text", "result_type": "ndarray"}, {"out": {"nested": object()}}] + [
        _expected(c) for c in cases[3:]]
    result = judge.judge_exercise(exercise, cases, outputs, [])
    assert [c.passed for c in result.cases[:3]] == [False] * 3
    assert all(c.passed for c in result.cases[3:])
    assert result.status == "partial"


def test_case_weights_are_normalised_to_the_points():
    exercise = EXERCISES["padding_mask"]
    result = grade(exercise)
    assert sum(c.max_score for c in result.cases) == pytest.approx(exercise.points)


def test_weights_of_custom_cases_share_the_points():
    exercise = EXERCISES["causal_mask"]
    cases = [Case("heavy", "call", {"function": "causal_mask", "args": [3], "kwargs": {}, "returns": ["out"]}, 3.0),
             Case("light", "call", {"function": "causal_mask", "args": [2], "kwargs": {}, "returns": ["out"]}, 1.0)]
    outputs = [CaseError("exception", "ValueError: x"), _expected(cases[1])]
    result = judge.judge_exercise(exercise, cases, outputs, [])
    assert result.score == pytest.approx(exercise.points / 4)


# --- end to end, through the isolation pipeline ------------------------------------------------

def test_a_submission_without_the_scale_gets_the_diagnosis_in_the_report(tmp_path):
    runner = pytest.importorskip("autograder.grading.runner")
    submission = edited_solutions(tmp_path, "attention", "/ math.sqrt(q.shape[-1])", "")
    report = runner.grade_submission(submission, exercises=["scaled_dot_product_attention", "softmax"])
    results = {r.id: r for r in report.exercises}
    assert results["softmax"].status == "passed"
    sdpa = results["scaled_dot_product_attention"]
    assert sdpa.status in ("partial", "failed")
    assert sdpa.feedback.startswith("Your output matches attention without the 1/sqrt(d_k) scale")


def test_an_in_place_change_of_a_layer_input_is_reported():
    reference_layer = reference.namespace().module("layer").MultiHeadAttention

    class ScalesQueryInPlace(reference_layer):
        def forward(self, query, key, value, mask=None, head_mask=None):
            query.mul_(1.0)  # harmless in value, but still an in-place write...
            key.add_(1.0)  # ...and this one changes the caller's tensor
            return super().forward(query, key, value, mask, head_mask)

    exercise = EXERCISES["MultiHeadAttention"]
    result = grade(exercise, ScalesQueryInPlace)
    forward = [c.name for c in exercise.cases(np.random.default_rng(0))
               if c.driver == "mha_forward" and "grad_out" not in c.inputs]
    assert len(forward) >= 5
    for case in result.cases:
        if case.name in forward:
            assert case.feedback == "argument 'key' was modified in place (exercises never modify their inputs)"


def test_layer_messages_name_the_parameter_and_the_gradient():
    reference_layer = reference.namespace().module("layer").MultiHeadAttention

    class IgnoresKdim(reference_layer):
        def __init__(self, embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0):
            super().__init__(embed_dim, num_heads, vdim=vdim, bias=bias, dropout=dropout)

    class DetachesValues(reference_layer):
        def forward(self, query, key, value, mask=None, head_mask=None):
            return super().forward(query, key, value.detach(), mask, head_mask)

    kdim = grade(EXERCISES["MultiHeadAttention"], IgnoresKdim)
    assert "the shape of your layer's W_k.weight is [18, 18], expected [18, 7]" in [
        plain(c.feedback) for c in kdim.cases if not c.passed][0]
    detached = grade(EXERCISES["MultiHeadAttention"], DetachesValues)
    assert [c.feedback for c in detached.cases if not c.passed] == [
        "no gradient reached value: is something detached on the way to the output "
        "(.detach(), .numpy(), torch.no_grad(), a new tensor)?"]


def test_from_torch_reference_matches_torch_itself():
    """The from_torch cases compare with the reference; the reference must equal torch's module."""
    import torch

    from autograder.isolation import drivers

    for case in EXERCISES["MultiHeadAttention"].cases(np.random.default_rng(0)):
        if case.driver != "mha_from_torch":
            continue
        expected = _expected(case)
        inputs, config = case.inputs, case.inputs["config"]
        torch_layer = torch.nn.MultiheadAttention(config["embed_dim"], config["num_heads"], bias=config["bias"],
                                                  kdim=config["kdim"], vdim=config["vdim"], batch_first=True,
                                                  dtype=torch.float64)
        torch_layer.load_state_dict({k: torch.from_numpy(v) for k, v in inputs["torch_state"].items()})
        q, k, v = (torch.from_numpy(inputs[n]) for n in ("query", "key", "value"))
        # torch's attn_mask: True means "may NOT attend", and it wants (B*H, Lq, Lk) or (Lq, Lk).
        allowed = np.ones((1, 1, 1), bool) if inputs["mask"] is None else inputs["mask"]
        mask = torch.from_numpy(np.broadcast_to(allowed, (q.shape[0], q.shape[1], k.shape[1])).copy())
        attn_mask = (~mask).repeat_interleave(config["num_heads"], dim=0)
        with torch.no_grad():
            out, weights = torch_layer(q, k, v, attn_mask=attn_mask, average_attn_weights=False)
        np.testing.assert_allclose(expected["out"], out.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(expected["weights"], weights.numpy(), rtol=1e-12, atol=1e-12)
        assert drivers.LINEARS == ("W_q", "W_k", "W_v", "W_o")


@pytest.mark.parametrize("change", ["in place", "replaced"])
def test_generate_that_changes_the_model_is_seen(change):
    """``generate`` must leave the model as it was: the driver sees a weight changed in place or
    swapped for another tensor, and the reference's run leaves it unchanged."""
    from autograder.isolation.drivers import generation
    from solutions.language_model import generate as reference_generate

    def changing(model, prompt, *args, **kwargs):
        if change == "in place":
            model.w["unembed"].mul_(2.0)
        else:
            model.w["embed"] = model.w["embed"].clone() + 1.0
        return reference_generate(model, prompt, *args, **kwargs)

    class Ns:
        def __init__(self, fn):
            self.fn = fn

        def module(self, name):
            return type("M", (), {"generate": staticmethod(self.fn)})

    case = next(c for c in EXERCISES["generate"].cases(np.random.default_rng(0))
                if c.name == "greedy, with the cache, B = 1")
    unchanged = "model parameters unchanged"
    assert generation.generate_run(Ns(reference_generate), **copy.deepcopy(case.inputs))[unchanged] is True
    assert generation.generate_run(Ns(changing), **copy.deepcopy(case.inputs))[unchanged] is False

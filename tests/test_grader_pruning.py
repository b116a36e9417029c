"""The chapter 6 grader: its harness matches the lab, it never loads reference code on the
learner's side, and it grades the solutions, known bugs and the stubs end to end.

(The generic checks, known bugs named by their own cases and the implementations in
``tests/wrong_implementations/``, run in ``tests/test_grader_checks.py``.)"""
import copy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from autograder.isolation.drivers import harness, pruning
from autograder.grading.exercises import EXERCISES
from lab import digits
from solutions.layer import MultiHeadAttention
from solution_copies import edited_solutions

ROOT = Path(__file__).resolve().parents[1]


def test_harness_model_equals_the_lab_model_on_the_committed_weights():
    state = torch.load(digits.WEIGHTS, weights_only=True)
    model = harness.harness_digits(digits.CONFIG)
    model.load_state_dict(state)  # strict: the same parameter names and shapes
    lab = digits.load_model(MultiHeadAttention)
    x = digits.load_split("val")[0][:64]
    mask = digits.mask_without([(0, 1), (3, 2)], lab.num_layers, lab.num_heads)
    with torch.no_grad():
        for head_mask in (None, mask):
            # The fused kernel and the explicit softmax round differently: float32 noise only.
            torch.testing.assert_close(model.eval()(x, head_mask), lab(x, head_mask), rtol=1e-5, atol=1e-5)


def test_harness_model_filled_from_a_state_is_the_loaded_model():
    """Built from a state (torch's random initialisation skipped), the model is the one
    load_state_dict gives, parameter for parameter; a state that does not fit is refused."""
    state = {k: v.numpy() for k, v in torch.load(digits.WEIGHTS, weights_only=True).items()}
    filled = harness.harness_digits(digits.CONFIG, state)
    loaded = harness.harness_digits(digits.CONFIG)
    loaded.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    assert list(filled.state_dict()) == list(loaded.state_dict())
    pairs = zip(filled.parameters(), loaded.parameters())
    assert all(torch.equal(a, b) and a.requires_grad for a, b in pairs)
    x = digits.load_split("val")[0][:4]
    assert torch.equal(filled(x), loaded(x))
    with pytest.raises(KeyError, match="misses \\['cls'\\]"):
        harness.harness_digits(digits.CONFIG, {k: v for k, v in state.items() if k != "cls"})
    with pytest.raises(ValueError, match="embed.weight"):
        harness.harness_digits(digits.CONFIG, {**state, "embed.weight": state["embed.bias"]})


def test_harness_attention_follows_the_contract():
    torch.manual_seed(0)
    reference = MultiHeadAttention(24, 6, kdim=10, vdim=14).double()
    layer = harness.HarnessAttention(24, 6, kdim=10, vdim=14).double()
    layer.load_state_dict(reference.state_dict())
    assert (layer.num_heads, layer.head_dim) == (6, 4)
    q, k, v = torch.randn(2, 3, 24).double(), torch.randn(2, 5, 10).double(), torch.randn(2, 5, 14).double()
    head_mask = torch.tensor([1, 0, 1, 1, 0, 1]).double()
    with torch.no_grad():
        torch.testing.assert_close(layer(q, k, v, head_mask=head_mask)[0],
                                   reference(q, k, v, head_mask=head_mask)[0], rtol=1e-12, atol=1e-12)


def test_the_learner_side_never_imports_reference_or_lab_code():
    """The drivers module, as the learner's process loads it, pulls in no solutions and no
    mha_exercises (the harness is self-contained; weights and data come as plain arrays)."""
    code = ("import sys, autograder.isolation.drivers as d; d.importance_run, d.prune_run; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('solutions', 'mha_exercises') "
            "or m.startswith('autograder.grading')]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_each_importance_case_is_cheap_and_plain():
    cases = EXERCISES["head_importance"].cases(np.random.default_rng(0))
    for case in cases:
        for key in ("x", "y"):
            assert type(case.inputs[key]) is np.ndarray
        assert all(type(v) is np.ndarray for v in case.inputs["state"].values())
    # The lab's weights are the committed ones, bit for bit.
    committed = torch.load(digits.WEIGHTS, weights_only=True)
    lab = next(c for c in cases if c.name.startswith("lab model (committed weights)"))
    assert all(np.array_equal(lab.inputs["state"][k], committed[k].numpy()) for k in committed)


@pytest.fixture(scope="module")
def runner():
    return pytest.importorskip("autograder.grading.runner")


def _submission(tmp_path, edit=None):
    return edited_solutions(tmp_path, "pruning", *edit) if edit else edited_solutions(tmp_path)


def test_solutions_get_full_marks_through_the_isolated_pipeline(tmp_path, runner):
    report = runner.grade_submission(_submission(tmp_path), exercises=["head_importance", "prune_heads"])
    for result in report.exercises:
        assert (result.status, result.score) == ("passed", result.max_score), result.feedback


@pytest.mark.parametrize("edit, exercise, diagnosis", [
    (("total += grad.abs() * len(y)", "total += grad * len(y)"), "head_importance",
     "Your scores match signed gradients"),
    (("_keep(layer.W_o, index, dim=1)", "_keep(layer.W_o, index, dim=0)"), "prune_heads",
     "Your layer matches W_o pruned by rows"),
    (("layer.num_heads = len(keep)\n", "\n"), "prune_heads", "Your layer matches num_heads not updated"),
])
def test_a_bug_is_diagnosed_through_the_isolated_pipeline(tmp_path, runner, edit, exercise, diagnosis):
    report = runner.grade_submission(_submission(tmp_path, edit), exercises=[exercise])
    (result,) = report.exercises
    assert result.status in ("partial", "failed") and result.score < result.max_score
    assert result.feedback.startswith(diagnosis), result.feedback


def test_the_stubs_are_not_attempted(runner):
    report = runner.grade_submission(ROOT / "mha_exercises", exercises=["head_importance", "prune_heads"])
    assert [r.status for r in report.exercises] == ["not attempted", "not attempted"]


def test_importance_is_graded_on_a_copy_the_learner_cannot_keep():
    """A learner's function gets a fresh model per case: changing it does not leak into the next case."""
    calls = []

    def mutating(model, batches, loss_fn, normalize=True, head_mask=None):
        calls.append(float(next(model.parameters()).detach().sum()))
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)
        return torch.zeros(model.num_layers, model.num_heads)

    class Ns:
        def module(self, name):
            return type("M", (), {"head_importance": staticmethod(mutating)})

    case = EXERCISES["head_importance"].cases(np.random.default_rng(0))[0]
    first = pruning.importance_run(Ns(), **copy.deepcopy(case.inputs))
    pruning.importance_run(Ns(), **case.inputs)
    assert calls[0] == calls[1]
    assert first["model parameters unchanged"] is False

"""Chapter 7's checks in the grader: the reference gets full marks, every known bug of
``chunked_attention``, ``repeat_kv``, ``GroupedQueryAttention`` and ``KVCache`` loses points with
its own diagnosis, the cases hit what they are named for, and the whole pipeline grades a
submission's ``efficient.py`` end to end."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from autograder.grading import judge, reference
from autograder.grading.exercises import EXERCISES
from autograder.grading.exercises import key_value as checks
from solution_copies import edited_solutions

CHAPTER_7 = ("chunked_attention", "repeat_kv", "GroupedQueryAttention", "KVCache")


def grade(exercise_id, implementation=None, seed=0):
    """Grade in-process, drivers run against the reference with ``implementation`` swapped in."""
    return judge.judge_in_process(EXERCISES[exercise_id], implementation, seed)


def test_chapter_5_and_7_exercises_are_graded():
    assert set(CHAPTER_7) | {"attention_entropy"} <= set(EXERCISES)


@pytest.mark.parametrize("exercise_id", CHAPTER_7)
@pytest.mark.parametrize("seed", range(3))
def test_solutions_get_full_marks(exercise_id, seed):
    result = grade(exercise_id, seed=seed)
    assert (result.status, result.score) == ("passed", result.max_score), result.feedback


@pytest.mark.parametrize("exercise_id, diagnosis, variant", [
    pytest.param(ex, d, v, id=f"{ex}-{getattr(v, '__name__', '?')}")
    for ex in CHAPTER_7 for d, bug in EXERCISES[ex].bugs.items()
    for v in (bug if isinstance(bug, tuple) else (bug,))])
def test_each_known_bug_loses_points_with_its_diagnosis(exercise_id, diagnosis, variant):
    result = grade(exercise_id, variant)
    assert result.score < result.max_score and result.status in ("partial", "failed")
    assert result.feedback.startswith(diagnosis[:1].upper() + diagnosis[1:]), result.feedback


def _case(exercise_id, words):
    cases = EXERCISES[exercise_id].cases(np.random.default_rng(0))
    return next(c for c in cases if words in c.name)


def test_the_unguarded_running_max_shows_as_nan_only_where_a_query_sees_no_key():
    """With the end-aligned mask and Lq <= Lk key 0 is visible to every query, so the first chunk
    is never fully masked; Lq > Lk is the case that shows -inf - -inf."""
    bug = EXERCISES["chunked_attention"].bugs
    unguarded = next(b for d, b in bug.items() if "-inf - -inf" in d)
    for case in EXERCISES["chunked_attention"].cases(np.random.default_rng(0)):
        with np.errstate(all="ignore"):
            out = judge.run_driver(case, reference.namespace({"chunked_attention": unguarded}))["out"]
        q_len, k_len = case.inputs["args"][0].shape[-2], case.inputs["args"][1].shape[-2]
        if case.inputs["kwargs"]["causal"] and q_len > k_len:
            assert np.isnan(out[..., : q_len - k_len, :]).all() and not np.isnan(out[..., q_len - k_len:, :]).any()
        else:
            assert not np.isnan(out).any(), case.name
    expected = judge.run_driver(_case("chunked_attention", "Lq 8 > Lk 5"), reference.namespace())["out"]
    assert (expected[..., :3, :] == 0).all()


def test_start_aligned_gqa_mask_only_shows_while_decoding():
    result = grade("GroupedQueryAttention", checks._gqa_bug("StartAligned", end_aligned=False))
    failing = {c.name for c in result.cases if not c.passed}
    assert failing and all(name.startswith("decoding") for name in failing)


def test_a_learner_cache_on_the_wrong_axis_is_named_in_the_case_feedback():
    result = grade("KVCache", checks._cache_bug("HeadAxis", axis=1))
    # Updates of equal lengths concatenate on any axis without an error: there the shapes show it.
    updates = next(c for c in result.cases if c.name.startswith("one position at a time"))
    assert "head axis" in updates.feedback and "shape" in updates.feedback, updates.feedback
    uneven = next(c for c in result.cases if c.name.startswith("a prompt of 6"))
    assert not uneven.passed and "RuntimeError" in uneven.feedback


# --- end to end, through the isolation pipeline ------------------------------------------------

def _submission(tmp_path, edit=None):
    return edited_solutions(tmp_path, "efficient", *edit) if edit else edited_solutions(tmp_path)


def test_pipeline_gives_the_reference_efficient_full_marks(tmp_path):
    runner = pytest.importorskip("autograder.grading.runner")
    report = runner.grade_submission(_submission(tmp_path), exercises=list(CHAPTER_7))
    assert {r.id: r.status for r in report.exercises} == dict.fromkeys(CHAPTER_7, "passed")


def test_pipeline_diagnoses_tiled_kv_heads(tmp_path):
    runner = pytest.importorskip("autograder.grading.runner")
    tiled = ("x = x[:, :, None].expand(batch, kv_heads, n_rep, length, d)",
             "x = x[:, None].expand(batch, n_rep, kv_heads, length, d)")
    report = runner.grade_submission(_submission(tmp_path, tiled), exercises=["repeat_kv", "KVCache"])
    results = {r.id: r for r in report.exercises}
    assert results["KVCache"].status == "passed"
    assert results["repeat_kv"].status in ("partial", "failed")
    assert results["repeat_kv"].feedback.startswith("Your heads are tiled")


def test_the_solutions_shown_in_chapter_7_get_full_marks():
    """The collapsed solutions of book/07_beyond.ipynb are graded like a learner's code."""
    import json
    import math
    import re

    import torch
    from torch import nn

    notebook = json.loads((Path(__file__).parents[1] / "book" / "07_beyond.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    blocks = re.findall(r"````\{solution\}.*?```python\n(.*?)```\n````", text, re.S)
    assert len(blocks) == 4
    shown = {"math": math, "torch": torch, "nn": nn}
    for block in blocks:
        exec(block, shown)
    for exercise_id in CHAPTER_7:
        result = grade(exercise_id, shown[exercise_id])
        assert result.status == "passed", (exercise_id, result.feedback)

"""Issue 32's messages, each a learner's code: a cause is stated only where changing it alone
changes the outcome (an intervention: the failing case's copy with one argument changed, run on
the learner's code), known bugs are named at the learner's precision, and a single misconception
costs only its requirement's points."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import torch

from autograder import scoring
from autograder.grading import judge
from autograder.grading.exercises import EXERCISES, layer_module
from solutions.layer import MultiHeadAttention as ReferenceLayer
from solutions.masking import causal_mask, masked_softmax

# --- chapter 8's learners ----------------------------------------------------------------------


def _angles(length, dim, offset, base, dtype=torch.float64):
    pos = torch.arange(offset, offset + length, dtype=dtype)[:, None]
    return pos * base ** (-torch.arange(0, dim, 2, dtype=dtype) / dim)  # (L, d/2)


def rope_in_place(x, offset=0, base=10000.0):
    """A learner's RoPE, right but written into x."""
    if x.shape[-1] % 2:
        raise ValueError("d must be even")
    a = _angles(x.shape[-2], x.shape[-1], offset, base)
    cos, sin = a.cos().to(x.dtype), a.sin().to(x.dtype)
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].clone(), x[..., half:].clone()
    x[..., :half] = x1 * cos - x2 * sin
    x[..., half:] = x2 * cos + x1 * sin
    return x


def rope_float32_angles(x, offset=0, base=10000.0):
    """Another course's RoPE: right, with its angles in float32 (that course's contract)."""
    if x.shape[-1] % 2:
        raise ValueError("d must be even")
    a = _angles(x.shape[-2], x.shape[-1], offset, base, dtype=torch.float32)
    emb = torch.cat([a, a], dim=-1)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * emb.cos().to(x.dtype) + rotated * emb.sin().to(x.dtype)


def rope_adjacent_float32(x, offset=0, base=10000.0):
    """RoFormer's convention (adjacent pairs) with its table in float32, as public code keeps it."""
    if x.shape[-1] % 2:
        raise ValueError("d must be even")
    inv = 1.0 / (base ** (torch.arange(0, x.shape[-1], 2).float() / x.shape[-1]))
    t = torch.arange(offset, offset + x.shape[-2]).float()
    freqs = torch.einsum("i,j->ij", t, inv)
    cos, sin = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


def rope_negative_angle_float32(x, offset=0, base=10000.0):
    """A rotation by -theta, float32 table."""
    if x.shape[-1] % 2:
        raise ValueError("d must be even")
    a = _angles(x.shape[-2], x.shape[-1], offset, base, dtype=torch.float32)
    cos, sin = a.cos().to(x.dtype), -a.sin().to(x.dtype)
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def rope_interleaved_angles_on_halves_float32(x, offset=0, base=10000.0):
    """Angles laid out for adjacent pairs (repeat_interleave) under a half-split rotation, float32 table."""
    if x.shape[-1] % 2:
        raise ValueError("d must be even")
    a = _angles(x.shape[-2], x.shape[-1], offset, base, dtype=torch.float32).repeat_interleave(2, dim=-1)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * a.cos().to(x.dtype) + rotated * a.sin().to(x.dtype)


def generate_batch_of_one(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    """Right for B = 1 only: the argmax is taken over the flattened (B, V) logits."""
    tokens = prompt
    caches = model.new_caches() if use_cache else None
    logits = model(tokens, caches=caches)
    for step in range(max_new_tokens):
        last = logits[:, -1, :]
        if temperature == 0:
            next_token = last.argmax().view(1, 1).expand(prompt.shape[0], 1)
        else:
            next_token = torch.multinomial(torch.softmax(last / temperature, dim=-1), 1, generator=generator)
        tokens = torch.cat([tokens, next_token], dim=1)
        if step + 1 < max_new_tokens:
            logits = model(next_token, caches=caches) if use_cache else model(tokens)
    return tokens


def generate_divides_probabilities(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    """The temperature divides the probabilities, not the logits: sampling is at temperature 1."""
    tokens = prompt
    caches = model.new_caches() if use_cache else None
    logits = model(tokens, caches=caches)
    for step in range(max_new_tokens):
        last = logits[:, -1, :]
        if temperature == 0:
            next_token = last.argmax(dim=-1, keepdim=True)
        else:
            next_token = torch.multinomial(torch.softmax(last, dim=-1) / temperature, 1, generator=generator)
        tokens = torch.cat([tokens, next_token], dim=1)
        if step + 1 < max_new_tokens:
            logits = model(next_token, caches=caches) if use_cache else model(tokens)
    return tokens


def induction_in_place(weights, period):
    """Right, but it zeroes the weights it has read."""
    length = weights.shape[-1]
    if not 1 <= period < length:
        raise ValueError("period out of range")
    queries = torch.arange(period, length)
    score = weights[..., queries, queries - period + 1].mean(dim=-1)
    weights.zero_()
    return score


def sinusoidal_exponent_per_feature(length, dim, offset=0, base=10000.0):
    """A tutorial's table: div = base ** (2 * arange(dim) / dim), one exponent per feature."""
    if dim % 2:
        raise ValueError("dim must be even")
    pos = torch.arange(offset, offset + length, dtype=torch.float32)[:, None]
    div = base ** (2 * torch.arange(dim, dtype=torch.float32) / dim)
    pe = torch.zeros(length, dim)
    pe[:, 0::2] = torch.sin(pos / div[0::2])
    pe[:, 1::2] = torch.cos(pos / div[1::2])
    return pe


def sinusoidal_doubled_exponent(length, dim, offset=0, base=10000.0):
    if dim % 2:
        raise ValueError("dim must be even")
    pos = torch.arange(offset, offset + length, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * 2 * (-np.log(base) / dim))
    pe = torch.zeros(length, dim)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe


def sinusoidal_base_1000(length, dim, offset=0, base=1000.0):
    if dim % 2:
        raise ValueError("dim must be even")
    pos = torch.arange(offset, offset + length, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-np.log(base) / dim))
    pe = torch.zeros(length, dim)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe


def sinusoidal_by_row(length, dim, offset=0, base=10000.0):
    """Sines and cosines chosen by the row (the position) instead of the column."""
    if dim % 2:
        raise ValueError("dim must be even")
    pos = torch.arange(offset, offset + length, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-np.log(base) / dim))
    angles = (pos * div).repeat_interleave(2, dim=-1)
    pe = torch.cos(angles)
    pe[0::2] = torch.sin(angles[0::2])
    return pe


# --- chapter 1's learners ----------------------------------------------------------------------

def attention_causal_by_default(q, k, v, mask=None):
    """A decoder's habit: a causal mask applied where none is given."""
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    weights = masked_softmax(scores, causal_mask(q.shape[-2], k.shape[-2]) if mask is None else mask)
    return weights @ v, weights


def softmax_minus_sum(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e - np.sum(e, axis=axis, keepdims=True)


def _graded(exercise_id, implementation):
    result = judge.judge_in_process(EXERCISES[exercise_id], implementation)
    assert result.score < result.max_score, (exercise_id, result.feedback)
    return result


def _diagnoses(result) -> set:
    return {r.diagnosis for r in result.cases if r.diagnosis}


# --- the messages of the issue, gone; the true cause named ------------------------------------

def test_a_case_that_must_raise_is_never_the_passing_side():
    """'Correct on an odd d; fails on d even' for RoPE written into x; 'period L' for the induction score."""
    for exercise_id, implementation in (("apply_rope", rope_in_place), ("induction_score", induction_in_place)):
        result = _graded(exercise_id, implementation)
        assert not re.search(r"(changed to|passing one has) (an odd d|period L\b)", result.feedback), result.feedback
        assert "modified in place" in result.feedback, result.feedback


def test_zero_new_tokens_is_never_the_passing_side_and_b_1_is_blamed_by_intervention():
    result = _graded("generate", generate_batch_of_one)
    assert "zero new tokens" not in result.feedback.split("By part")[0].replace("with max_new_tokens = 0", ""), \
        result.feedback
    assert re.search(r"'[^']+' fails with B > 1 and passes with its batch alone changed to B = 1", result.feedback), \
        result.feedback


def test_a_temperature_on_the_probabilities_is_not_told_to_fix_its_cache():
    result = _graded("generate", generate_divides_probabilities)
    assert not re.search(r"fails on with(out)? the cache|caches = model|the whole sequence", result.feedback), \
        result.feedback
    # Named by the generated catalogue now (the reference at temperature 1 matches the tokens).
    assert "at temperature 1 whatever the temperature" in result.feedback, result.feedback


def test_rope_conventions_with_float32_tables_are_named():
    bugs = EXERCISES["apply_rope"].bugs
    adjacent = next(d for d in bugs if d.startswith("your rotation pairs adjacent features"))
    reversed_ = next(d for d in bugs if d.startswith("your rotation turns the wrong way"))
    assert adjacent in _diagnoses(_graded("apply_rope", rope_adjacent_float32))
    assert reversed_ in _diagnoses(_graded("apply_rope", rope_negative_angle_float32))
    mixed = next(d for d in bugs if d.startswith("your angles are laid out for adjacent pairs"))
    assert mixed in _diagnoses(_graded("apply_rope", rope_interleaved_angles_on_halves_float32))


def test_float32_angles_cost_only_the_precision_requirement():
    """At most 1 of apply_rope's 3 points, the precision sentence only on the case where the angles
    are far enough to show it, with the error measured there."""
    result = _graded("apply_rope", rope_float32_angles)
    assert result.score >= result.max_score - 1.0, result.score
    failing = [r for r in result.cases if not r.passed]
    assert [r.name for r in failing] == ["one position at 2500 to 3499, float64"], [r.name for r in failing]
    assert "float32" in failing[0].feedback
    assert re.search(r"max(imum)? (abs(olute)? )?(error|difference)|differs", failing[0].feedback), failing[0].feedback


def test_sinusoidal_conventions_are_recognised_by_what_they_do():
    bugs = EXERCISES["sinusoidal_positions"].bugs
    for implementation, start in ((sinusoidal_exponent_per_feature, "your frequencies take an exponent per feature"),
                                  (sinusoidal_doubled_exponent, "your frequencies use the exponent 4i/dim"),
                                  (sinusoidal_base_1000, "your frequencies use base 1000"),
                                  (sinusoidal_by_row, "your rows alternate sines and cosines")):
        wanted = next(d for d in bugs if d.startswith(start))
        assert wanted in _diagnoses(_graded("sinusoidal_positions", implementation)), implementation.__name__


def test_other_semantics_are_tried_as_hypotheses():
    attention = _graded("scaled_dot_product_attention", attention_causal_by_default)
    assert any("causal mask where none is given" in d for d in _diagnoses(attention)), attention.feedback
    softmax = _graded("softmax", softmax_minus_sum)
    assert any("subtracted from exp instead of dividing" in d for d in _diagnoses(softmax)), softmax.feedback


def rope_short_table(x, offset=0, base=10000.0):
    """Right, from a table of 128 positions: offsets past it raise."""
    if x.shape[-1] % 2:
        raise ValueError("d must be even")
    a = _angles(128, x.shape[-1], 0, base)[offset:offset + x.shape[-2]]
    if a.shape[0] < x.shape[-2]:
        raise IndexError(f"position {offset + x.shape[-2] - 1} is past the table of 128")
    emb = torch.cat([a, a], dim=-1)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * emb.cos().to(x.dtype) + rotated * emb.sin().to(x.dtype)


def test_an_offset_is_blamed_on_the_range_that_fails():
    """'with an offset under 100 it raises' for code whose fault is the end of its range."""
    result = _graded("apply_rope", rope_short_table)
    assert [r.name for r in result.cases if not r.passed] == ["one position at 2500 to 3499, float64"]
    assert "fails with an offset in the thousands and passes with its offset alone changed" in result.feedback, \
        result.feedback
    assert "an offset under 100" not in result.feedback, result.feedback
    # In process the IndexError names no line of the learner's: an observation, with no hint.
    assert "any table of positions reaches offset + L" not in result.feedback, result.feedback


def test_interventions_earn_nothing_and_are_not_reported():
    cases = judge.in_process_cases(EXERCISES["apply_rope"])
    result = judge.judge_in_process(EXERCISES["apply_rope"])
    graded = [c for c in cases if scoring.PROBE not in c.features]
    assert len(cases) > len(graded) and [r.name for r in result.cases] == [c.name for c in graded]
    assert result.score == result.max_score


def test_a_wrong_head_mask_is_not_counted_against_the_masks():
    """'masks: 1 of 4 cases fail' for a layer whose masks are right and whose head_mask is wrong."""
    exercise = dataclasses.replace(EXERCISES["MultiHeadAttention"], bugs={})
    result = judge.judge_in_process(exercise, layer_module.HeadMaskAfterProjection)
    assert "masks passes" in result.feedback and "head_mask: 2 of 2 cases fail" in result.feedback, result.feedback
    assert re.search(r"fails with a head_mask.*? and passes with its [\w ]+ alone changed to no head_mask|differ only in "
                     r"the [\w ]+: a head_mask where the passing one has no head_mask", result.feedback), result.feedback


class KeysWithWq(ReferenceLayer):
    """A learner's layer that projects the keys with W_q (a crash where kdim != E)."""

    def forward(self, query, key, value, mask=None, head_mask=None):
        W_k, self.W_k = self.W_k, self.W_q
        try:
            return super().forward(query, key, value, mask, head_mask)
        finally:
            self.W_k = W_k


def test_keys_projected_with_w_q_are_named_not_only_crashed():
    result = _graded("MultiHeadAttention", KeysWithWq)
    assert any(d.startswith("your layer projects the keys with W_q") for d in _diagnoses(result)), result.feedback
